"""The ScriptedLLM stand-in itself, through the real openai client: streaming, models, responder, recording."""

from __future__ import annotations

import json
import threading
import urllib.request
from typing import Any

import openai
import pytest

from tests.fakes.llm import MODEL, ScriptedLLM


def client(scripted: ScriptedLLM, max_retries: int = 0) -> openai.OpenAI:
    return openai.OpenAI(base_url=scripted.base_url, api_key="test", max_retries=max_retries)


def test_streamed_reply_with_tool_calls_reassembles_in_the_sdk(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {
            "content": "Checking the metrics of order first.",
            "tool_calls": [{"name": "query_metrics", "arguments": {"service": "order"}}],
        }
    )
    stream = client(scripted_llm).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "q"}], stream=True, stream_options={"include_usage": True}
    )
    text, arguments, finish, usage = "", "", None, None
    for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            arguments += "".join(c.function.arguments or "" for c in choice.delta.tool_calls or [] if c.function)
            finish = choice.finish_reason or finish
    assert text == "Checking the metrics of order first."
    assert json.loads(arguments) == {"service": "order"}
    assert finish == "tool_calls" and usage is not None and usage.prompt_tokens > 0


def test_models_endpoint_lists_the_scripted_model(scripted_llm: ScriptedLLM) -> None:
    assert [m.id for m in client(scripted_llm).models.list()] == [MODEL]


def test_responder_serves_concurrent_requests(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.responder = lambda body: {"content": f"echo {body['messages'][-1]['content']}"}
    answers: dict[int, str] = {}

    def ask(n: int) -> None:
        reply = client(scripted_llm).chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": str(n)}]
        )
        answers[n] = reply.choices[0].message.content or ""

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == {n: f"echo {n}" for n in range(8)}
    assert len(scripted_llm.chat_requests) == 8


def test_requests_are_recorded_with_body_and_headers(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"content": "ok"})
    client(scripted_llm).chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "q"}], stop=["X"])
    request = scripted_llm.chat_requests[0]
    assert request.body["stop"] == ["X"] and request.messages == [{"role": "user", "content": "q"}]
    assert request.headers["authorization"] == "Bearer test" and request.retry_count == 0


def test_injected_errors_carry_their_headers_and_retry_fast(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"status": 429, "headers": {"x-ratelimit-remaining-requests": "0"}}, {"content": "ok"})
    reply = client(scripted_llm, max_retries=1).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "q"}]
    )
    assert reply.choices[0].message.content == "ok"
    assert [r.retry_count for r in scripted_llm.chat_requests] == [0, 1]


def test_reply_without_usage_omits_it(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"content": "ok", "usage": None})
    reply = client(scripted_llm).chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "q"}])
    assert reply.usage is None


def test_control_endpoint_scripts_from_another_process(scripted_llm: ScriptedLLM) -> None:
    root = scripted_llm.base_url.removesuffix("/v1")
    body = json.dumps({"steps": [{"content": "from outside"}]}).encode()
    with urllib.request.urlopen(urllib.request.Request(f"{root}/_control/script", body, method="POST")) as response:
        assert json.load(response)["remaining"] == 1
    reply = client(scripted_llm).chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "q"}])
    assert reply.choices[0].message.content == "from outside"


def test_exhausted_script_is_a_loud_500(scripted_llm: ScriptedLLM) -> None:
    with pytest.raises(openai.InternalServerError, match="script exhausted"):
        client(scripted_llm, max_retries=2).chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "q"}]
        )
    assert len(scripted_llm.chat_requests) == 1


def test_unanswered_tool_call_id_gets_400(scripted_llm: ScriptedLLM) -> None:
    messages: list[Any] = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "done"},
    ]
    with pytest.raises(openai.BadRequestError, match="did not have response messages: b"):
        client(scripted_llm).chat.completions.create(model=MODEL, messages=messages)
