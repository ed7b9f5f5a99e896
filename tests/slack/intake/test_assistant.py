"""The assistant thread (Slack's AI app surface): suggested prompts, a title, and the question answered in it."""

from __future__ import annotations

from pathlib import Path

import yaml

from bot.slack.intake.assistant import suggested_prompts
from tests.fakes.slack import TEAM_ID, event_body, post_event, stream_text
from tests.slack.conftest import SurfaceFactory


def test_an_opened_assistant_thread_gets_suggested_prompts(make_surface: SurfaceFactory) -> None:
    surface = make_surface()
    started = {
        "type": "assistant_thread_started",
        "event_ts": "5.000001",
        "assistant_thread": {
            "user_id": "U1",
            "channel_id": "D1",
            "thread_ts": "5.000000",
            "context": {"channel_id": "C1", "team_id": TEAM_ID},
        },
    }
    assert post_event(surface.events_url, event_body(started, event_id="EvA1")).status_code == 200
    [prompts] = surface.fake.wait_for("assistant.threads.setSuggestedPrompts")
    assert prompts["channel_id"] == "D1" and prompts["thread_ts"] == "5.000000"
    assert [p["message"] for p in prompts["prompts"]] == suggested_prompts([])


def test_a_question_in_the_assistant_thread_is_titled_and_answered_there(make_surface: SurfaceFactory) -> None:
    surface = make_surface()
    message = {
        "type": "message",
        "channel_type": "im",
        "channel": "D1",
        "user": "U1",
        "ts": "5.000002",
        "thread_ts": "5.000000",
        "text": "why is order slow since 15:05?",
        "client_msg_id": "m1",
    }
    assert post_event(surface.events_url, event_body(message, event_id="EvA2")).status_code == 200
    [title] = surface.fake.wait_for("assistant.threads.setTitle")
    assert title["title"] == "why is order slow since 15:05?" and title["thread_ts"] == "5.000000"
    [stop] = surface.fake.wait_for("chat.stopStream")
    [start] = surface.fake.calls_to("chat.startStream")
    assert start["channel"] == "D1" and start["thread_ts"] == "5.000000" and stream_text(stop) and "text" not in stop
    statuses = surface.fake.wait_for("assistant.threads.setStatus", 2)
    assert statuses[0]["status"] == "Diagnosing…" and statuses[0]["thread_ts"] == "5.000000"
    surface.fake.wait_for("assistant.threads.setStatus", where=lambda p: p["status"] == "")  # cleared at the end


def test_prompts_name_the_configured_services_without_hard_coding_any() -> None:
    assert suggested_prompts(["checkout", "db"])[0] == "Why is checkout slow?"
    assert len(suggested_prompts(["a", "b", "c"])) <= 4


def test_the_manifest_declares_the_assistant_view_in_the_documented_shape() -> None:
    # slackapi/manifest-schema (schema 2.0.0): assistant_view takes only assistant_description (required) and
    # suggested_prompts, each prompt exactly a title and a message; no length limits are published for them
    manifest = yaml.safe_load((Path(__file__).resolve().parents[3] / "deploy" / "slack-app-manifest.yaml").read_text())
    view = manifest["features"]["assistant_view"]
    assert set(view) <= {"assistant_description", "suggested_prompts"} and view["assistant_description"].strip()
    assert all(set(p) == {"title", "message"} and p["title"] and p["message"] for p in view["suggested_prompts"])
    assert "assistant:write" in manifest["oauth_config"]["scopes"]["bot"]
