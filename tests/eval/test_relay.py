"""The file relay: opsbot's model calls land as files in a folder, and a reply file written there is the answer."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import openai
import pytest

from bot.config import Settings
from bot.eval.relay import FileRelay, RelayError, completion_from_reply
from bot.wiring.sandbox import relay_overrides

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "query_metrics",
            "description": "One metric of one service.",
            "parameters": {"type": "object", "properties": {"service": {"type": "string"}}, "required": ["service"]},
        },
    }
]


@pytest.fixture
def relay(tmp_path: Path) -> Iterator[tuple[FileRelay, openai.OpenAI]]:
    relay = FileRelay(tmp_path / "relay", wait_s=20, poll_s=0.05)
    client = openai.OpenAI(base_url=relay.start(), api_key="relay", max_retries=0, timeout=30)
    yield relay, client
    relay.stop()


def reply_when_asked(folder: Path, number: int, write: Callable[[Path], None]) -> threading.Thread:
    """A reasoner at the edge: waits for request `number`, then writes its reply as the folder's README asks."""

    def run() -> None:
        request = folder / f"{number:04d}.request.md"
        for _ in range(400):
            if request.exists():
                break
            time.sleep(0.05)
        write(folder / f"{number:04d}")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _write(stem: Path, text: str) -> None:
    tmp = stem.with_suffix(".reply.json.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.rename(stem.with_suffix(".reply.json"))


def test_a_tool_call_goes_out_as_a_file_and_comes_back_on_the_wire(relay: tuple[FileRelay, openai.OpenAI]) -> None:
    server, client = relay
    server.begin_case(1, "Why is checkout slow?")
    reply = {
        "content": "Thought: read p99 first",
        "tool_calls": [{"name": "query_metrics", "arguments": {"service": "checkout"}}],
    }
    thread = reply_when_asked(server.folder, 1, lambda stem: _write(stem, json.dumps(reply)))
    messages = [{"role": "system", "content": "You diagnose."}, {"role": "user", "content": "Why is checkout slow?"}]
    response = client.chat.completions.create(model="relay", messages=messages, tools=TOOLS)  # type: ignore[arg-type]
    thread.join()

    call = response.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert (call.function.name, json.loads(call.function.arguments)) == ("query_metrics", {"service": "checkout"})  # type: ignore[union-attr]
    assert response.choices[0].finish_reason == "tool_calls"
    sent = json.loads((server.folder / "0001.request.json").read_text())
    assert sent["case"] == "case-01" and sent["body"]["messages"] == messages
    rendered = (server.folder / "0001.request.md").read_text()
    assert "**query_metrics**: One metric of one service." in rendered and "## Message 2: user" in rendered
    assert "Why is checkout slow?" in (server.folder / "case-01.md").read_text()
    assert "NNNN.reply.json" in (server.folder / "README.md").read_text()


def test_an_unreadable_reply_is_set_aside_with_its_reason_and_the_next_one_answers(
    relay: tuple[FileRelay, openai.OpenAI],
) -> None:
    server, client = relay

    def write_bad_then_good(stem: Path) -> None:
        _write(stem, "Thought: no JSON here")
        for _ in range(400):
            if stem.with_suffix(".error.txt").exists():
                break
            time.sleep(0.05)
        _write(stem, json.dumps({"content": "Final Answer: the pool"}))

    thread = reply_when_asked(server.folder, 1, write_bad_then_good)
    response = client.chat.completions.create(model="relay", messages=[{"role": "user", "content": "why?"}])
    thread.join()

    assert response.choices[0].message.content == "Final Answer: the pool"
    assert response.choices[0].finish_reason == "stop"
    assert (server.folder / "0001.reply.bad").read_text() == "Thought: no JSON here"
    assert "Expecting value" in (server.folder / "0001.error.txt").read_text()


def test_no_reply_in_time_is_a_clear_gateway_timeout(tmp_path: Path) -> None:
    server = FileRelay(tmp_path / "relay", wait_s=0.3, poll_s=0.05)
    client = openai.OpenAI(base_url=server.start(), api_key="relay", max_retries=0, timeout=10)
    try:
        with pytest.raises(openai.APIStatusError) as raised:
            client.chat.completions.create(model="relay", messages=[{"role": "user", "content": "why?"}])
    finally:
        server.stop()
    assert raised.value.status_code == 504
    assert "no reply to 0001 within 0 s" in str(raised.value)
    assert (tmp_path / "relay" / "DONE").exists()


def test_numbers_continue_after_a_restart_so_no_transcript_is_overwritten(tmp_path: Path) -> None:
    folder = tmp_path / "relay"
    folder.mkdir()
    (folder / "0007.request.json").write_text("{}")
    server = FileRelay(folder, wait_s=0.2, poll_s=0.05)
    client = openai.OpenAI(base_url=server.start(), api_key="relay", max_retries=0, timeout=10)
    try:
        with pytest.raises(openai.APIStatusError):
            client.chat.completions.create(model="relay", messages=[{"role": "user", "content": "again"}])
    finally:
        server.stop()
    assert (folder / "0008.request.json").exists()
    assert (folder / "0007.request.json").read_text() == "{}"


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ({"content": 3}, '"content" must be a string'),
        ({"content": "", "tool_calls": {"name": "x"}}, '"tool_calls" must be a list'),
        ({"content": "", "tool_calls": [{"arguments": {}}]}, 'needs a "name"'),
        ({"content": "", "tool_calls": [{"name": "x", "arguments": 5}]}, 'the "arguments" of x'),
    ],
)
def test_a_malformed_reply_names_what_to_fix(reply: dict[str, object], problem: str) -> None:
    with pytest.raises(RelayError, match=problem):
        completion_from_reply(reply, "relay")


def test_the_relay_run_waits_for_the_reasoner_and_keeps_the_other_gates() -> None:
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    relay_settings = relay_overrides(settings, "http://127.0.0.1:9/v1", 600)
    assert relay_settings.llm.base_url == "http://127.0.0.1:9/v1"
    assert relay_settings.llm.max_retries == 0 and relay_settings.llm.timeout_s >= 600
    assert relay_settings.agent.time_budget_s >= 600 * relay_settings.agent.max_steps
    assert relay_settings.agent.max_steps == settings.agent.max_steps
    assert relay_settings.agent.token_budget == settings.agent.token_budget
