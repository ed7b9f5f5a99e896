"""HTTP mode end to end: signed requests to /slack/events, answers threaded through the FakeSlackAPI."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import requests

from tests.fakes.slack import (
    BOT_USER_ID,
    ScriptedResponder,
    command_params,
    event_body,
    mention_event,
    post_command,
    post_event,
    signed_headers,
    stream_text,
)
from tests.slack.conftest import SurfaceFactory, wait_until

ANSWER = "Root cause: order v2.8.1 raised hikari.maximumPoolSize from 50 to 200."
CAUSE = ANSWER.removeprefix("Root cause: ")  # the final message names the kind of answer itself


def final_stops(fake, count: int = 1) -> list[dict]:
    return fake.wait_for("chat.stopStream", count)


def test_mention_gets_a_threaded_final_answer(make_surface: SurfaceFactory) -> None:
    surface = make_surface()
    response = post_event(surface.events_url, event_body(mention_event("why is order slow since 15:05?")))
    assert response.status_code == 200
    [stop] = final_stops(surface.fake)
    [start] = surface.fake.calls_to("chat.startStream")
    assert start["thread_ts"] == "1699999999.000100" and start["channel"] == "C1"
    assert start["recipient_user_id"] == "U1" and start["recipient_team_id"] == "T1"
    assert CAUSE in stream_text(stop)
    appended = [c for call in surface.fake.calls_to("chat.appendStream") for c in call.get("chunks", [])]
    assert [c["status"] for c in start["chunks"] + appended] == ["complete", "complete"]
    surface.fake.wait_for("reactions.add", 2)  # 👀 is added beside the run, so it may land after the answer
    reactions = [r["name"] for r in surface.fake.calls_to("reactions.add")]
    assert reactions[0] == "eyes"
    names = [r["name"] for r in surface.fake.calls_to("reactions.add")]
    assert "bulb" in names and "white_check_mark" not in names  # a likely cause is never ticked
    statuses = [s["status"] for s in surface.fake.calls_to("assistant.threads.setStatus")]
    assert statuses[0] == "Diagnosing…"
    assert [t.answer for t in surface.persisted] == [ANSWER]


def test_diagnose_command_acks_and_threads_under_an_anchor(make_surface: SurfaceFactory) -> None:
    surface = make_surface()
    params = command_params("why is order slow?", response_url=surface.fake.response_url())
    response = post_command(surface.events_url, params)
    assert response.status_code == 200 and "On it" in response.text
    [stop] = final_stops(surface.fake)
    [anchor] = surface.fake.calls_to("chat.postMessage")
    assert "thread_ts" not in anchor and "<@U1> asked:" in anchor["text"]
    [start] = surface.fake.calls_to("chat.startStream")
    anchor_ts = surface.fake.wait_for("reactions.add")[0]["timestamp"]  # 👀 runs beside the diagnosis: may land last
    assert start["thread_ts"] == anchor_ts
    assert CAUSE in stream_text(stop)


def test_diagnose_is_acked_while_10_diagnoses_are_running(make_surface: SurfaceFactory) -> None:
    gate = threading.Event()
    responder = ScriptedResponder(gate=gate)
    surface = make_surface(responder, workers=10)
    for n in range(10):
        event = mention_event(f"why is service{n} slow?", ts=f"1700000100.{n:06d}")
        assert post_event(surface.events_url, event_body(event, event_id=f"Ev{n}")).status_code == 200
    wait_until(lambda: surface.runner.active == 10, what="10 running diagnoses")
    params = command_params("why is order slow?", response_url=surface.fake.response_url())
    response = post_command(surface.events_url, params)
    assert response.status_code == 200 and "On it" in response.text
    # /diagnose queues after its ack (the anchor is posted first): wait for that, or a freed worker takes it at once
    wait_until(lambda: surface.runner.queued == 1, what="the 11th diagnosis queued")
    # the notice is posted from another pool: on a loaded machine a worker freed by the gate could take the job
    # before its notice went out, and then no notice is due (seen once in a full run): wait for it first
    surface.fake.wait_for("chat.postMessage", where=lambda p: "next in line" in p.get("text", ""))
    gate.set()
    final_stops(surface.fake, 10)
    # the 11th waited: its "queued" notice became its progress message, and that message carries the answer
    # the anchor of /diagnose and the notice are posted from different pools: find the notice, not the last post
    posts = zip(surface.fake.calls_to("chat.postMessage"), surface.fake.responses_to("chat.postMessage"), strict=True)
    [notice] = [response for call, response in posts if "next in line" in call["text"]]
    surface.fake.wait_for("chat.update", where=lambda p: p["ts"] == notice["ts"] and p["text"].startswith("Likely"))


def test_retried_event_gets_one_reply(make_surface: SurfaceFactory) -> None:
    responder = ScriptedResponder()
    surface = make_surface(responder)
    body = event_body(mention_event("why is order slow?"), event_id="EvRetry")
    assert post_event(surface.events_url, body).status_code == 200
    final_stops(surface.fake)
    assert post_event(surface.events_url, body, retry_num=1).status_code == 200
    assert post_event(surface.events_url, body, retry_num=2).status_code == 200
    wait_until(lambda: len(surface.submissions) == 3, what="three deliveries")
    assert [s.outcome for s in surface.submissions] == ["started", "duplicate", "duplicate"]
    assert len(responder.questions) == 1
    assert len(surface.fake.calls_to("chat.startStream")) == 1


def test_bad_signature_gets_401(make_surface: SurfaceFactory) -> None:
    surface = make_surface()
    body = event_body(mention_event("why?"))
    assert post_event(surface.events_url, body, secret="wrong-secret").status_code == 401
    raw = json.dumps(body)
    stale = signed_headers(raw, content_type="application/json", timestamp=int(time.time()) - 600)
    assert requests.post(surface.events_url, data=raw, headers=stale, timeout=10).status_code == 401
    assert surface.submissions == []


def test_url_verification_echoes_the_challenge(make_surface: SurfaceFactory) -> None:
    surface = make_surface()
    response = post_event(surface.events_url, {"type": "url_verification", "challenge": "abc123", "token": "x"})
    assert response.status_code == 200 and "abc123" in response.text


def test_busy_workers_answer_queued_as_n(make_surface: SurfaceFactory) -> None:
    gate = threading.Event()
    responder = ScriptedResponder(gate=gate)
    surface = make_surface(responder, workers=1, queue_size=1)
    post_event(surface.events_url, event_body(mention_event("why a?", ts="1.000001"), event_id="EvA"))
    wait_until(lambda: len(responder.questions) == 1, what="the first run")
    post_event(surface.events_url, event_body(mention_event("why b?", ts="1.000002"), event_id="EvB"))
    post_event(surface.events_url, event_body(mention_event("why c?", ts="1.000003"), event_id="EvC"))
    wait_until(lambda: len(surface.submissions) == 3, what="three submissions")
    assert sorted(s.outcome for s in surface.submissions) == ["queued", "rejected", "started"]
    texts = [c["text"] for c in surface.fake.wait_for("chat.postMessage", 2)]
    assert any("You're next in line: the diagnosis worker is busy" in t for t in texts)
    assert any("queue is full" in t for t in texts)
    # the refused message no longer says "looking" (👀): it gets 🚦, like the reply in its thread
    [removed] = surface.fake.wait_for("reactions.remove")
    assert removed["name"] == "eyes" and removed["timestamp"] in ("1.000002", "1.000003")
    assert any(r["name"] == "vertical_traffic_light" for r in surface.fake.calls_to("reactions.add"))
    gate.set()
    final_stops(surface.fake, 1)  # the queued one answers in its notice, which became its progress message
    surface.fake.wait_for("chat.update", where=lambda p: p["text"].startswith("Likely cause"))


def test_stream_failing_mid_run_still_delivers_the_final_answer(make_surface: SurfaceFactory) -> None:
    surface = make_surface(ScriptedResponder(steps=4))
    surface.fake.fail("chat.appendStream", error="message_not_in_streaming_state", after=1, times=100)
    post_event(surface.events_url, event_body(mention_event("why is order slow?")))
    final = surface.fake.wait_for("chat.update", where=lambda p: CAUSE in json.dumps(p.get("blocks", [])))
    [start] = surface.fake.responses_to("chat.startStream")
    assert final[-1]["ts"] == start["ts"] and final[-1]["text"].startswith("Likely cause")  # the stream's message
    assert surface.fake.calls_to("chat.stopStream") == []


def test_without_streaming_one_message_is_edited(make_surface: SurfaceFactory) -> None:
    surface = make_surface(ScriptedResponder(steps=5), use_streaming=False)
    post_event(surface.events_url, event_body(mention_event("why is order slow?")))
    surface.fake.wait_for("chat.update", where=lambda p: CAUSE in json.dumps(p.get("blocks", [])))
    posts = surface.fake.calls_to("chat.postMessage")
    assert len(posts) == 1 and posts[0]["thread_ts"] == "1699999999.000100"
    [progress] = surface.fake.responses_to("chat.postMessage")
    assert {u["ts"] for u in surface.fake.calls_to("chat.update")} == {progress["ts"]}


def test_rate_limited_post_honours_retry_after(make_surface: SurfaceFactory) -> None:
    surface = make_surface(ScriptedResponder(steps=0), use_streaming=False)
    surface.fake.fail("chat.postMessage", error="ratelimited", status=429, retry_after=1)
    post_event(surface.events_url, event_body(mention_event("why is order slow?")))
    posts = surface.fake.wait_for("chat.postMessage", 2)
    assert CAUSE in json.dumps(posts[-1]["blocks"])


def test_failed_posts_never_lose_the_trace(make_surface: SurfaceFactory) -> None:
    surface = make_surface(ScriptedResponder(steps=1))
    for method in ("chat.startStream", "chat.postMessage", "chat.update"):
        surface.fake.fail(method, error="channel_not_found", times=100)
    post_event(surface.events_url, event_body(mention_event("why is order slow?")))
    surface.fake.wait_for("reactions.add", 2)
    assert [t.answer for t in surface.persisted] == [ANSWER]
    assert surface.fake.calls_to("reactions.add")[-1]["name"] == "warning"
    assert surface.fake.calls_to("assistant.threads.setStatus")[-1]["status"] == ""


def test_trace_is_persisted_before_anything_is_posted(make_surface: SurfaceFactory) -> None:
    surface = make_surface(ScriptedResponder(steps=0), use_streaming=False)
    post_event(surface.events_url, event_body(mention_event("why is order slow?")))
    surface.fake.wait_for("chat.postMessage")
    assert len(surface.persisted) == 1
    # steps=0: the only post is the final answer; the store had the trace before Slack saw any post
    assert surface.posts_when_persisted == [0]
    assert surface.runner.recent_trace(surface.persisted[0].trace_id) is not None


def test_broadcasts_are_never_echoed(make_surface: SurfaceFactory) -> None:
    responder = ScriptedResponder(answer="<!channel> order is down")
    surface = make_surface(responder)
    post_event(surface.events_url, event_body(mention_event("<!channel> <!here> why is order slow?")))
    params = command_params("<!everyone> <!subteam^S1|@sre> why?", response_url=surface.fake.response_url())
    ack = post_command(surface.events_url, params)
    final_stops(surface.fake, 2)
    everything = json.dumps([c.params for c in surface.fake.calls]) + ack.text
    for ping in ("<!channel>", "<!here>", "<!everyone>", "<!subteam"):
        assert ping not in everything
    assert all("<!" not in q.text for q in responder.questions)


def test_bot_and_own_messages_are_ignored(make_surface: SurfaceFactory) -> None:
    responder = ScriptedResponder()
    surface = make_surface(responder)
    bot_dm: dict[str, Any] = {
        "type": "message",
        "channel": "D1",
        "channel_type": "im",
        "user": "U9",
        "bot_id": "B9",
        "text": "why is order slow?",
        "ts": "2.000001",
    }
    edit: dict[str, Any] = {
        "type": "message",
        "channel": "D1",
        "channel_type": "im",
        "subtype": "message_changed",
        "ts": "2.000002",
        "message": {"text": "why?"},
    }
    real: dict[str, Any] = {
        "type": "message",
        "channel": "D1",
        "channel_type": "im",
        "user": "U1",
        "text": "why is order slow?",
        "ts": "2.000003",
    }
    for n, event in enumerate((bot_dm, edit, real)):
        assert post_event(surface.events_url, event_body(event, event_id=f"EvDM{n}")).status_code == 200
    final_stops(surface.fake)
    assert [(q.channel, q.user) for q in responder.questions] == [("D1", "U1")]


def test_follow_up_in_the_thread_sees_earlier_turns(make_surface: SurfaceFactory) -> None:
    responder = ScriptedResponder()
    surface = make_surface(responder)
    post_event(surface.events_url, event_body(mention_event("why is order slow since 15:05?"), event_id="Ev1"))
    final_stops(surface.fake)
    follow_up = mention_event("and what about payment?", ts="1699999999.000200", thread_ts="1699999999.000100")
    post_event(surface.events_url, event_body(follow_up, event_id="Ev2"))
    final_stops(surface.fake, 2)
    [turn] = responder.questions[1].history
    assert "why is order slow since 15:05?" in turn and "maximumPoolSize" in turn and "change: 15:05" in turn


def test_refused_user_is_told_and_nothing_runs(make_surface: SurfaceFactory) -> None:
    responder = ScriptedResponder()
    surface = make_surface(responder, admit=lambda user, channel: "opsbot is not enabled in this channel")
    post_event(surface.events_url, event_body(mention_event("why is order slow?")))
    [ephemeral] = surface.fake.wait_for("chat.postEphemeral")
    assert "not enabled" in ephemeral["text"] and ephemeral["user"] == "U1"
    ack = post_command(surface.events_url, command_params("why?", response_url=surface.fake.response_url()))
    assert "not enabled" in ack.text
    # The ephemeral is posted inside submit, so the outcome is recorded a moment after the post is seen.
    wait_until(lambda: len(surface.submissions) == 1, what="the mention's outcome")
    assert responder.questions == [] and [s.outcome for s in surface.submissions] == ["refused"]


def test_healthz_reports_status(make_surface: SurfaceFactory) -> None:
    surface = make_surface()
    response = requests.get(f"{surface.server.url}/healthz", timeout=5)
    assert response.status_code == 200 and response.json()["status"] == "ok"
    assert requests.get(f"{surface.server.url}/nope", timeout=5).status_code == 404


def test_empty_diagnose_shows_help(make_surface: SurfaceFactory) -> None:
    surface = make_surface()
    ack = post_command(surface.events_url, command_params("  ", response_url=surface.fake.response_url()))
    assert ack.status_code == 200 and "/diagnose" in ack.text
    assert f"<@{BOT_USER_ID}>" in ack.text and "@opsbot" not in ack.text  # the app's real user, not a guess
    assert surface.submissions == []


def test_diagnose_in_a_channel_without_the_bot_says_invite_me(make_surface: SurfaceFactory) -> None:
    surface = make_surface()
    surface.fake.fail("chat.postMessage", error="not_in_channel")
    ack = post_command(surface.events_url, command_params("why?", response_url=surface.fake.response_url()))
    assert ack.status_code == 200
    [reply] = surface.fake.wait_for("response_url")
    assert "Invite me" in reply["text"] and f"<@{BOT_USER_ID}>" in reply["text"]
    assert "@opsbot" not in reply["text"]
    assert surface.submissions == []


def test_mention_under_an_alert_reads_the_thread_as_context(make_surface: SurfaceFactory) -> None:
    responder = ScriptedResponder()
    surface = make_surface(responder)
    surface.fake.threads[("C1", "1699999999.000001")] = [
        {
            "ts": "1699999999.000001",
            "bot_id": "BALERT",
            "text": "[FIRING:1] OrderP99High <!channel>",
            "attachments": [{"fallback": "order p99 > 1s for 5m"}],
        },
        {"ts": "1699999999.000050", "user": "UBOT", "text": "an earlier opsbot post"},
        {"ts": "1699999999.000100", "user": "U1", "text": "<@UBOT> why?"},
    ]
    mention = mention_event("why?", ts="1699999999.000100", thread_ts="1699999999.000001")
    post_event(surface.events_url, event_body(mention))
    surface.fake.wait_for("chat.stopStream")
    [context] = responder.questions[0].history
    assert "OrderP99High" in context and "order p99 > 1s for 5m" in context and "untrusted" in context
    assert "<!channel>" not in context and "earlier opsbot post" not in context


def test_repeating_a_running_question_in_the_thread_starts_no_second_run(make_surface: SurfaceFactory) -> None:
    gate = threading.Event()
    responder = ScriptedResponder(gate=gate)
    surface = make_surface(responder)
    post_event(surface.events_url, event_body(mention_event("why is order slow?", ts="1.000001"), event_id="Ev1"))
    wait_until(lambda: len(responder.questions) == 1, what="the first run")
    again = mention_event("Why is  order slow?", ts="1.000002", thread_ts="1.000001")
    post_event(surface.events_url, event_body(again, event_id="Ev2"))
    wait_until(lambda: len(surface.submissions) == 2, what="the repeat")
    assert [s.outcome for s in surface.submissions] == ["started", "duplicate"]
    assert "already working on that" in surface.fake.wait_for("chat.postMessage")[0]["text"]
    gate.set()
    final_stops(surface.fake)
    post_event(
        surface.events_url,
        event_body(mention_event("why is order slow?", ts="1.000003", thread_ts="1.000001"), event_id="Ev3"),
    )
    wait_until(lambda: len(surface.submissions) == 3, what="a later repeat")
    assert surface.submissions[-1].outcome == "started"  # once answered, asking again is a new run
