"""Slack surface benches (run on demand: `pytest tests/bench/bench_slack.py -s`). They print numbers.

1. `/diagnose` ack latency (p50/p99) while 50 diagnoses are in flight on opsbot's own pool.
2. Wall time of 20 concurrent diagnoses through the real respond() + agent loop against a ScriptedLLM that
   takes 1 s per reply, next to the wall time of one (target <= 1.5x; workers raised to 20 for the bench).
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import SecretStr

from bot import wiring
from bot.config import AccessSettings, SlackSettings
from bot.engine.types import Trace
from bot.http.server import RunningServer, start_server
from bot.slack.listeners import SlackSurface
from tests.fakes.llm import ScriptedLLM, llm_settings
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


def serve(settings: Any, responder: Any) -> tuple[SlackSurface, RunningServer, list[Trace]]:
    stored: list[Trace] = []
    surface = wiring.build_slack_app(settings, responder, persist=stored.append)
    surface.runner.start()
    app = wiring.build_server(settings, slack=surface, api=None, health=lambda: {"status": "ok"})
    return surface, start_server(app, "127.0.0.1", 0, threads=16), stored


def slack_settings(fake: FakeSlackAPI, workers: int, base: Any = None) -> Any:
    slack = SlackSettings(bot_token=SecretStr(BOT_TOKEN), signing_secret=SecretStr(SIGNING_SECRET),
                          api_base_url=fake.base_url, workers=workers, queue_size=500)
    access = AccessSettings(rate_limit_per_minute=0)  # the bench is one user firing hundreds of requests
    base = base or wiring.Settings(_env_file=None)  # type: ignore[call-arg]
    return base.model_copy(update={"slack": slack, "access": access})


@pytest.fixture
def fake() -> Iterator[FakeSlackAPI]:
    api = FakeSlackAPI()
    yield api
    api.close()


def test_diagnose_ack_latency_with_50_in_flight(fake: FakeSlackAPI) -> None:
    gate = threading.Event()
    surface, server, _ = serve(slack_settings(fake, workers=50), ScriptedResponder(gate=gate))
    try:
        for n in range(50):
            event = mention_event(f"why is service{n} slow?", ts=f"1700000100.{n:06d}")
            post_event(f"{server.url}/slack/events", event_body(event, event_id=f"Ev{n}"))
        deadline = time.monotonic() + 30
        while surface.runner.active < 50 and time.monotonic() < deadline:
            time.sleep(0.01)
        latencies_ms = []
        for n in range(200):
            params = command_params(f"why is order slow? #{n}", response_url=fake.response_url())
            started = time.perf_counter()
            response = post_command(f"{server.url}/slack/events", params)
            latencies_ms.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200 and "Diagnosing" in response.text
        q = statistics.quantiles(latencies_ms, n=100)
        print(f"\n/diagnose ack with {surface.runner.active} diagnoses running (+queued): "
              f"p50 {q[49]:.1f} ms, p99 {q[98]:.1f} ms, max {max(latencies_ms):.1f} ms over {len(latencies_ms)} acks")
    finally:
        gate.set()
        server.stop()
        surface.runner.stop(timeout_s=1)


def llm_turn(body: dict[str, Any]) -> dict[str, Any]:
    """First turn: one tool call; once a tool result is in the conversation: the answer. Each reply takes 1 s."""
    if any(m.get("role") == "tool" for m in body.get("messages", [])):
        return {"content": "order p99 rose from 212 ms to 1,180 ms at 15:05.", "delay_s": LLM_LATENCY_S}
    return {"content": "", "tool_calls": [{"name": "p99_ms", "arguments": {"service": "order"}}],
            "delay_s": LLM_LATENCY_S}


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
        print(f"\none diagnosis: {one_s:.2f} s; 20 concurrent: {twenty_s:.2f} s "
              f"(ratio {twenty_s / one_s:.2f}x, target <= 1.5x; 2 LLM replies of {LLM_LATENCY_S:.0f} s each)")
    finally:
        server.stop()
        surface.runner.stop(timeout_s=1)
