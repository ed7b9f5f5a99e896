"""LLM errors by kind, for /metrics: every failed attempt (the SDK's retried ones too), both model roles.
The fault cases in whole runs (retries inside the deadline, notes in the trace) are in test_llm_retries.py."""

from __future__ import annotations

import pytest

from bot import wiring
from bot.engine.attempts import error_kind_from_status
from bot.engine.llm import LLMUnavailable, OpenAILLM
from bot.engine.types import Question, StopReason
from bot.http.telemetry import Telemetry
from bot.routing.intent import classify
from tests.fakes.backends import free_port
from tests.fakes.llm import MODEL, ScriptedLLM, llm_settings, scripted_openai_llm
from tools.base import Toolbox, tool

MESSAGES = [{"role": "user", "content": "Is order healthy?"}]


def p99_ms(service: str) -> str:
    """Current p99 latency of a service in ms."""
    return f"p99 {service}: 1180 ms\nchange: 15:05 212 ms -> 1,180 ms (x5.6)"


def llm_errors(t: Telemetry, kind: str) -> float:
    return t.registry.get_sample_value("opsbot_llm_errors_total", {"kind": kind}) or 0.0


def test_errors_the_sdk_retried_and_recovered_from_are_reported_by_kind(scripted_llm: ScriptedLLM) -> None:
    seen: list[str] = []
    scripted_llm.script({"status": 429}, {"status": 500}, {"content": "ok"})
    llm = scripted_openai_llm(scripted_llm, max_retries=2, on_error=seen.append)
    assert llm.complete(MESSAGES).content == "ok"
    assert seen == ["rate_limited", "server_error"]


def test_an_llm_that_stays_down_reports_each_attempt_once(scripted_llm: ScriptedLLM) -> None:
    seen: list[str] = []
    scripted_llm.script({"status": 503, "repeat": 3})
    with pytest.raises(LLMUnavailable, match="HTTP 503"):
        scripted_openai_llm(scripted_llm, max_retries=2, on_error=seen.append).complete(MESSAGES)
    assert seen == ["server_error"] * 3  # the hook saw the last one; complete() does not count it again


def test_rejected_request_and_rejected_key_have_their_own_kinds(scripted_llm: ScriptedLLM) -> None:
    seen: list[str] = []
    scripted_llm.script({"status": 400}, {"status": 401})
    llm = scripted_openai_llm(scripted_llm, max_retries=0, on_error=seen.append)
    for _ in range(2):
        with pytest.raises(LLMUnavailable):
            llm.complete(MESSAGES)
    assert seen == ["bad_request", "auth"]


def test_timeout_is_reported_when_the_sdk_gives_up(scripted_llm: ScriptedLLM) -> None:
    seen: list[str] = []
    scripted_llm.script({"content": "late", "delay_s": 1.0})
    with pytest.raises(LLMUnavailable, match="Timeout"):
        scripted_openai_llm(scripted_llm, max_retries=0, timeout_s=0.2, on_error=seen.append).complete(MESSAGES)
    assert seen == ["timeout"]


def test_refused_connection_is_reported_as_connection() -> None:
    seen: list[str] = []
    llm = OpenAILLM(
        base_url=f"http://127.0.0.1:{free_port()}/v1",
        api_key="test",
        model=MODEL,
        max_retries=0,
        timeout_s=5.0,
        on_error=seen.append,
    )
    with pytest.raises(LLMUnavailable, match="APIConnectionError"):
        llm.complete(MESSAGES)
    assert seen == ["connection"]


def test_a_failing_observer_never_fails_the_call(scripted_llm: ScriptedLLM) -> None:
    def broken(kind: str) -> None:
        raise RuntimeError(f"metrics down ({kind})")

    scripted_llm.script({"status": 500}, {"content": "ok"})
    assert scripted_openai_llm(scripted_llm, max_retries=1, on_error=broken).complete(MESSAGES).content == "ok"


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (429, "rate_limited"),
        (500, "server_error"),
        (503, "server_error"),
        (408, "timeout"),
        (401, "auth"),
        (403, "auth"),
        (400, "bad_request"),
        (404, "bad_request"),
        (422, "bad_request"),
    ],
)
def test_error_kind_from_status(status: int, kind: str) -> None:
    assert error_kind_from_status(status) == kind


def test_cheap_model_failures_in_the_intent_gate_are_counted(scripted_llm: ScriptedLLM) -> None:
    t = Telemetry()
    llm = wiring.build_llm(llm_settings(scripted_llm, max_retries=1), on_error=t.observe_llm_error)
    assert llm is not None
    scripted_llm.script({"status": 500, "repeat": 2})
    intent = classify("order p99", llm, unsure_below=1.01)  # an unsure classifier asks the cheap model: it is down
    assert intent.tier == "default" and "model unavailable" in intent.reason
    assert llm_errors(t, "server_error") == 2


def test_a_diagnosis_that_survived_a_rate_limit_shows_it_in_metrics(scripted_llm: ScriptedLLM) -> None:
    t = Telemetry()
    settings = llm_settings(scripted_llm, max_retries=2)
    llm = wiring.build_llm(settings, on_error=t.observe_llm_error)
    responder = t.instrument(wiring.build_responder(settings, llm=llm, tools=Toolbox([tool(p99_ms)])))
    scripted_llm.script(
        {"status": 429},
        {"content": "", "tool_calls": [{"name": "p99_ms", "arguments": {"service": "order"}}]},
        {"content": "order p99 rose from 212 ms to 1,180 ms at 15:05."},
    )
    trace = responder(Question("why is order slow since 15:05?"), None)
    assert trace.complete and trace.stop_reason is StopReason.FINISH
    assert llm_errors(t, "rate_limited") == 1
    labels = {"intent": "diagnose", "stop_reason": "finish", "source": "cli"}
    assert t.registry.get_sample_value("opsbot_diagnoses_total", labels) == 1
