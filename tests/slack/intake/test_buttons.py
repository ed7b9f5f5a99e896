"""The final message's controls: 👍/👎 stored with the trace, Re-run from the stored run, the full-trace modal, and
"🔎 Investigate" under a quick answer that may have missed a diagnosis."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from bot.engine.types import Intent, Question, Route, StepObserver, StopReason, Totals, Trace, trace_from_answer
from bot.slack.delivery.render import (
    ACTION_INVESTIGATE_ANSWER,
    ACTION_RERUN,
    ACTION_SHOW_TRACE,
    ACTION_VOTE_DOWN,
    ACTION_VOTE_UP,
    MAX_MODAL_BLOCKS,
)
from tests.fakes.slack import ScriptedResponder, event_body, mention_event, post_event, post_interaction
from tests.slack.conftest import Surface, SurfaceFactory, wait_until


def answered(make_surface: SurfaceFactory, responder: ScriptedResponder | None = None) -> tuple[Surface, str]:
    surface = make_surface(responder)
    post_event(surface.events_url, event_body(mention_event("why is order slow since 15:05?")))
    surface.fake.wait_for("chat.stopStream")
    return surface, surface.persisted[0].trace_id


def click(surface: Surface, action_id: str, trace_id: str) -> None:
    payload: dict[str, Any] = {
        "type": "block_actions",
        "api_app_id": "A1",
        "token": "x",
        "trigger_id": "trig-1",
        "user": {"id": "U2"},
        "team": {"id": "T1"},
        "channel": {"id": "C1"},
        "container": {"type": "message", "message_ts": "1700000000.000009", "channel_id": "C1"},
        "message": {"ts": "1700000000.000009", "thread_ts": "1699999999.000100", "text": "Answer"},
        "response_url": surface.fake.response_url("action"),
        "actions": [
            {
                "action_id": action_id,
                "block_id": "opsbot_controls",
                "value": trace_id,
                "type": "button",
                "action_ts": "1700000001.0",
            }
        ],
    }
    assert post_interaction(surface.events_url, payload).status_code == 200


def test_votes_are_stored_with_the_trace(make_surface: SurfaceFactory) -> None:
    surface, trace_id = answered(make_surface)
    click(surface, ACTION_VOTE_UP, trace_id)
    click(surface, ACTION_VOTE_DOWN, trace_id)
    surface.fake.wait_for("chat.postEphemeral", 2)
    assert surface.votes == [(trace_id, "U2", 1), (trace_id, "U2", -1)]


def test_show_full_trace_opens_a_modal_within_limits(make_surface: SurfaceFactory) -> None:
    surface, trace_id = answered(make_surface, ScriptedResponder(steps=120))
    click(surface, ACTION_SHOW_TRACE, trace_id)
    [opened] = surface.fake.wait_for("views.open")
    assert opened["trigger_id"] == "trig-1" and opened["view"]["type"] == "modal"
    assert len(opened["view"]["blocks"]) <= MAX_MODAL_BLOCKS
    assert f"opsbot traces show {trace_id}" in json.dumps(opened["view"])


def test_rerun_starts_a_new_run_of_the_stored_question_in_the_thread(make_surface: SurfaceFactory) -> None:
    responder = ScriptedResponder()
    surface, trace_id = answered(make_surface, responder)
    click(surface, ACTION_RERUN, trace_id)
    surface.fake.wait_for("chat.stopStream", 2)
    wait_until(lambda: len(surface.persisted) == 2, what="the second trace")
    assert [q.text for q in responder.questions] == ["why is order slow since 15:05?"] * 2
    assert responder.questions[1].thread_ts == "1699999999.000100" and responder.questions[1].user == "U2"
    assert surface.persisted[1].trace_id != trace_id


def test_rerun_of_an_unknown_trace_says_so(make_surface: SurfaceFactory) -> None:
    surface = make_surface()
    click(surface, ACTION_RERUN, "no-such-trace")
    [reply] = surface.fake.wait_for("chat.postEphemeral")
    assert "can't find" in reply["text"] and surface.submissions == []


def test_trace_modal_pages_with_views_update(make_surface: SurfaceFactory) -> None:
    surface, trace_id = answered(make_surface, ScriptedResponder(steps=120))
    payload: dict[str, Any] = {
        "type": "block_actions",
        "api_app_id": "A1",
        "token": "x",
        "trigger_id": "trig-2",
        "user": {"id": "U2"},
        "team": {"id": "T1"},
        "container": {"type": "view", "view_id": "V1"},
        "view": {"id": "V1", "hash": "h1"},
        "actions": [
            {
                "action_id": "opsbot_trace_page_1",
                "block_id": "opsbot_trace_pages",
                "value": f"{trace_id}|1",
                "type": "button",
                "action_ts": "1700000001.0",
            }
        ],
    }
    assert post_interaction(surface.events_url, payload).status_code == 200
    [update] = surface.fake.wait_for("views.update")
    assert update["view_id"] == "V1" and update["hash"] == "h1"
    assert "page 2 of" in json.dumps(update["view"], ensure_ascii=False)


def test_alert_diagnosis_is_posted_as_an_anchor_with_the_answer_in_its_thread(make_surface: SurfaceFactory) -> None:
    surface = make_surface()
    trace = Trace(
        trace_id="alert1",
        question="[FIRING] OrderP99High <!here>",
        protocol="playbook",
        steps=(),
        answer="order v2.8.1 raised the pool size",
        complete=True,
        stop_reason=StopReason.FINISH,
        totals=Totals(),
    )
    surface.runner.post_trace("CALERTS", Question(trace.question, source="alertmanager"), trace)
    anchor, final = surface.fake.calls_to("chat.postMessage")
    [anchor_response, _] = surface.fake.responses_to("chat.postMessage")
    assert "thread_ts" not in anchor and "OrderP99High" in anchor["text"] and "<!here>" not in anchor["text"]
    assert final["thread_ts"] == anchor_response["ts"] and "pool size" in json.dumps(final["blocks"])
    assert surface.runner.recent_trace("alert1") is trace


class QuickResponder(ScriptedResponder):
    """The quick lane's answers as the Router gives them: a lookup is one step, plain routes none; the trace keeps
    the intent the gate chose. Anything routed to diagnose is the scripted diagnosis."""

    def __call__(self, question: Question, on_step: StepObserver | None) -> Trace:
        intent = question.intent
        if intent is None or intent.route == "diagnose":
            return super().__call__(question, on_step)
        with self._lock:
            self.questions.append(question)
        return replace(trace_from_answer(question, f"{intent.route} answer"), intent=intent)


def routed_as(route: Route, diagnose_probability: float) -> Callable[[str], Intent]:
    return lambda text: Intent(route, 0.8, "classifier", "test gate", diagnose_probability=diagnose_probability)


def quick_answer(
    make_surface: SurfaceFactory, route: Route, diagnose_probability: float, text: str
) -> tuple[Surface, QuickResponder, dict[str, Any]]:
    responder = QuickResponder()
    surface = make_surface(responder, classify=routed_as(route, diagnose_probability))
    post_event(surface.events_url, event_body(mention_event(text, ts="1699999999.000100")))
    [reply] = surface.fake.wait_for("chat.postMessage", where=lambda p: p.get("thread_ts") == "1699999999.000100")
    return surface, responder, reply


def buttons(message: dict[str, Any]) -> list[str]:
    return [e["text"]["text"] for b in message.get("blocks", []) if b["type"] == "actions" for e in b["elements"]]


def test_investigate_under_a_quick_answer_runs_the_question_as_a_diagnosis_and_marks_the_miss(
    make_surface: SurfaceFactory,
) -> None:
    text = "payments-api p99 looks off since 14:10"
    surface, responder, reply = quick_answer(make_surface, "chitchat", 0.35, text)
    assert buttons(reply) == ["🔎 Investigate"]  # a likely diagnosis answered as chat: one click away
    wait_until(lambda: len(surface.persisted) == 1, what="the quick answer's trace")
    quick_id = surface.persisted[0].trace_id
    click(surface, ACTION_INVESTIGATE_ANSWER, quick_id)
    surface.fake.wait_for("chat.stopStream")
    wait_until(lambda: len(surface.persisted) == 2, what="the diagnosis' trace")
    asked, investigated = responder.questions
    assert asked.intent is not None and asked.intent.route == "chitchat"
    assert investigated.text == text and investigated.thread_ts == "1699999999.000100"
    assert investigated.intent is not None and investigated.intent.route == "diagnose"
    assert "chose Investigate" in investigated.intent.reason
    assert surface.votes == [(quick_id, "U2", -1)]  # the quick answer missed: exported for retraining


def test_a_lookup_answer_offers_to_investigate_and_the_click_is_not_counted_as_a_miss(
    make_surface: SurfaceFactory,
) -> None:
    surface, responder, reply = quick_answer(make_surface, "lookup", 0.02, "what is payments-api p99 now?")
    assert buttons(reply) == ["🔎 Investigate", "👍", "👎", "Re-run", "Show full trace"]
    styles = [e.get("style") for b in reply["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert styles.count("primary") == 1 and styles[0] == "primary"
    wait_until(lambda: len(surface.persisted) == 1, what="the lookup's trace")
    click(surface, ACTION_INVESTIGATE_ANSWER, surface.persisted[0].trace_id)
    surface.fake.wait_for("chat.stopStream")
    wait_until(lambda: len(responder.questions) == 2, what="the diagnosis")
    assert responder.questions[1].intent is not None and responder.questions[1].intent.route == "diagnose"
    assert surface.votes == []  # "and why?" after a number is the next question, not a misrouted one


def test_plain_answers_to_unlikely_diagnoses_have_no_buttons(make_surface: SurfaceFactory) -> None:
    _, _, reply = quick_answer(make_surface, "chitchat", 0.03, "thanks, that helped")
    assert buttons(reply) == [] and [b["type"] for b in reply["blocks"]] == ["markdown"]


def test_investigate_on_an_expired_run_says_so_and_runs_nothing(make_surface: SurfaceFactory) -> None:
    surface = make_surface()
    click(surface, ACTION_INVESTIGATE_ANSWER, "no-such-trace")
    [reply] = surface.fake.wait_for("chat.postEphemeral")
    assert "can't find" in reply["text"] and surface.submissions == [] and surface.votes == []
