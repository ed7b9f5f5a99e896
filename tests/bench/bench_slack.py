"""Slack surface benches (run on demand: `pytest tests/bench/bench_slack.py -s`). They print numbers.

The Slack stand-in answers every Web API call after 150 ms or 500 ms (real Slack takes 100-500 ms) and, in the
burst bench, enforces Slack's tiers with 429 + Retry-After.

1. `/diagnose` and @mention ack latency (p50/p99, 404 count) with 50 diagnoses in flight.
2. "@opsbot help" answered while 50 diagnoses run (the quick lane).
3. Web API calls per diagnosis and peak calls/s per method under a 50-mention burst, against Slack's tiers.
4. Wall time of 20 concurrent diagnoses through the real respond() + agent loop against a ScriptedLLM that
   takes 1 s per reply, next to the wall time of one (target <= 1.5x; workers raised to 20 for the bench).
"""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import SecretStr

from bot import wiring
from bot.config import AccessSettings, SlackSettings
from bot.engine.types import Question, StepObserver, Trace, trace_from_answer
from bot.http.server import RunningServer, start_server
from bot.slack.intake.listeners import SlackSurface
from tests.fakes.llm import ScriptedLLM, llm_settings, tool_results
from tests.fakes.slack import (
    BOT_TOKEN,
    SIGNING_SECRET,
    FakeSlackAPI,
    ScriptedResponder,
    command_params,
    event_body,
    mention_event,
    post_command,
    post_event,
)
from tools.base import Toolbox, tool

LLM_LATENCY_S = 1.0


def p99_ms(service: str) -> str:
    """Current p99 latency of a service in ms."""
    return f"p99 {service}: 1180 ms\nchange: 15:05 212 ms -> 1,180 ms (x5.6)"


def serve(settings: Any, responder: Any, classify: Any = None) -> tuple[SlackSurface, RunningServer, list[Trace]]:
    stored: list[Trace] = []
    surface = wiring.build_slack_app(settings, responder, persist=stored.append, classify=classify)
    surface.runner.start()
    app = wiring.build_server(settings, slack=surface, api=None, health=lambda: {"status": "ok"})
    return surface, start_server(app, "127.0.0.1", 0, threads=16), stored


def slack_settings(fake: FakeSlackAPI, workers: int, base: Any = None) -> Any:
    slack = SlackSettings(
        bot_token=SecretStr(BOT_TOKEN),
        signing_secret=SecretStr(SIGNING_SECRET),
        api_base_url=fake.base_url,
        workers=workers,
        queue_size=500,
    )
    access = AccessSettings(rate_limit_per_minute=0)  # the bench is one user firing hundreds of requests
    base = base or wiring.Settings(_env_file=None)  # type: ignore[call-arg]
    return base.model_copy(update={"slack": slack, "access": access})


class RoutedResponder(ScriptedResponder):
    """The scripted diagnosis, except that help (already classified on the quick lane) gets the canned answer."""

    def __call__(self, question: Question, on_step: StepObserver | None) -> Trace:
        if question.intent is not None and question.intent.route == "help":
            return trace_from_answer(question, "I'm opsbot. Ask me why a service misbehaves.")
        return super().__call__(question, on_step)


@pytest.fixture
def fake() -> Iterator[FakeSlackAPI]:
    api = FakeSlackAPI()
    yield api
    api.close()


def shut_down(fake: FakeSlackAPI, server: RunningServer, surface: SlackSurface) -> None:
    """Stop, with the stand-in instant again: the runner tells every queued job it is stopping, one call at a time,
    and hundreds of queued jobs at 500 ms a call would take minutes that measure nothing."""
    fake.latency_s = 0.0
    fake.limits_per_min = {}
    server.stop()
    surface.runner.stop(timeout_s=1)


def start_diagnoses(url: str, count: int, tag: str) -> None:
    for n in range(count):
        event = mention_event(f"why is service{n} slow since 15:05?", ts=f"1700000{tag}.{n:06d}")
        post_event(f"{url}/slack/events", event_body(event, event_id=f"Ev{tag}{n}"))


def in_thread(thread_ts: str, params: dict[str, Any]) -> bool:
    return params.get("thread_ts") == thread_ts


def quantiles_ms(latencies_ms: list[float]) -> str:
    q = statistics.quantiles(latencies_ms, n=100)
    return f"p50 {q[49]:.1f} ms, p99 {q[98]:.1f} ms, max {max(latencies_ms):.1f} ms over {len(latencies_ms)}"


@pytest.mark.parametrize("latency_s", [0.15, 0.5])
def test_ack_latency_with_50_diagnoses_in_flight(fake: FakeSlackAPI, latency_s: float) -> None:
    fake.latency_s = latency_s
    settings = slack_settings(fake, workers=50)
    surface, server, _ = serve(settings, ScriptedResponder(steps=40, delay_s=0.5))  # 20 s runs, streaming
    try:
        start_diagnoses(server.url, 50, "1")
        deadline = time.monotonic() + 60
        while surface.runner.active < 50 and time.monotonic() < deadline:
            time.sleep(0.01)
        command_ms, mention_ms, not_found = [], [], 0
        for n in range(100):
            params = command_params(f"why is order slow? #{n}", response_url=fake.response_url())
            started = time.perf_counter()
            response = post_command(f"{server.url}/slack/events", params)
            command_ms.append((time.perf_counter() - started) * 1000)
            not_found += response.status_code == 404
            event = mention_event(f"why is payment slow? #{n}", ts=f"1700000300.{n:06d}")
            started = time.perf_counter()
            response = post_event(f"{server.url}/slack/events", event_body(event, event_id=f"EvM{n}"))
            mention_ms.append((time.perf_counter() - started) * 1000)
            not_found += response.status_code == 404
        print(
            f"\nstand-in {latency_s * 1000:.0f} ms/call, {surface.runner.active} diagnoses running "
            f"(+{surface.runner.queued} queued):\n  /diagnose ack {quantiles_ms(command_ms)}"
            f"\n  mention ack   {quantiles_ms(mention_ms)}\n  404s: {not_found}"
        )
    finally:
        shut_down(fake, server, surface)


@pytest.mark.parametrize("latency_s", [0.15, 0.5])
def test_help_is_answered_while_50_diagnoses_run(fake: FakeSlackAPI, latency_s: float) -> None:
    fake.latency_s = latency_s
    settings = slack_settings(fake, workers=4)  # the default pool: 4 run, 46 wait
    classify = wiring.build_classifier(settings)
    surface, server, _ = serve(settings, RoutedResponder(steps=40, delay_s=0.5), classify)
    try:
        start_diagnoses(server.url, 50, "2")
        waits_s = []
        for n in range(5):
            time.sleep(1.0)
            ts = f"1700000400.{n:06d}"
            started = time.perf_counter()
            post_event(f"{server.url}/slack/events", event_body(mention_event("help", ts=ts), event_id=f"EvH{n}"))
            fake.wait_for("chat.postMessage", where=functools.partial(in_thread, ts), timeout_s=30)
            waits_s.append(time.perf_counter() - started)
        print(
            f"\nstand-in {latency_s * 1000:.0f} ms/call, {surface.runner.active} diagnoses running "
            f"(+{surface.runner.queued} queued): '@opsbot help' answered in " + ", ".join(f"{w:.2f} s" for w in waits_s)
        )
    finally:
        shut_down(fake, server, surface)


def test_web_api_calls_of_one_diagnosis(fake: FakeSlackAPI) -> None:
    fake.latency_s = 0.15
    surface, server, _ = serve(slack_settings(fake, workers=4), ScriptedResponder(steps=15, delay_s=0.2))
    try:
        start_diagnoses(server.url, 1, "6")
        fake.wait_for("reactions.add", 2, timeout_s=60)  # 👀, then the conclusion's reaction
        counts = {m: fake.methods().count(m) for m in dict.fromkeys(fake.methods()) if m != "auth.test"}
        print(
            f"\none diagnosis of 15 steps over 3 s: {sum(counts.values())} Web API calls: "
            + ", ".join(f"{m} {n}" for m, n in counts.items())
        )
    finally:
        shut_down(fake, server, surface)


TIERS_PER_MIN = {
    "chat.appendStream": 100,
    "chat.update": 50,
    "reactions.add": 50,
    "reactions.remove": 20,
    "chat.stopStream": 20,
    "assistant.threads.setStatus": 50,
}
# Tier 4 / 3 / 3 / 2 / 2 (stopStream: api.slack.com's method page); setStatus "special", taken as Tier 3


def test_web_api_traffic_under_a_50_mention_burst(fake: FakeSlackAPI) -> None:
    fake.latency_s = 0.15
    fake.enforce_limits(TIERS_PER_MIN)
    settings = slack_settings(fake, workers=10)
    surface, server, stored = serve(settings, ScriptedResponder(steps=15, delay_s=0.2))  # 15 steps, like the playbook
    try:
        started = time.monotonic()
        start_diagnoses(server.url, 50, "5")
        deadline = time.monotonic() + 300
        while len(stored) < 50 and time.monotonic() < deadline:
            time.sleep(0.1)
        answered_s = time.monotonic() - started
        time.sleep(2)  # the last reactions
        print(f"\n50-mention burst, stand-in 150 ms/call, tiers enforced: {len(stored)} answered in {answered_s:.0f} s")
        print(f"{'method':32} {'calls':>6} {'per diag':>9} {'peak/s':>7} {'429s':>5}  Slack's limit")
        for method in sorted({c.method for c in fake.calls}):
            calls = [c for c in fake.calls if c.method == method]
            limited = sum(c.status == 429 for c in calls)
            limit = (
                f"{TIERS_PER_MIN[method]}/min"
                if method in TIERS_PER_MIN
                else ("~1/s per channel" if method == "chat.postMessage" else "-")
            )
            peak = fake.peak_per_s(method)
            print(f"{method:32} {len(calls):6d} {len(calls) / 50:9.1f} {peak:7d} {limited:5d}  {limit}")
    finally:
        shut_down(fake, server, surface)


def llm_turn(body: dict[str, Any]) -> dict[str, Any]:
    """First turn: one tool call; once a tool result is in the conversation: the answer. Each reply takes 1 s."""
    if tool_results(body.get("messages", [])):
        return {"content": "order p99 rose from 212 ms to 1,180 ms at 15:05.", "delay_s": LLM_LATENCY_S}
    return {
        "content": "",
        "tool_calls": [{"name": "p99_ms", "arguments": {"service": "order"}}],
        "delay_s": LLM_LATENCY_S,
    }


def diagnose_wall_s(server: RunningServer, fake: FakeSlackAPI, count: int, offset: int) -> float:
    before = len(fake.calls_to("chat.stopStream"))
    started = time.perf_counter()
    for n in range(count):
        event = mention_event("why is order slow since 15:05?", ts=f"1700000200.{offset + n:06d}")
        post_event(f"{server.url}/slack/events", event_body(event, event_id=f"EvW{offset + n}"))
    fake.wait_for("chat.stopStream", before + count, timeout_s=120)
    return time.perf_counter() - started


def test_20_concurrent_diagnoses_vs_one(fake: FakeSlackAPI, scripted_llm: ScriptedLLM) -> None:
    scripted_llm.responder = llm_turn
    settings = slack_settings(fake, workers=20, base=llm_settings(scripted_llm))
    responder = wiring.build_responder(settings, tools=Toolbox([tool(p99_ms)]))
    surface, server, stored = serve(settings, responder)
    try:
        one_s = diagnose_wall_s(server, fake, 1, 0)
        twenty_s = diagnose_wall_s(server, fake, 20, 1)
        assert all(t.complete for t in stored) and len(stored) == 21
        print(
            f"\none diagnosis: {one_s:.2f} s; 20 concurrent: {twenty_s:.2f} s "
            f"(ratio {twenty_s / one_s:.2f}x, target <= 1.5x; 2 LLM replies of {LLM_LATENCY_S:.0f} s each)"
        )
    finally:
        shut_down(fake, server, surface)
