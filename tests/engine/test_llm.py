"""The OpenAI adapter against the ScriptedLLM: retries, errors, usage, roles, and an LLM that stays down."""

from __future__ import annotations

from typing import Any

import pytest

from bot import wiring
from bot.config import Settings
from bot.engine.llm import LLMUnavailable, OpenAILLM
from bot.engine.loop import run_agent
from bot.engine.tokens import count_message_tokens, count_tokens
from bot.engine.types import Budget, Question, StopReason
from tests.engine.engine_tools import engine_toolbox
from tests.fakes.llm import MODEL, ScriptedLLM, llm_settings, scripted_openai_llm

MESSAGES = [{"role": "user", "content": "Is order healthy?"}]


def test_server_errors_are_retried_by_the_sdk(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"status": 500, "repeat": 2}, {"content": "healthy"})
    reply = scripted_openai_llm(scripted_llm, max_retries=2).complete(MESSAGES)

    assert reply.content == "healthy"
    assert [r.retry_count for r in scripted_llm.chat_requests] == [0, 1, 2]


def test_rate_limit_is_retried(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"status": 429, "headers": {"retry-after-ms": "5"}}, {"content": "ok"})
    assert scripted_openai_llm(scripted_llm, max_retries=1).complete(MESSAGES).content == "ok"
    assert len(scripted_llm.chat_requests) == 2


def test_llm_that_stays_down_raises_unavailable_with_the_backend_text(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"status": 503, "message": "upstream overloaded", "repeat": 3})
    with pytest.raises(LLMUnavailable, match="HTTP 503: upstream overloaded"):
        scripted_openai_llm(scripted_llm, max_retries=2).complete(MESSAGES)
    assert len(scripted_llm.chat_requests) == 3


def test_slow_reply_times_out_as_unavailable(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"content": "late", "delay_s": 1.0})
    llm = scripted_openai_llm(scripted_llm, max_retries=0, timeout_s=0.2)
    with pytest.raises(LLMUnavailable, match="Timeout"):
        llm.complete(MESSAGES)


def test_unanswered_tool_call_id_is_rejected_like_a_real_server(scripted_llm: ScriptedLLM) -> None:
    messages: list[dict[str, Any]] = [
        *MESSAGES,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_x", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        },
    ]
    with pytest.raises(LLMUnavailable, match=r"HTTP 400.*call_x"):
        scripted_openai_llm(scripted_llm).complete(messages)


def test_llm_down_the_user_still_gets_an_answer_saying_so(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {
            "content": "Metrics.",
            "tool_calls": [{"name": "query_metrics", "arguments": {"service": "order", "metric": "p99_latency"}}],
        },
        {"status": 500, "repeat": 3},
    )
    llm = scripted_openai_llm(scripted_llm, max_retries=2)
    trace = run_agent(Question("Why is order slow?"), llm, engine_toolbox(), Budget())

    assert trace.stop_reason is StopReason.LLM_UNAVAILABLE and not trace.complete
    assert trace.answer.startswith("Partial answer")
    assert "The LLM was unavailable" in trace.answer
    assert "change: 15:05 212 ms -> 1,180 ms (x5.6)" in trace.answer  # what the tools showed is kept
    assert [r.retry_count for r in scripted_llm.chat_requests[1:]] == [0, 1, 2]  # retried, then given up
    assert len(scripted_llm.chat_requests) == 4  # no extra conclusion call against a dead endpoint
    attempts, unavailable = trace.notes[:3], trace.notes[3]  # a note per failed attempt, then the outcome
    expected = [f"LLM attempt {i} failed: HTTP 500 (server_error)" for i in (1, 2, 3)]
    assert [n.split(";")[0] for n in attempts] == expected
    assert unavailable.startswith("LLM unavailable at call 2")


def test_llm_down_from_the_start_still_answers(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"status": 500, "repeat": 2})
    trace = run_agent(Question("Why is order slow?"), scripted_openai_llm(scripted_llm), engine_toolbox(), Budget())

    assert trace.stop_reason is StopReason.LLM_UNAVAILABLE
    assert "The LLM was unavailable" in trace.answer and "No tool had run yet" in trace.answer


def test_usage_comes_from_the_api_when_given(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"content": "ok", "usage": {"prompt_tokens": 1234, "completion_tokens": 56}})
    reply = scripted_openai_llm(scripted_llm).complete(MESSAGES)
    assert (reply.prompt_tokens, reply.completion_tokens) == (1234, 56)


def test_usage_is_counted_offline_when_the_server_sends_none(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"content": "order is healthy", "usage": None})
    reply = scripted_openai_llm(scripted_llm).complete(MESSAGES)
    assert reply.prompt_tokens == count_message_tokens(MESSAGES)
    assert reply.completion_tokens == count_tokens("order is healthy") > 0


def test_roles_pick_their_models_and_stop_sequences_are_sent(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"content": "a"}, {"content": "b"})
    llm = OpenAILLM(base_url=scripted_llm.base_url, api_key="test", model="big", cheap_model="small", max_retries=0)
    llm.complete(MESSAGES, stop=["\nObservation:"])
    llm.complete(MESSAGES, role="cheap", max_tokens=50)

    first, second = scripted_llm.chat_requests
    assert first.body["model"] == "big" and first.body["stop"] == ["\nObservation:"]
    assert second.body["model"] == "small" and second.body["max_tokens"] == 50
    assert first.headers["authorization"] == "Bearer test"


def test_tool_call_arguments_are_parsed_leniently(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"content": "", "tool_calls": [{"name": "f", "arguments": "{'service': 'order',}"}]})
    tools = [{"type": "function", "function": {"name": "f"}}]
    reply = scripted_openai_llm(scripted_llm).complete(MESSAGES, tools=tools)
    assert reply.tool_calls[0].args == {"service": "order"}
    assert reply.tool_calls[0].call_id.startswith("call_")
    assert reply.finish_reason == "tool_calls"


def test_exhausted_script_fails_loudly(scripted_llm: ScriptedLLM) -> None:
    with pytest.raises(LLMUnavailable, match="script exhausted"):
        scripted_openai_llm(scripted_llm, max_retries=2).complete(MESSAGES)
    assert len(scripted_llm.chat_requests) == 1  # x-should-retry: false


def test_build_llm_is_none_without_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPSBOT_LLM__API_KEY", "OPSBOT_LLM__BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    assert wiring.build_llm(Settings(_env_file=None)) is None  # type: ignore[call-arg]


def test_build_llm_from_settings_talks_to_the_endpoint(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"content": "pong"})
    llm = wiring.build_llm(llm_settings(scripted_llm))
    assert llm is not None and llm.model == MODEL
    assert llm.complete(MESSAGES).content == "pong"


def test_build_context_limits_reads_agent_settings() -> None:
    settings = Settings(_env_file=None, agent={"max_observation_chars": 900, "keep_recent_steps": 2})  # type: ignore[call-arg, arg-type]
    limits = wiring.build_context_limits(settings)
    assert (limits.max_observation_chars, limits.keep_recent_steps) == (900, 2)
