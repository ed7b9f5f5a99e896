"""The Router: the intent picks the path; the playbook covers a missing or dead model; it never raises."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import pytest

from bot.engine.types import Budget, Intent, Question, Step, StopReason, Totals, Trace, handed_back
from bot.routing.replies import LOOKUP_EMPTY_NOTE, LOOKUP_MODEL_DOWN_NOTE
from bot.routing.respond import HELP_ANSWER, MODEL_DOWN_NOTE, NO_MODEL_NOTE, READ_ONLY_ANSWER, Router
from tests.fakes.llm import ScriptedLLM, scripted_openai_llm
from tests.fakes.playbook import RecordingPlaybook
from tools.base import Toolbox, tool


def p99_ms(service: str) -> str:
    """Current p99 latency of a service in ms. Use for one current value."""
    return f"p99 {service}: 1180 ms\nchange: 15:05 212 ms -> 1,180 ms (x5.6)"


TOOLS = Toolbox([tool(p99_ms)])


def route_to(route: str) -> Any:
    return lambda text: Intent(route, 0.9, "rules", f"test says {route}")  # type: ignore[arg-type]


def ask(text: str, *, llm: Any, route: str, playbook: Any = None, on_step: Any = None, **kwargs: Any) -> Trace:
    router = Router(
        llm=llm, tools=TOOLS, budget=Budget(max_steps=4), classify=route_to(route), playbook=playbook, **kwargs
    )
    return router(Question(text), on_step)


def test_diagnosis_runs_the_agent_and_records_the_intent(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {"content": "", "tool_calls": [{"name": "p99_ms", "arguments": {"service": "order"}}]},
        {"content": "order p99 rose from 212 ms to 1,180 ms at 15:05."},
    )
    seen: list[Step] = []
    trace = ask("why is order slow?", llm=scripted_openai_llm(scripted_llm), route="diagnose", on_step=seen.append)
    assert trace.protocol == "native" and trace.complete
    assert trace.intent == Intent("diagnose", 0.9, "rules", "test says diagnose")
    assert "1,180 ms" in trace.answer and seen and seen[0].action == "p99_ms"


def test_no_llm_runs_the_playbook_and_says_so() -> None:
    playbook = RecordingPlaybook()
    trace = ask("why is order slow?", llm=None, route="diagnose", playbook=playbook)
    assert trace.protocol == "playbook" and NO_MODEL_NOTE in trace.answer
    assert [q.text for q in playbook.questions] == ["why is order slow?"]


def test_llm_down_at_the_first_call_falls_back_to_the_playbook(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"status": 500, "repeat": 10})
    playbook = RecordingPlaybook()
    trace = ask(
        "why is order slow?", llm=scripted_openai_llm(scripted_llm, max_retries=0), route="diagnose", playbook=playbook
    )
    assert trace.protocol == "playbook" and MODEL_DOWN_NOTE in trace.answer
    assert len(playbook.questions) == 1


def test_lookup_answers_once_with_at_most_one_tool(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {"content": "", "tool_calls": [{"name": "p99_ms", "arguments": {"service": "order"}}]},
        {"content": "order p99 is 1180 ms now."},
    )
    trace = ask("what is the p99 of order now", llm=scripted_openai_llm(scripted_llm), route="lookup")
    assert trace.protocol == "single" and trace.intent is not None and trace.intent.route == "lookup"
    assert "1180 ms" in trace.answer
    assert len(scripted_llm.chat_requests) == 2


def test_help_is_canned_and_costs_no_model_call(scripted_llm: ScriptedLLM) -> None:
    trace = ask("help", llm=scripted_openai_llm(scripted_llm), route="help")
    assert trace.answer == HELP_ANSWER and trace.totals.tokens == 0
    assert scripted_llm.chat_requests == []


def test_a_request_to_act_gets_the_read_only_answer_and_runs_nothing(scripted_llm: ScriptedLLM) -> None:
    playbook = RecordingPlaybook()
    trace = ask("rollback payment to v1.8.2", llm=scripted_openai_llm(scripted_llm), route="act", playbook=playbook)
    assert trace.answer == READ_ONLY_ANSWER and "read-only" in trace.answer
    assert trace.steps == () and scripted_llm.chat_requests == [] and playbook.questions == []
    assert trace.intent is not None and trace.intent.route == "act"


def test_chitchat_without_a_model_gets_a_canned_reply() -> None:
    trace = ask("hi", llm=None, route="chitchat")
    assert trace.complete and "opsbot" in trace.answer


def test_an_empty_chitchat_reply_gets_the_canned_reply(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"content": ""})
    trace = ask("hi", llm=scripted_openai_llm(scripted_llm), route="chitchat")
    assert trace.complete and "opsbot" in trace.answer and "Partial" not in trace.answer


def test_a_failing_classifier_never_reaches_the_user() -> None:
    def broken(text: str) -> Intent:
        raise RuntimeError("boom")

    trace = Router(llm=None, tools=TOOLS, budget=Budget(), classify=broken, playbook=RecordingPlaybook())(
        Question("why?")
    )
    assert not trace.complete and "internal error" in trace.answer
    assert trace.intent is not None and trace.intent.tier == "default"


def test_unverified_numbers_are_marked(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {"content": "", "tool_calls": [{"name": "p99_ms", "arguments": {"service": "order"}}]},
        {"content": "order p99 rose to 1,180 ms; the pool has 9876 waiting threads."},
    )
    trace = ask("why is order slow?", llm=scripted_openai_llm(scripted_llm), route="diagnose")
    # Flagged in the answer the user reads, not only in the notes; 1,180 ms is backed by the observation.
    assert trace.answer.splitlines()[-1] == "unverified: 9876"
    assert "unverified: 9876" in trace.notes


@pytest.mark.parametrize("route", ["diagnose", "lookup"])
def test_no_llm_and_no_playbook_is_an_honest_partial(route: str) -> None:
    trace = ask("why is order slow?", llm=None, route=route)
    assert not trace.complete and trace.stop_reason is StopReason.LLM_UNAVAILABLE


def test_a_lookup_without_a_model_or_a_quick_lookup_runs_the_playbook() -> None:
    playbook = RecordingPlaybook()  # no `lookup` bound: today's path, the playbook, says so
    trace = ask("what is the p99 of order now", llm=None, route="lookup", playbook=playbook)
    assert trace.protocol == "playbook" and NO_MODEL_NOTE in trace.answer and len(playbook.questions) == 1


def test_a_quick_lookup_that_misses_runs_the_playbook_and_says_why() -> None:
    playbook = RecordingPlaybook()
    trace = ask("what is the p99 of billing now", llm=None, route="lookup", playbook=playbook, lookup=missing_lookup)
    assert trace.protocol == "playbook" and len(playbook.questions) == 1
    assert trace.notes[0].startswith("The quick lookup could not answer this with one query (it names no known")
    assert trace.answer.startswith("_The quick lookup could not answer") and NO_MODEL_NOTE in trace.answer


def test_a_quick_only_lookup_that_misses_hands_the_question_back_and_runs_nothing_more() -> None:
    playbook = RecordingPlaybook()
    router = Router(
        llm=None, tools=TOOLS, budget=Budget(), classify=route_to("lookup"), playbook=playbook, lookup=missing_lookup
    )
    back = router(Question("what is the p99 of billing now", quick_only=True))
    why = handed_back(back)
    assert why.startswith("The quick lookup could not answer this with one query") and playbook.questions == []
    assert not back.complete
    run = router(
        Question("what is the p99 of billing now", intent=Intent("diagnose", 1.0, "rules", "escalated"), escalated=why)
    )
    assert run.protocol == "playbook" and run.answer.startswith(f"_{why}_") and run.notes[0] == why
    assert handed_back(run) == ""


def test_a_quick_only_lookup_with_an_unusable_answer_hands_back_without_a_second_model_call(
    scripted_llm: ScriptedLLM,
) -> None:
    scripted_llm.script({"content": ""}, {"content": "never asked"})
    router = Router(
        llm=scripted_openai_llm(scripted_llm), tools=TOOLS, budget=Budget(max_steps=4), classify=route_to("lookup")
    )
    back = router(Question("what is the p99 of order now", quick_only=True))
    assert "no usable answer" in handed_back(back) and len(scripted_llm.chat_requests) == 1


def test_an_empty_lookup_answer_falls_back_to_the_full_diagnosis(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {"content": ""},  # the cheap model answers the lookup with nothing
        {"content": "", "tool_calls": [{"name": "p99_ms", "arguments": {"service": "order"}}]},
        {"content": "order p99 is 1,180 ms, up from 212 ms at 15:05."},
    )
    trace = ask("what is the p99 of order now", llm=scripted_openai_llm(scripted_llm), route="lookup")
    assert trace.protocol == "native" and trace.complete and "1,180 ms" in trace.answer
    assert "Partial answer" not in trace.answer
    assert any("no usable answer" in note and "full diagnosis" in note for note in trace.notes)
    assert trace.intent is not None and trace.intent.route == "lookup"
    assert len(scripted_llm.chat_requests) == 3


def test_an_empty_lookup_answer_with_the_model_gone_falls_back_to_the_playbook(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"content": ""}, {"status": 500, "repeat": 10})
    playbook = RecordingPlaybook()
    trace = ask(
        "what is the p99 of order now",
        llm=scripted_openai_llm(scripted_llm, max_retries=0),
        route="lookup",
        playbook=playbook,
    )
    assert trace.protocol == "playbook" and MODEL_DOWN_NOTE in trace.answer
    assert len(playbook.questions) == 1
    assert any("no usable answer" in note for note in trace.notes)


def test_the_lookup_tool_runs_under_the_configured_tool_timeout(scripted_llm: ScriptedLLM) -> None:
    def slow_p99(service: str) -> str:
        """Current p99 latency of a service. Use for one current value."""
        time.sleep(1.0)
        return "p99 order: 1180 ms"

    scripted_llm.script(
        {"content": "", "tool_calls": [{"name": "slow_p99", "arguments": {"service": "order"}}]},
        {"content": "The p99 lookup timed out."},
    )
    router = Router(
        llm=scripted_openai_llm(scripted_llm),
        tools=Toolbox([tool(slow_p99)]),
        budget=Budget(),
        classify=route_to("lookup"),
        tool_timeout_s=0.2,
    )
    trace = router(Question("what is the p99 of order now"))
    assert trace.steps[0].action == "slow_p99" and trace.steps[0].status == "error"
    assert "timed out after 0.2 s" in trace.steps[0].observation


def quick_p99(question: Question, tools: Toolbox, **kwargs: Any) -> Trace | None:
    """A quick lookup that answers with one step."""
    step = Step(1, "", "p99_ms", {"service": "order"}, "p99 order: 1180 ms", "ok")
    if kwargs.get("on_step"):
        kwargs["on_step"](step)
    answer = "order p99 is 1,180 ms now."
    totals = Totals(steps=1, tool_calls=1)
    trace = Trace("q1", question.text, "single", (step,), answer, True, StopReason.FINISH, totals)
    return replace(trace, notes=("quick lookup: one query",))


def missing_lookup(question: Question, tools: Toolbox, **kwargs: Any) -> Trace | None:
    kwargs["on_miss"]("it names no known service")
    return None


def test_a_lookup_with_the_model_down_is_answered_by_the_quick_lookup_and_says_so(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"status": 500, "repeat": 10})
    seen: list[Step] = []
    trace = ask(
        "what is the p99 of order now",
        llm=scripted_openai_llm(scripted_llm, max_retries=0),
        route="lookup",
        lookup=quick_p99,
        on_step=seen.append,
    )
    assert trace.answer == f"_{LOOKUP_MODEL_DOWN_NOTE}_\norder p99 is 1,180 ms now."
    assert trace.notes[:2] == ("quick lookup: one query", LOOKUP_MODEL_DOWN_NOTE)
    assert trace.notes[2].startswith("LLM attempt 1 failed: HTTP 500")  # each failed attempt is on the record
    assert trace.notes[3].startswith("LLM unavailable")
    assert [s.index for s in seen] == [s.index for s in trace.steps]


def test_a_lookup_with_the_model_down_and_a_quick_miss_runs_the_playbook_once(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"status": 500, "repeat": 10})
    playbook = RecordingPlaybook()
    trace = ask(
        "what is the p99 of billing now",
        llm=scripted_openai_llm(scripted_llm, max_retries=0),
        route="lookup",
        lookup=missing_lookup,
        playbook=playbook,
    )
    assert trace.protocol == "playbook" and len(playbook.questions) == 1 and len(scripted_llm.chat_requests) == 1
    assert trace.answer.startswith("_The quick lookup could not answer this with one query (it names no known")
    assert MODEL_DOWN_NOTE in trace.answer
    assert trace.notes[0].startswith("The quick lookup could not answer") and MODEL_DOWN_NOTE in trace.notes
    assert trace.notes[-1].startswith("model attempt before the playbook: ")


def test_a_lookup_with_the_model_down_and_no_quick_lookup_runs_the_playbook(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"status": 500, "repeat": 10})
    playbook = RecordingPlaybook()
    trace = ask(
        "what is the p99 of order now",
        llm=scripted_openai_llm(scripted_llm, max_retries=0),
        route="lookup",
        playbook=playbook,
    )
    assert trace.protocol == "playbook" and len(playbook.questions) == 1
    assert trace.answer.startswith(f"_{MODEL_DOWN_NOTE}_") and trace.notes[0] == MODEL_DOWN_NOTE


def test_the_longest_fallback_chain_runs_each_attempt_once_and_numbers_steps_across_them(
    scripted_llm: ScriptedLLM,
) -> None:
    """An unusable lookup answer, then the diagnosis, whose model is gone: the playbook answers, once, and every
    attempt's steps are kept, numbered live as they are stored."""
    scripted_llm.script({"content": ""}, {"status": 500, "repeat": 10})
    playbook, seen = RecordingPlaybook(), list[Step]()
    trace = ask(
        "what is the p99 of order now",
        llm=scripted_openai_llm(scripted_llm, max_retries=0),
        route="lookup",
        lookup=quick_p99,  # bound but not asked: the model is there, only its answer was unusable
        playbook=playbook,
        on_step=seen.append,
    )
    assert trace.protocol == "playbook" and len(playbook.questions) == 1 and len(scripted_llm.chat_requests) == 2
    assert trace.notes[0] == LOOKUP_EMPTY_NOTE and trace.notes[-1].startswith("model attempt before the playbook")
    assert trace.answer.startswith(f"_{MODEL_DOWN_NOTE}_")
    assert [s.index for s in trace.steps] == list(range(1, len(trace.steps) + 1))
    assert [s.index for s in seen] == [s.index for s in trace.steps] and trace.steps[-1].action == "p99_ms"
    assert trace.totals.steps == len(trace.steps) and trace.totals.tool_calls == 1


def test_an_escalated_question_says_why_when_the_agent_answers(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {"content": "", "tool_calls": [{"name": "p99_ms", "arguments": {"service": "order"}}]},
        {"content": "order p99 rose from 212 ms to 1,180 ms at 15:05."},
    )
    why = "The quick lookup could not answer this with one query (unsure), so the full diagnosis ran instead."
    router = Router(llm=scripted_openai_llm(scripted_llm), tools=TOOLS, budget=Budget(), classify=route_to("lookup"))
    escalated = Intent("diagnose", 1.0, "rules", "escalated")
    trace = router(Question("what is the p99 of order now", intent=escalated, escalated=why))
    assert trace.protocol == "native" and trace.answer.startswith(f"_{why}_\norder p99 rose")
    assert trace.notes[0] == why and trace.intent == escalated
