from __future__ import annotations

from prometheus_client import REGISTRY
from slack_bolt import App, BoltRequest
from slack_sdk import WebClient

from bot.engine.types import Intent, Question, Step, StepObserver, StopReason, Totals, Trace
from bot.http.telemetry import Telemetry
from tests.fakes.slack import BOT_TOKEN, FakeSlackAPI


def sample(t: Telemetry, name: str, **labels: str) -> float:
    return t.registry.get_sample_value(name, labels) or 0.0


def steps() -> tuple[Step, ...]:
    return (
        Step(1, "", "query_logs", {}, "boom", "error", 5, 100, 10),
        Step(2, "", "query_logs", {}, "x" * 9000, "refused", 5, 0, 0),
        Step(3, "", "", {}, "bad format", "format_error", 5, 50, 5),
        Step(4, "", "finish", {}, "", "ok", 5, 40, 20),
    )


def test_step_observer_counts_tool_calls_errors_tokens_and_gates() -> None:
    t = Telemetry()
    for step in steps():
        t.on_step(step)
    assert sample(t, "opsbot_tool_calls_total", tool="query_logs") == 2
    assert sample(t, "opsbot_tool_errors_total", tool="query_logs") == 1
    assert sample(t, "opsbot_gate_hits_total", gate="tool_args") == 1
    assert sample(t, "opsbot_llm_tokens_total", kind="prompt") == 190
    assert sample(t, "opsbot_steps_total", status="format_error") == 1


def test_instrumented_responder_counts_each_run_once() -> None:
    t = Telemetry()
    trace = Trace(
        "t1",
        "q",
        "native",
        steps(),
        "partial",
        False,
        StopReason.MAX_STEPS,
        Totals(4, 290, 45, 12_000),
        intent=Intent("diagnose", 1, "rules", ""),
    )
    seen: list[int] = []

    def responder(question: Question, on_step: StepObserver | None) -> Trace:
        assert on_step is not None
        for step in trace.steps:
            on_step(step)
        return trace

    t.instrument(responder)(Question("q", source="slack"), lambda s: seen.append(s.index))
    assert seen == [1, 2, 3, 4]  # the caller's observer still sees every step
    assert sample(t, "opsbot_diagnoses_total", intent="diagnose", stop_reason="max_steps", source="slack") == 1
    assert sample(t, "opsbot_gate_hits_total", gate="max_steps") == 1
    assert sample(t, "opsbot_diagnosis_duration_seconds_sum") == 12.0
    assert sample(t, "opsbot_diagnosis_steps_sum") == 4
    assert sample(t, "opsbot_llm_tokens_total", kind="prompt") == 290  # 190 from steps + 100 outside them
    assert sample(t, "opsbot_diagnoses_in_progress") == 0
    assert sample(t, "opsbot_intents_total", route="diagnose", tier="rules") == 1
    assert sample(t, "opsbot_intent_probability_count", tier="rules") == 1


def test_hooks_for_ack_queue_and_llm_errors() -> None:
    t = Telemetry()
    t.observe_ack(0.2)
    t.set_queue_depth(3)
    t.observe_llm_error("rate_limited")
    assert sample(t, "opsbot_slack_ack_seconds_count") == 1
    assert sample(t, "opsbot_queue_depth", queue="slack") == 3
    assert sample(t, "opsbot_llm_errors_total", kind="rate_limited") == 1


def test_two_telemetry_objects_do_not_share_a_registry() -> None:
    a, b = Telemetry(), Telemetry()  # would raise "Duplicated timeseries" on a shared registry
    a.observe_llm_error("timeout")
    assert sample(b, "opsbot_llm_errors_total", kind="timeout") == 0
    assert REGISTRY.get_sample_value("opsbot_llm_errors_total", {"kind": "timeout"}) is None


def test_ack_timer_as_bolt_middleware_observes_each_request(fake_slack: FakeSlackAPI) -> None:
    t = Telemetry()
    client = WebClient(token=BOT_TOKEN, base_url=fake_slack.base_url)
    app = App(client=client, signing_secret="s", request_verification_enabled=False)
    app.use(t.ack_timer)
    app.command("/diagnose")(lambda ack: ack("on it"))
    body = "command=%2Fdiagnose&text=why&user_id=U1&channel_id=C1&team_id=T1&response_url=http%3A%2F%2F127.0.0.1%3A9"
    response = app.dispatch(BoltRequest(body=body, headers={"content-type": ["application/x-www-form-urlencoded"]}))
    assert response.status == 200 and "on it" in response.body
    assert sample(t, "opsbot_slack_ack_seconds_count") == 1


def test_queue_depth_can_be_read_at_scrape_time() -> None:
    t = Telemetry()
    waiting = [2]
    t.watch_queue_depth(lambda: waiting[0], "slack")
    waiting[0] = 5
    assert sample(t, "opsbot_queue_depth", queue="slack") == 5


def test_a_run_that_ended_llm_unavailable_adds_no_llm_error_of_its_own() -> None:
    t = Telemetry()  # the adapter counted each failed attempt already; the run shows under its stop reason
    t.observe_trace(Trace("t2", "q", "native", (), "partial", False, StopReason.LLM_UNAVAILABLE, Totals()))
    assert [s for f in t.registry.collect() if f.name == "opsbot_llm_errors" for s in f.samples] == []
    assert sample(t, "opsbot_diagnoses_total", intent="unknown", stop_reason="llm_unavailable", source="unknown") == 1


def test_slack_hooks_count_api_errors_and_stream_fallbacks() -> None:
    t = Telemetry()
    t.observe_slack_api_error("chat.update", "message_not_found")
    t.observe_stream_fallback("message_not_in_streaming_state")
    assert sample(t, "opsbot_slack_api_errors_total", method="chat.update", error="message_not_found") == 1
    assert sample(t, "opsbot_slack_stream_fallbacks_total", error="message_not_in_streaming_state") == 1
