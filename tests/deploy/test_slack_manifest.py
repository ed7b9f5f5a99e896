"""deploy/slack-app-manifest.yaml against the documented manifest structure (schema 2.0.0 keys and limits),
and against what bot/slack/intake/listeners.py actually registers."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
MANIFEST: dict[str, Any] = yaml.safe_load((ROOT / "deploy" / "slack-app-manifest.yaml").read_text())
LISTENERS = (ROOT / "bot" / "slack" / "intake" / "listeners.py").read_text()

TOP_LEVEL = {"_metadata", "display_information", "features", "oauth_config", "settings"}
SETTINGS_KEYS = {
    "event_subscriptions",
    "interactivity",
    "org_deploy_enabled",
    "socket_mode_enabled",
    "token_rotation_enabled",
    "allowed_ip_address_ranges",
    "incoming_webhooks",
}
# The scope each subscribed event needs (Slack's Events API reference).
EVENT_SCOPES = {
    "app_mention": "app_mentions:read",
    "message.im": "im:history",
    "message.channels": "channels:history",
    "message.groups": "groups:history",
    "assistant_thread_started": "assistant:write",
    "assistant_thread_context_changed": "assistant:write",
}


def test_top_level_and_settings_keys_are_documented_ones() -> None:
    assert set(MANIFEST) <= TOP_LEVEL
    assert MANIFEST["_metadata"]["major_version"] == 2
    assert set(MANIFEST["settings"]) <= SETTINGS_KEYS


def test_display_information_within_limits() -> None:
    info = MANIFEST["display_information"]
    assert 1 <= len(info["name"]) <= 35 and 1 <= len(info["description"]) <= 140
    assert 175 <= len(info["long_description"]) <= 4000
    assert re.fullmatch(r"#[0-9a-fA-F]{6}", info["background_color"])


def test_diagnose_command_and_message_shortcut() -> None:
    (command,) = MANIFEST["features"]["slash_commands"]
    assert command["command"] == "/diagnose" and len(command["command"]) <= 32 and command["description"]
    (shortcut,) = MANIFEST["features"]["shortcuts"]
    assert shortcut["type"] == "message" and shortcut["callback_id"] == "diagnose_message"
    assert 1 <= len(shortcut["name"]) <= 24 and 1 <= len(shortcut["description"]) <= 150


def test_the_app_registers_what_the_manifest_declares() -> None:
    assert 'app.command("/diagnose")' in LISTENERS
    assert 'app.shortcut("diagnose_message")' in LISTENERS
    assert 'app.event("app_mention")' in LISTENERS and 'app.event("message")' in LISTENERS


def test_scopes_cover_every_event_and_feature() -> None:
    scopes = set(MANIFEST["oauth_config"]["scopes"]["bot"])
    events = MANIFEST["settings"]["event_subscriptions"]["bot_events"]
    assert set(events) == {"app_mention", "message.im", "assistant_thread_started", "assistant_thread_context_changed"}
    assert {EVENT_SCOPES[e] for e in events} <= scopes
    assert {"commands", "chat:write", "reactions:write", "channels:history"} <= scopes
    assert "files:write" in scopes  # the chart's upload (files.getUploadURLExternal / completeUploadExternal)
    assert MANIFEST["features"]["app_home"]["messages_tab_enabled"] is True  # DMs need the Messages tab


def test_the_assistant_surface_is_declared_and_registered() -> None:
    view = MANIFEST["features"]["assistant_view"]
    assert 1 <= len(view["assistant_description"]) <= 300 and len(view["suggested_prompts"]) <= 4
    assert "app.assistant(build_assistant(" in LISTENERS


def test_interactivity_and_socket_mode_flags() -> None:
    settings = MANIFEST["settings"]
    assert settings["interactivity"]["is_enabled"] is True
    assert isinstance(settings["socket_mode_enabled"], bool)
    if not settings["socket_mode_enabled"]:  # HTTP mode needs request URLs
        assert settings["event_subscriptions"]["request_url"].startswith("https://")
