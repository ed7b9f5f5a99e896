"""LLM faults handled the way the openai SDK intends, inside the run's deadline: each fault against the ScriptedLLM.

The runs use the shipped defaults (60 s per request, 2 retries, a 90 s run) through wiring, so what is tested is
what an operator gets. Every failed attempt is counted in opsbot_llm_errors_total and noted in the trace.
"""

from __future__ import annotations

import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from openai import _constants as sdk_constants

from bot import wiring
from bot.config import Settings
from bot.engine import attempts
from bot.engine.llm import LLMUnavailable, OpenAILLM
from bot.engine.types import Question, StopReason, Trace
from bot.http.telemetry import Telemetry
from tests.fakes.backends import free_port
from tests.fakes.llm import MODEL, Reply, ScriptedLLM, llm_settings, scripted_openai_llm
from tests.toolresults import result, series
from tools.base import Toolbox, ToolResult, tool

QUESTION = Question("why is order slow since 15:05?")
MESSAGES = [{"role": "user", "content": "Is order healthy?"}]
CALL: Reply = {"content": "", "tool_calls": [{"name": "p99_ms", "arguments": {"service": "order"}}]}
FINAL: Reply = {"content": "order p99 rose from 212 ms to 1,180 ms at 15:05."}
PLAYBOOK = "no model involved"


def p99_ms(service: str) -> ToolResult:
    """Current p99 latency of a service in ms."""
    return result(series(service))  # change: 15:05 212 ms -> 1,180 ms (x5.6)


def diagnose(scripted_llm: ScriptedLLM, *replies: Reply, time_budget_s: float = 90.0) -> tuple[Trace, Telemetry]:
    """One diagnosis through wiring with the default LLM settings; the ScriptedLLM answers `replies`."""
    telemetry = Telemetry()
    settings = llm_settings(scripted_llm, max_retries=2, timeout_s=60.0)
    settings = settings.model_copy(update={"agent": settings.agent.model_copy(update={"time_budget_s": time_budget_s})})
    llm = wiring.build_llm(settings, on_error=telemetry.observe_llm_error)
    responder = telemetry.instrument(wiring.build_responder(settings, llm=llm, tools=Toolbox([tool(p99_ms)])))
    scripted_llm.script(*replies)
    return responder(QUESTION, None), telemetry


def errors(telemetry: Telemetry) -> dict[str, float]:
    """opsbot_llm_errors_total by kind, as /metrics shows it."""
    family = next(m for m in telemetry.registry.collect() if m.name == "opsbot_llm_errors")
    return {s.labels["kind"]: s.value for s in family.samples if s.name.endswith("_total")}


def attempt_notes(trace: Trace) -> list[str]:
    return [n for n in trace.notes if n.startswith("LLM attempt")]


def test_a_rate_limit_at_the_first_call_is_retried_and_the_model_finishes(scripted_llm: ScriptedLLM) -> None:
    trace, telemetry = diagnose(scripted_llm, {"status": 429, "headers": {"retry-after": "1"}}, CALL, FINAL)
    assert trace.complete and trace.stop_reason is StopReason.FINISH and PLAYBOOK not in trace.answer
    assert [r.retry_count for r in scripted_llm.chat_requests] == [0, 1, 0]  # before: 1 request, then the playbook
    [note] = attempt_notes(trace)
    assert re.fullmatch(r"LLM attempt 1 failed: HTTP 429 \(rate_limited\); retried after [1-9]\.\d s", note)  # waited
    assert errors(telemetry) == {"rate_limited": 1.0}


def test_a_server_error_mid_run_is_retried_and_the_run_finishes(scripted_llm: ScriptedLLM) -> None:
    trace, telemetry = diagnose(scripted_llm, CALL, {"status": 500}, FINAL)
    assert trace.complete and trace.stop_reason is StopReason.FINISH  # before: "partial: the LLM was unavailable"
    assert [r.retry_count for r in scripted_llm.chat_requests] == [0, 0, 1]
    assert [n.split(";")[0] for n in attempt_notes(trace)] == ["LLM attempt 1 failed: HTTP 500 (server_error)"]
    assert errors(telemetry) == {"server_error": 1.0}


def test_an_llm_that_stays_down_gets_the_sdks_three_attempts_then_the_playbook(scripted_llm: ScriptedLLM) -> None:
    trace, telemetry = diagnose(scripted_llm, {"status": 503, "repeat": 3})
    assert len(scripted_llm.chat_requests) == 3 and PLAYBOOK in trace.answer  # labelled: no model involved
    notes = attempt_notes(trace)
    assert [n.split("; ")[1].split(" after")[0] for n in notes] == [
        "retried",
        "retried",
        "no retries left (max_retries 2)",
    ]
    assert errors(telemetry) == {"server_error": 3.0}


@pytest.mark.parametrize(("header", "value"), [("retry-after", "30"), ("retry-after-ms", "30000")])
def test_a_retry_after_longer_than_the_time_left_is_not_waited_for(
    scripted_llm: ScriptedLLM, header: str, value: str
) -> None:
    trace, telemetry = diagnose(scripted_llm, {"status": 429, "headers": {header: value}}, time_budget_s=10.0)
    assert len(scripted_llm.chat_requests) == 1 and PLAYBOOK in trace.answer  # failed at once, labelled
    [note] = attempt_notes(trace)
    assert note.startswith("LLM attempt 1 failed: HTTP 429 (rate_limited); not retried: the server asked for a 30.0 s")
    assert "of the run's time budget is left" in note
    assert errors(telemetry) == {"rate_limited": 1.0}


def test_a_retry_after_past_the_deadline_mid_run_ends_it_with_a_labelled_partial_answer(
    scripted_llm: ScriptedLLM,
) -> None:
    trace, _ = diagnose(scripted_llm, CALL, {"status": 429, "headers": {"retry-after": "30"}}, time_budget_s=10.0)
    assert trace.stop_reason is StopReason.LLM_UNAVAILABLE and trace.answer.startswith("Partial answer")
    assert "1,180 ms" in trace.answer and len(scripted_llm.chat_requests) == 2  # the observation is kept
    assert "not retried: the server asked for a 30.0 s wait (Retry-After)" in trace.answer


def test_retries_stop_at_the_deadline(scripted_llm: ScriptedLLM) -> None:
    seen: list[str] = []
    scripted_llm.script({"status": 500, "headers": {"retry-after-ms": "1000"}, "repeat": 11})
    llm = scripted_openai_llm(scripted_llm, max_retries=10, min_attempt_s=0.5, on_error=seen.append)
    with pytest.raises(LLMUnavailable, match="not retried") as caught:
        llm.complete(MESSAGES, timeout_s=3.0)  # 11 attempts a second apart do not fit in 3 s
    made = len(scripted_llm.chat_requests)
    notes = caught.value.failed_attempts
    assert made < 11 and len(notes) == made and seen == ["server_error"] * made
    assert all("; retried after" in n for n in notes[:-1])
    assert "not retried: the server asked for a 1.0 s wait (Retry-After), and only" in notes[-1]


def test_a_timed_out_attempt_leaves_no_retry_past_the_deadline(scripted_llm: ScriptedLLM) -> None:
    seen: list[str] = []
    scripted_llm.script({"content": "late", "delay_s": 2.0, "repeat": 4})
    llm = scripted_openai_llm(scripted_llm, max_retries=3, timeout_s=10.0, min_attempt_s=0.5, on_error=seen.append)
    with pytest.raises(LLMUnavailable) as caught:
        llm.complete(MESSAGES, timeout_s=1.5)  # the attempt gets 1 s: 0.5 s stay for the SDK's backoff
    assert len(scripted_llm.chat_requests) == 1 and seen == ["timeout"]
    [note] = caught.value.failed_attempts
    assert note.startswith("LLM attempt 1 failed: ReadTimeout (timeout); not retried: only")


def test_each_timed_out_attempt_is_counted_and_noted(scripted_llm: ScriptedLLM) -> None:
    seen: list[str] = []
    scripted_llm.script({"content": "late", "delay_s": 1.0}, {"content": "ok"})
    reply = scripted_openai_llm(scripted_llm, max_retries=1, timeout_s=0.3, on_error=seen.append).complete(MESSAGES)
    assert reply.content == "ok" and seen == ["timeout"]  # before: not counted, the SDK recovered
    [note] = reply.failed_attempts
    assert note.startswith("LLM attempt 1 failed: ReadTimeout (timeout); retried after")


def test_each_refused_connection_is_counted_and_noted() -> None:
    seen: list[str] = []
    llm = OpenAILLM(base_url=f"http://127.0.0.1:{free_port()}/v1", model=MODEL, max_retries=1, on_error=seen.append)
    with pytest.raises(LLMUnavailable, match="APIConnectionError") as caught:
        llm.complete(MESSAGES)
    assert seen == ["connection", "connection"]  # before: one count per call
    first, last = caught.value.failed_attempts
    assert first.startswith("LLM attempt 1 failed: ConnectError (connection); retried after")
    assert last == "LLM attempt 2 failed: ConnectError (connection); no retries left (max_retries 1)"


@pytest.mark.parametrize(
    "body",
    [
        "<html>502 Bad Gateway</html>",
        '{"id": "x", "choices": [{"index": 0, "message": {"role": "assistant", "content": "or',
        '{"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []}',
    ],
    ids=["garbage", "truncated", "no choices"],
)
def test_a_reply_that_is_no_completion_is_counted_and_noted(scripted_llm: ScriptedLLM, body: str) -> None:
    trace, telemetry = diagnose(scripted_llm, {"raw_body": body})
    assert len(scripted_llm.chat_requests) == 1 and PLAYBOOK in trace.answer
    [note] = attempt_notes(trace)
    assert note.startswith("LLM attempt 1 failed: unreadable reply") and "(bad_reply)" in note
    assert errors(telemetry) == {"bad_reply": 1.0}


def test_the_sdk_retry_timing_mirrored_in_the_adapter_is_the_installed_sdks() -> None:
    assert attempts.SDK_INITIAL_RETRY_DELAY_S == sdk_constants.INITIAL_RETRY_DELAY
    assert attempts.SDK_MAX_RETRY_DELAY_S == sdk_constants.MAX_RETRY_DELAY
    assert attempts.SDK_MAX_RETRY_AFTER_S == sdk_constants.MAX_RETRY_AFTER_DELAY


@pytest.mark.parametrize(
    ("status", "headers", "retried"),
    [
        (429, {}, True),
        (503, {}, True),
        (409, {}, True),
        (400, {}, False),
        (500, {"x-should-retry": "false"}, False),
        (400, {"x-should-retry": "true"}, True),
        (429, {"retry-after": "121"}, False),  # the SDK does not wait more than two minutes
    ],
)
def test_the_adapter_reads_the_sdks_retry_rule(status: int, headers: dict[str, str], retried: bool) -> None:
    assert attempts.sdk_retries(status, headers, retries_left=1) is retried
    assert attempts.sdk_retries(status, headers, retries_left=0) is False


def test_the_min_attempt_setting_reaches_the_adapter(scripted_llm: ScriptedLLM) -> None:
    settings: Settings = llm_settings(scripted_llm, min_attempt_s=2.5)
    llm: Any = wiring.build_llm(settings)
    assert llm.inner.min_attempt_s == 2.5


class _Redirect(BaseHTTPRequestHandler):
    """An endpoint that moved: every request is sent on to the ScriptedLLM with a 307 (method and body kept)."""

    target = ""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(307)
        self.send_header("location", f"{self.target}{self.path.removeprefix('/v1')}")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_a_redirect_followed_within_an_attempt_is_no_failed_attempt(scripted_llm: ScriptedLLM) -> None:
    seen: list[str] = []
    redirect = type("ToScripted", (_Redirect,), {"target": scripted_llm.base_url})
    server = ThreadingHTTPServer(("127.0.0.1", 0), redirect)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        scripted_llm.script({"status": 500}, {"content": "ok"})
        llm = OpenAILLM(base_url=f"http://127.0.0.1:{server.server_address[1]}/v1", model=MODEL, on_error=seen.append)
        reply = llm.complete(MESSAGES, timeout_s=30.0)
    finally:
        server.shutdown()
        server.server_close()
    assert reply.content == "ok" and seen == ["server_error"] and len(scripted_llm.chat_requests) == 2
    [note] = reply.failed_attempts  # the 500 of attempt 1; the redirects before each attempt are not failures
    assert note.startswith("LLM attempt 1 failed: HTTP 500 (server_error); retried after")
