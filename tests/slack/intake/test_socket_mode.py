"""Socket Mode end to end: a local websocket peer plays Slack; the same listeners answer in threads."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from slack_bolt.adapter.socket_mode import SocketModeHandler

from tests.fakes.slack import ScriptedResponder, command_params, event_body, mention_event, stream_text
from tests.slack.conftest import Surface, SurfaceFactory, wait_until

ANSWER = "Root cause: order v2.8.1 raised hikari.maximumPoolSize from 50 to 200."
CAUSE = ANSWER.removeprefix("Root cause: ")  # the final message names the kind of answer itself


@pytest.fixture
def socket_surface(make_surface: SurfaceFactory) -> Iterator[tuple[Surface, SocketModeHandler, ScriptedResponder]]:
    responder = ScriptedResponder()
    surface = make_surface(responder)
    handler = SocketModeHandler(surface.app, app_token="xapp-1-test", ping_interval=60)
    handler.connect()
    wait_until(lambda: surface.fake.socket_peer.connected and handler.client.is_connected(), what="socket connect")
    yield surface, handler, responder
    surface.fake.socket_peer.close()  # closing Slack's side first spares the client's close-frame wait
    handler.close()


def events_envelope(envelope_id: str, body: dict[str, Any], retry_attempt: int = 0) -> dict[str, Any]:
    return {
        "envelope_id": envelope_id,
        "type": "events_api",
        "accepts_response_payload": False,
        "retry_attempt": retry_attempt,
        "retry_reason": "timeout" if retry_attempt else "",
        "payload": body,
    }


def test_mention_over_socket_mode_gets_a_threaded_answer(socket_surface) -> None:
    surface, _handler, _ = socket_surface
    peer = surface.fake.socket_peer
    peer.send(events_envelope("env-1", event_body(mention_event("why is order slow since 15:05?"))))
    assert peer.wait_ack("env-1")["envelope_id"] == "env-1"
    [stop] = surface.fake.wait_for("chat.stopStream")
    [start] = surface.fake.calls_to("chat.startStream")
    assert start["thread_ts"] == "1699999999.000100"
    assert CAUSE in stream_text(stop)
    assert surface.fake.calls_to("apps.connections.open")


def test_diagnose_over_socket_mode_acks_with_payload_and_threads_under_anchor(socket_surface) -> None:
    surface, _handler, _ = socket_surface
    peer = surface.fake.socket_peer
    params = command_params("why is order slow?", response_url=surface.fake.response_url())
    peer.send({"envelope_id": "env-cmd", "type": "slash_commands", "accepts_response_payload": True, "payload": params})
    ack = peer.wait_ack("env-cmd")
    assert "On it" in json.dumps(ack.get("payload", {}), ensure_ascii=False)
    [stop] = surface.fake.wait_for("chat.stopStream")
    [anchor] = surface.fake.responses_to("chat.postMessage")
    [start] = surface.fake.calls_to("chat.startStream")
    assert start["thread_ts"] == anchor["ts"]
    assert CAUSE in stream_text(stop)


def test_retried_envelope_gets_one_reply(socket_surface) -> None:
    surface, _handler, responder = socket_surface
    peer = surface.fake.socket_peer
    body = event_body(mention_event("why is order slow?"), event_id="EvSock")
    peer.send(events_envelope("env-a", body))
    surface.fake.wait_for("chat.stopStream")
    peer.send(events_envelope("env-b", body, retry_attempt=1))
    peer.wait_ack("env-b")
    wait_until(lambda: len(surface.submissions) == 2, what="the retried delivery")
    assert [s.outcome for s in surface.submissions] == ["started", "duplicate"]
    assert len(responder.questions) == 1
