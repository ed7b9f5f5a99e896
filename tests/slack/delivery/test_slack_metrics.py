"""Slack's failures reach /metrics: API errors by method and error (retried 429s too) and stream fallbacks."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from pydantic import SecretStr
from slack_sdk.errors import SlackApiError

from bot import wiring
from bot.config import Settings, SlackSettings
from bot.engine.types import Trace
from bot.http.server import RunningServer, start_server
from bot.http.telemetry import Telemetry
from bot.slack.delivery.apierrors import method_from_url, watch_api_errors
from bot.slack.intake.listeners import build_web_client
from tests.fakes.backends import free_port
from tests.fakes.slack import (
    BOT_TOKEN,
    SIGNING_SECRET,
    FakeSlackAPI,
    ScriptedResponder,
    event_body,
    mention_event,
    post_event,
)

ANSWER = "Root cause: order v2.8.1 raised hikari.maximumPoolSize from 50 to 200."
CAUSE = ANSWER.removeprefix("Root cause: ")  # the final message names the kind of answer itself


def sample(t: Telemetry, name: str, **labels: str) -> float:
    return t.registry.get_sample_value(name, labels) or 0.0


def api_errors(t: Telemetry, method: str, error: str) -> float:
    return sample(t, "opsbot_slack_api_errors_total", method=method, error=error)


@pytest.fixture
def measured(fake_slack: FakeSlackAPI) -> Iterator[tuple[Telemetry, RunningServer]]:
    """The Slack surface as `opsbot serve` builds it, with telemetry, behind a real HTTP server."""
    slack = SlackSettings(
        bot_token=SecretStr(BOT_TOKEN),
        signing_secret=SecretStr(SIGNING_SECRET),
        api_base_url=fake_slack.base_url,
        append_interval_s=0.0,
    )  # every step streamed
    settings = Settings(_env_file=None, slack=slack)  # type: ignore[call-arg]
    telemetry = Telemetry()
    stored: list[Trace] = []
    surface = wiring.build_slack_app(
        settings, ScriptedResponder(ANSWER, steps=3), persist=stored.append, telemetry=telemetry
    )
    surface.runner.start()
    server = start_server(
        wiring.build_server(settings, slack=surface, api=None, health=lambda: {}), "127.0.0.1", 0, threads=4
    )
    yield telemetry, server
    server.stop()
    surface.runner.stop(timeout_s=1)


def test_a_stream_that_breaks_mid_run_is_counted_as_a_fallback_and_an_api_error(measured, fake_slack) -> None:
    telemetry, server = measured
    fake_slack.fail("chat.appendStream", error="message_not_in_streaming_state", after=1, times=100)
    post_event(f"{server.url}/slack/events", event_body(mention_event("why is order slow?")))
    fake_slack.wait_for("chat.update", where=lambda p: CAUSE in json.dumps(p.get("blocks", [])))
    assert sample(telemetry, "opsbot_slack_stream_fallbacks_total", error="message_not_in_streaming_state") == 1
    assert api_errors(telemetry, "chat.appendStream", "message_not_in_streaming_state") == 1  # then no more streaming
    # the same surface is measured as a whole: the run, the ack
    assert sample(telemetry, "opsbot_diagnoses_total", intent="unknown", stop_reason="finish", source="slack") == 1
    assert sample(telemetry, "opsbot_slack_ack_seconds_count") >= 1


def test_a_healthy_run_counts_no_slack_errors(measured, fake_slack) -> None:
    telemetry, server = measured
    post_event(f"{server.url}/slack/events", event_body(mention_event("why is order slow?")))
    fake_slack.wait_for("chat.stopStream")
    families = {f.name: f for f in telemetry.registry.collect()}
    assert families["opsbot_slack_api_errors"].samples == []
    assert families["opsbot_slack_stream_fallbacks"].samples == []


def test_a_rate_limited_call_that_slack_sdk_retried_is_still_counted(fake_slack: FakeSlackAPI) -> None:
    telemetry = Telemetry()
    client = watch_api_errors(build_web_client(BOT_TOKEN, fake_slack.base_url), telemetry.observe_slack_api_error)
    fake_slack.fail("chat.postMessage", error="ratelimited", status=429, retry_after=0)
    assert client.chat_postMessage(channel="C1", text="hello")["ok"]
    assert len(fake_slack.calls_to("chat.postMessage")) == 2  # the 429, then the retry that succeeded
    assert api_errors(telemetry, "chat.postMessage", "ratelimited") == 1


def test_an_ok_false_answer_is_counted_with_slacks_error_code(fake_slack: FakeSlackAPI) -> None:
    telemetry = Telemetry()
    client = watch_api_errors(build_web_client(BOT_TOKEN, fake_slack.base_url), telemetry.observe_slack_api_error)
    fake_slack.fail("reactions.add", error="already_reacted")
    with pytest.raises(SlackApiError):
        client.reactions_add(channel="C1", timestamp="1.0", name="eyes")
    assert api_errors(telemetry, "reactions.add", "already_reacted") == 1


def test_an_unreachable_slack_is_counted_as_connection_errors() -> None:
    seen: list[tuple[str, str]] = []
    client = watch_api_errors(
        build_web_client(BOT_TOKEN, f"http://127.0.0.1:{free_port()}/api/", timeout_s=5),
        lambda method, error: seen.append((method, error)),
    )
    with pytest.raises(OSError):
        client.chat_postMessage(channel="C1", text="hello")
    assert seen and set(seen) == {("chat.postMessage", "connection")}  # each attempt, slack-sdk's retry too


def test_method_is_read_from_the_request_url() -> None:
    assert method_from_url("https://slack.com/api/chat.postMessage") == "chat.postMessage"
    assert method_from_url("http://127.0.0.1:1/api/assistant.threads.setStatus?x=1") == "assistant.threads.setStatus"
