"""The whole path through wiring: signed Slack request -> intent -> real agent loop on the ScriptedLLM -> thread."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests
from pydantic import SecretStr

from bot import wiring
from bot.config import SlackSettings
from bot.engine.types import Trace
from bot.http.server import RunningServer, start_server
from bot.slack.intake.listeners import SlackSurface
from tests.fakes.llm import ScriptedLLM, llm_settings
from tests.fakes.slack import (
    BOT_TOKEN,
    SIGNING_SECRET,
    FakeSlackAPI,
    command_params,
    event_body,
    mention_event,
    post_command,
    post_event,
    stream_text,
)
from tools.base import Toolbox, tool


def p99_ms(service: str) -> str:
    """Current p99 latency of a service in ms."""
    return f"p99 {service}: 1180 ms\nchange: 15:05 212 ms -> 1,180 ms (x5.6)"


@pytest.fixture
def served(
    fake_slack: FakeSlackAPI, scripted_llm: ScriptedLLM
) -> Iterator[tuple[SlackSurface, RunningServer, list[Trace]]]:
    slack = SlackSettings(
        bot_token=SecretStr(BOT_TOKEN), signing_secret=SecretStr(SIGNING_SECRET), api_base_url=fake_slack.base_url
    )
    settings = llm_settings(scripted_llm).model_copy(update={"slack": slack})
    responder = wiring.build_responder(settings, tools=Toolbox([tool(p99_ms)]))
    stored: list[Trace] = []
    surface = wiring.build_slack_app(settings, responder, persist=stored.append)
    surface.runner.start()
    app = wiring.build_server(settings, slack=surface, api=None, health=lambda: wiring.slack_health(surface, None))
    server = start_server(app, "127.0.0.1", 0, threads=4)
    yield surface, server, stored
    server.stop()
    surface.runner.stop(timeout_s=1)


def test_mention_runs_the_agent_and_streams_steps_then_the_answer(served, fake_slack, scripted_llm) -> None:
    _surface, server, stored = served
    scripted_llm.script(
        {"content": "", "tool_calls": [{"name": "p99_ms", "arguments": {"service": "order"}}]},
        {"content": "order p99 rose from 212 ms to 1,180 ms at 15:05."},
    )
    post_event(f"{server.url}/slack/events", event_body(mention_event("why is order slow since 15:05?")))
    [stop] = fake_slack.wait_for("chat.stopStream")
    assert "1,180 ms" in stream_text(stop)
    [start] = fake_slack.calls_to("chat.startStream")
    assert start["chunks"][0]["title"] == "p99_ms service=order"
    [trace] = stored
    assert trace.intent is not None and trace.intent.route == "diagnose" and trace.protocol == "native"


def test_diagnose_command_through_wiring_threads_the_answer(served, fake_slack, scripted_llm) -> None:
    _surface, server, stored = served
    scripted_llm.script({"content": "order p99 is 1180 ms now."})
    params = command_params("what is the p99 of order now", response_url=fake_slack.response_url())
    ack = post_command(f"{server.url}/slack/events", params)
    assert ack.status_code == 200 and "On it" in ack.text
    [stop] = fake_slack.wait_for("chat.stopStream")
    [anchor] = fake_slack.responses_to("chat.postMessage")
    [start] = fake_slack.calls_to("chat.startStream")
    assert start["thread_ts"] == anchor["ts"] and "1180 ms" in stream_text(stop)
    assert stored[0].intent is not None and stored[0].intent.route == "lookup"


def test_healthz_reports_the_slack_mode(served) -> None:
    _, server, _ = served
    body = requests.get(f"{server.url}/healthz", timeout=5).json()
    assert body["status"] == "ok" and body["slack"] == "http"
