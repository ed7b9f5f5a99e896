"""Acks that never wait, two lanes, honest queue notices, asking when the intent gate is unsure."""

from __future__ import annotations

import functools
import json
import threading
import time
from typing import Any

from bot.engine.types import Budget, Intent, Question, StepObserver, Trace, trace_from_answer
from bot.routing.intent import classify
from bot.routing.respond import Router
from tests.fakes.playbook import RecordingPlaybook
from tests.fakes.slack import (
    ScriptedResponder,
    command_params,
    event_body,
    mention_event,
    post_command,
    post_event,
    post_interaction,
    stream_text,
)
from tests.slack.conftest import SurfaceFactory, wait_until
from tools.base import Toolbox

RULES_ONLY = functools.partial(classify, llm=None)


class RoutedResponder(ScriptedResponder):
    """Help and chit-chat get their canned answer; everything else is the scripted (gated) diagnosis."""

    def __call__(self, question: Question, on_step: StepObserver | None) -> Trace:
        intent = question.intent
        if intent is not None and intent.route in ("help", "chitchat"):
            trace = trace_from_answer(question, f"plain {intent.route} answer")
            return Trace(**{**trace.__dict__, "intent": intent})
        return super().__call__(question, on_step)


def in_thread(ts: str):
    return lambda params: params.get("thread_ts") == ts


def test_commands_are_acked_while_slack_itself_hangs_under_a_burst(make_surface: SurfaceFactory) -> None:
    # Old shape: each mention's listener posted 👀 and the status on Bolt's 5-thread pool, so 20 mentions against
    # a slow Slack left /diagnose without a thread: 404 "unhandled request". Now listeners only hand over.
    gate, slack_hangs = threading.Event(), threading.Event()
    surface = make_surface(ScriptedResponder(gate=gate), workers=2)
    for method in ("reactions.add", "assistant.threads.setStatus", "chat.postMessage"):
        surface.fake.hold(method, slack_hangs)
    for n in range(20):
        event = mention_event(f"why is service{n} slow?", ts=f"1700000500.{n:06d}")
        assert post_event(surface.events_url, event_body(event, event_id=f"EvB{n}")).status_code == 200
    params = command_params("why is order slow?", response_url=surface.fake.response_url())
    response = post_command(surface.events_url, params)
    assert response.status_code == 200 and "On it" in response.text
    slack_hangs.set()
    gate.set()


def test_help_is_answered_while_every_diagnosis_worker_is_busy(make_surface: SurfaceFactory) -> None:
    gate = threading.Event()
    responder = RoutedResponder(gate=gate)
    surface = make_surface(responder, workers=2, classify=RULES_ONLY)
    for n in range(4):
        event = mention_event(f"why is service{n} p99 latency high since 15:05?", ts=f"1700000600.{n:06d}")
        post_event(surface.events_url, event_body(event, event_id=f"EvD{n}"))
    wait_until(lambda: surface.runner.active == 2 and surface.runner.queued == 2, what="2 running, 2 queued")
    post_event(surface.events_url, event_body(mention_event("help", ts="1700000699.000001"), event_id="EvHelp"))
    [reply] = surface.fake.wait_for("chat.postMessage", where=in_thread("1700000699.000001"))
    assert reply["text"] == "plain help answer"  # answered while the gate still holds every diagnosis
    assert surface.runner.active == 2
    # plain: one markdown block, no buttons, no footer; no reaction and no status on the asking message
    assert [b["type"] for b in reply["blocks"]] == ["markdown"]
    assert not [r for r in surface.fake.calls_to("reactions.add") if r["timestamp"] == "1700000699.000001"]
    assert not surface.fake.calls_to(
        "assistant.threads.setStatus",
    ) or all(s["thread_ts"] != "1700000699.000001" for s in surface.fake.calls_to("assistant.threads.setStatus"))
    gate.set()


def test_an_empty_mention_gets_the_usage_reply(make_surface: SurfaceFactory) -> None:
    responder = ScriptedResponder()
    surface = make_surface(responder)
    post_event(surface.events_url, event_body(mention_event("", ts="1700000700.000001"), event_id="EvEmpty"))
    [usage] = surface.fake.wait_for("chat.postMessage", where=in_thread("1700000700.000001"))
    assert "/diagnose <question>" in usage["text"] and responder.questions == []


def test_queue_notices_give_true_unique_positions_and_become_the_progress(make_surface: SurfaceFactory) -> None:
    gate = threading.Event()
    surface = make_surface(ScriptedResponder(gate=gate), workers=1, queue_size=8, use_streaming=False)
    post_event(surface.events_url, event_body(mention_event("why a?", ts="2.000001"), event_id="EvQ0"))
    wait_until(lambda: surface.runner.active == 1, what="the first run")
    for n, ts in enumerate(("2.000002", "2.000003", "2.000004"), start=1):
        post_event(surface.events_url, event_body(mention_event(f"why {ts}?", ts=ts), event_id=f"EvQ{n}"))
        wait_until(functools.partial(lambda count: surface.runner.queued == count, n), what=f"{n} queued")
    notices = surface.fake.wait_for("chat.postMessage", 3, where=lambda p: "This message turns" in p["text"])
    by_thread = {n["thread_ts"]: n["text"] for n in notices}
    assert "You're next in line" in by_thread["2.000002"]
    assert "1 diagnosis is waiting ahead of yours" in by_thread["2.000003"]
    assert "2 diagnoses are waiting ahead of yours" in by_thread["2.000004"]
    gate.set()
    finals = surface.fake.wait_for("chat.update", 4, where=lambda p: p["text"].startswith("Likely cause"))
    notice_ts = {
        c.response["ts"]
        for c in surface.fake.calls
        if c.method == "chat.postMessage" and "This message turns" in c.params["text"]
    }
    assert len(notice_ts) == 3 and notice_ts <= {f["ts"] for f in finals}  # each answer landed in its notice


def test_an_unsure_intent_asks_and_the_choice_runs(make_surface: SurfaceFactory) -> None:
    responder = ScriptedResponder()

    def unsure(text: str) -> Intent:
        return Intent("diagnose", 0.3, "default", "rules unsure")

    surface = make_surface(responder, classify=unsure)
    post_event(surface.events_url, event_body(mention_event("order is weird", ts="3.000001"), event_id="EvU"))
    [asked] = surface.fake.wait_for("chat.postMessage", where=in_thread("3.000001"))
    [actions] = [b for b in asked["blocks"] if b["type"] == "actions"]
    assert [e["text"]["text"] for e in actions["elements"]] == ["🔎 Investigate", "Just answer"]
    assert asked["text"] and responder.questions == []  # nothing ran before the asker chose
    [response] = surface.fake.responses_to("chat.postMessage")
    click = {
        "type": "block_actions",
        "user": {"id": "U1"},
        "team": {"id": "T1"},
        "trigger_id": "trig",
        "channel": {"id": "C1"},
        "message": {"ts": response["ts"], "thread_ts": "3.000001"},
        "actions": [actions["elements"][0] | {"block_id": "opsbot_ask"}],
    }
    assert post_interaction(surface.events_url, click).status_code == 200
    surface.fake.wait_for("chat.stopStream")
    [question] = responder.questions
    assert question.intent is not None and question.intent.route == "diagnose" and question.intent.confidence == 1.0
    [edited] = surface.fake.wait_for("chat.update", where=lambda p: p["ts"] == response["ts"])
    assert "Investigating" in edited["text"]
    assert post_interaction(surface.events_url, click).status_code == 200  # a second click: already answered
    [told] = surface.fake.wait_for("chat.postEphemeral")
    assert "already answered" in told["text"]


def test_stream_updates_are_coalesced_and_none_is_lost(make_surface: SurfaceFactory) -> None:
    surface = make_surface(ScriptedResponder(steps=12), append_interval_s=60.0)
    post_event(surface.events_url, event_body(mention_event("why is order slow?", ts="4.000001"), event_id="EvC"))
    [stop] = surface.fake.wait_for("chat.stopStream")
    [start] = surface.fake.calls_to("chat.startStream")
    appended = [c for call in surface.fake.calls_to("chat.appendStream") for c in call.get("chunks", [])]
    ids = [c["id"] for c in start["chunks"] + appended + stop["chunks"] if c.get("type") == "task_update"]
    assert ids == [f"step-{n}" for n in range(1, 13)]  # every card, in order
    assert surface.fake.calls_to("chat.appendStream") == []  # 12 steps, one interval: no append at all
    # stopStream takes no `text`: the answer is the stream's markdown (what notifications and screen readers
    # read), after the last cards; the footer and buttons are its blocks
    assert "text" not in stop and stream_text(stop).startswith("🔎 **Likely cause**")
    assert "maximumPoolSize" in stream_text(stop) and [b["type"] for b in stop["blocks"]] == ["context", "actions"]


def missing_lookup(question: Question, tools: Toolbox, **kwargs: Any) -> Trace | None:
    """The model-free quick lookup when it can't tell what to read: one miss, no answer."""
    kwargs["on_miss"]("it names no known service")
    return None


def test_a_lookup_that_escalates_runs_on_the_diagnosis_lane_and_help_stays_quick(make_surface: SurfaceFactory) -> None:
    # Old shape: the Router ran the full diagnosis inline, on the quick lane: no queue place, no notice, a quick
    # thread held for the whole run. Now the quick answer hands the question back and it queues like a diagnosis.
    gate = threading.Event()
    playbook = RecordingPlaybook(gate=gate)
    router = Router(
        llm=None, tools=Toolbox([]), budget=Budget(), classify=RULES_ONLY, playbook=playbook, lookup=missing_lookup
    )
    surface = make_surface(router, workers=1, classify=RULES_ONLY, use_streaming=False)
    post_event(
        surface.events_url,
        event_body(mention_event("why is order p99 latency high since 15:05?", ts="5.000001"), event_id="EvE0"),
    )
    wait_until(lambda: surface.runner.active == 1 and len(playbook.questions) == 1, what="the diagnosis running")
    post_event(
        surface.events_url, event_body(mention_event("what is the p99 of billing now?", ts="5.000002"), event_id="EvE1")
    )
    wait_until(lambda: surface.runner.queued == 1, what="the escalated lookup queued as a diagnosis")
    [notice] = surface.fake.wait_for("chat.postMessage", where=in_thread("5.000002"))
    assert "You're next in line" in notice["text"]  # its true queue place, on the notice that becomes its progress
    assert len(playbook.questions) == 1  # nothing of it runs on the quick lane
    post_event(surface.events_url, event_body(mention_event("help", ts="5.000003"), event_id="EvE2"))
    [helped] = surface.fake.wait_for("chat.postMessage", where=in_thread("5.000003"))
    assert helped["text"].startswith("I'm opsbot") and surface.runner.queued == 1
    gate.set()
    notice_ts = next(c.response["ts"] for c in surface.fake.calls if c.params is notice)
    [final] = surface.fake.wait_for(
        "chat.update", where=lambda p: p["ts"] == notice_ts and not p["text"].startswith("Diagnosing")
    )
    [escalated] = [q for q in playbook.questions if q.text.startswith("what is the p99")]
    assert escalated.intent is not None and escalated.intent.route == "diagnose" and escalated.escalated
    assert "could not answer this with one query" in json.dumps(final["blocks"])


def test_a_lookup_asked_again_while_its_escalation_runs_is_not_queued_twice(make_surface: SurfaceFactory) -> None:
    # Old shape: the second ask's quick attempt released the in-flight claim of the first one's diagnosis when it
    # handed back, so the same question was queued again and diagnosed a second time, side by side.
    gate = threading.Event()
    playbook = RecordingPlaybook(gate=gate)
    router = Router(
        llm=None, tools=Toolbox([]), budget=Budget(), classify=RULES_ONLY, playbook=playbook, lookup=missing_lookup
    )
    surface = make_surface(router, workers=2, classify=RULES_ONLY, use_streaming=False)
    asked = "what is the p99 of billing now?"
    post_event(surface.events_url, event_body(mention_event(asked, ts="6.000001"), event_id="EvQ0"))
    wait_until(lambda: len(playbook.questions) == 1, what="the escalated lookup running as a diagnosis")
    again = mention_event(asked, ts="6.000002", thread_ts="6.000001")
    post_event(surface.events_url, event_body(again, event_id="EvQ1"))
    wait_until(lambda: len(surface.submissions) == 2, what="the second ask handled")
    assert [s.outcome for s in surface.submissions] == ["started", "duplicate"]
    [told] = surface.fake.wait_for("chat.postMessage", where=lambda p: "already working on that" in p["text"])
    assert told["thread_ts"] == "6.000001"
    gate.set()
    wait_until(lambda: surface.runner.active == 0 and surface.runner.queued == 0, what="the diagnosis done")
    assert [q.text for q in playbook.questions] == [asked]


def test_stop_lets_requests_already_acked_on_the_quick_lane_finish(make_surface: SurfaceFactory) -> None:
    """SIGTERM used to cancel acked mentions still waiting on the quick lane: Slack had been told we took them."""
    surface = make_surface()
    handled: list[int] = []

    def slow_triage(n: int) -> None:
        time.sleep(0.2)
        handled.append(n)

    for n in range(20):  # more than the quick lane has workers: some wait in its queue
        surface.runner.defer(slow_triage, n)
    surface.runner.stop(timeout_s=30)
    assert sorted(handled) == list(range(20))
