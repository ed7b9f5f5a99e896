"""The one function every surface calls: classify, then the cheapest path that answers the question.

diagnose -> run_agent, or the deterministic playbook when no LLM is configured or it is unavailable at the first
call (the answer says so); lookup -> answer_once with at most one tool call, or without a model the quick
lookup (one query), else the playbook with a note saying why; chitchat -> one cheap answer;
help -> canned help. The Intent is recorded on the Trace, grounding marks unverified numbers, redaction runs
last. Never raises: an unexpected failure becomes a labelled answer.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial
from typing import Literal

from bot.engine.context import ContextLimits
from bot.engine.llm import LLM
from bot.engine.loop import answer_once, run_agent
from bot.engine.types import Budget, Intent, Question, StepObserver, StopReason, Totals, Trace
from bot.safety.grounding import mark_unverified
from bot.safety.redact import redact_trace
from tools.base import Toolbox

log = logging.getLogger(__name__)

Responder = Callable[[Question, StepObserver | None], Trace]
Playbook = Callable[..., Trace]  # run_playbook(question, tools, on_step=...) with the topology bound
Lookup = Callable[..., Trace | None]  # answer_lookup(question, tools, on_step=, on_miss=) with roles and services bound

HELP_ANSWER = (
    "I'm opsbot. I investigate production incidents with read-only queries over metrics (Prometheus), logs and "
    "deploy records, and I show every step I take.\n"
    "- Ask why something broke: \"why is order p99 high since 15:05?\" / \"order 服务 P99 飙升，帮我排查一下\"\n"
    "- Ask for one number: \"what is the p99 of order now?\" / \"当前 order 的 QPS 是多少\"\n"
    "- Follow up in the same thread: \"and what about payment?\"\n"
    "When a budget stops me early I say so and label the answer partial."
)
NO_MODEL_NOTE = "No LLM is configured, so this is the deterministic playbook's diagnosis (no model involved)."
MODEL_DOWN_NOTE = "The LLM was unavailable, so this is the deterministic playbook's diagnosis (no model involved)."
LOOKUP_MODEL_DOWN_NOTE = "The LLM was unavailable, so the quick lookup answered without it."
_DEFAULT_INTENT = Intent("diagnose", 0.0, "default", "classifier failed; defaulting to diagnose")


def respond(
    question: Question,
    *,
    llm: LLM | None,
    tools: Toolbox,
    budget: Budget,
    protocol: str,
    classify: Callable[[str], Intent],
    playbook: Playbook | None,
    on_step: StepObserver | None = None,
    limits: ContextLimits | None = None,
    tool_timeout_s: float | None = 20.0,
    lookup: Lookup | None = None,
) -> Trace:
    """Answer `question` on the route its intent calls for; the Trace records the route and why."""
    started = time.monotonic()
    intent = _DEFAULT_INTENT
    try:
        intent = classify(question.text)
        log.info("intent route=%s tier=%s confidence=%.2f reason=%s", intent.route, intent.tier,
                 intent.confidence, intent.reason)
        if intent.route == "help":
            trace = canned_trace(question, HELP_ANSWER)
        elif intent.route == "chitchat":
            trace = _chitchat(question, llm, tools, on_step)
        else:
            agent_protocol: Literal["text", "native"] = "text" if protocol == "text" else "native"
            diagnose = partial(_diagnose, question, llm, tools, budget, agent_protocol, playbook, on_step, limits,
                               tool_timeout_s)
            if intent.route == "lookup" and llm is None:
                trace = _quick_lookup(question, tools, lookup, on_step, diagnose)
            elif intent.route == "lookup" and llm is not None:
                lookup_timeout_s = budget.time_budget_s if tool_timeout_s is None else tool_timeout_s
                fallbacks = _Fallbacks(lookup, playbook, diagnose)
                trace = _lookup(question, llm, tools, fallbacks, on_step, lookup_timeout_s)
            else:
                trace = diagnose()
        trace = replace(trace, intent=intent)
        if intent.route in ("diagnose", "lookup"):
            trace = mark_unverified(trace)
        return redact_trace(trace)
    except Exception as exc:  # the contract: never raise, always answer
        log.exception("respond failed question=%r", question.text[:200])
        return failure_trace(question, intent, exc, started)


def _diagnose(
    question: Question,
    llm: LLM | None,
    tools: Toolbox,
    budget: Budget,
    protocol: Literal["text", "native"],
    playbook: Playbook | None,
    on_step: StepObserver | None,
    limits: ContextLimits | None,
    tool_timeout_s: float | None,
) -> Trace:
    if llm is None:
        return _run_playbook(question, tools, playbook, on_step, NO_MODEL_NOTE)
    trace = run_agent(question, llm, tools, budget, protocol=protocol, on_step=on_step, limits=limits,
                      tool_timeout_s=tool_timeout_s)
    return _playbook_if_down(trace, question, tools, playbook, on_step)


@dataclass(frozen=True)
class _Fallbacks:
    """What a lookup falls back to: the quick lookup when the model is down, then the playbook or the loop."""

    lookup: Lookup | None
    playbook: Playbook | None
    diagnose: Callable[[], Trace]


def _lookup(question: Question, llm: LLM, tools: Toolbox, fallbacks: _Fallbacks, on_step: StepObserver | None,
            tool_timeout_s: float) -> Trace:
    """One cheap answer; an empty reply (a bare "partial" label) falls back to the full diagnosis."""
    lookup = answer_once(question, llm, tools, allow_tool=True, on_step=on_step, tool_timeout_s=tool_timeout_s)
    if lookup.stop_reason is StopReason.LLM_UNAVAILABLE and lookup.totals.tool_calls == 0:
        playbook_run = partial(_playbook_if_down, lookup, question, tools, fallbacks.playbook, on_step)
        return _quick_lookup(question, tools, fallbacks.lookup, on_step, playbook_run, down=lookup)
    if lookup.stop_reason is not StopReason.FORMAT_ERRORS:
        return lookup
    log.warning("lookup got an empty answer, running the full diagnosis trace_id=%s", lookup.trace_id)
    fallback = fallbacks.diagnose()
    why = "The quick lookup got an empty answer from the model, so the full diagnosis ran instead."
    spent, more = fallback.totals, lookup.totals  # the lookup's tokens were spent too
    totals = replace(spent, prompt_tokens=spent.prompt_tokens + more.prompt_tokens,
                     completion_tokens=spent.completion_tokens + more.completion_tokens,
                     elapsed_ms=spent.elapsed_ms + more.elapsed_ms)
    return replace(fallback, totals=totals, notes=(why, *lookup.notes, *fallback.notes))


def _quick_lookup(question: Question, tools: Toolbox, lookup: Lookup | None, on_step: StepObserver | None,
                  diagnose: Callable[[], Trace], *, down: Trace | None = None) -> Trace:
    """The model-free quick lookup; when it can't tell what to read, `diagnose` runs with a note saying why.

    `down` is the single answer that failed because the LLM was unavailable: its notes and time are kept.
    """
    if lookup is None:
        return diagnose()
    misses: list[str] = []
    quick = lookup(question, tools, on_step=on_step, on_miss=misses.append)
    if quick is not None and down is not None:
        totals = replace(quick.totals, elapsed_ms=quick.totals.elapsed_ms + down.totals.elapsed_ms)
        return replace(quick, answer=f"_{LOOKUP_MODEL_DOWN_NOTE}_\n{quick.answer}", totals=totals,
                       notes=(*quick.notes, LOOKUP_MODEL_DOWN_NOTE, *down.notes))
    if quick is not None:
        return quick
    why = f"The quick lookup could not answer this with one query ({'; '.join(misses) or 'unsure'}), " \
          "so the full diagnosis ran instead."
    log.info("quick lookup missed, running the full diagnosis: %s", why)
    fallback = diagnose()
    return replace(fallback, answer=f"_{why}_\n{fallback.answer}", notes=(why, *fallback.notes))


def _playbook_if_down(trace: Trace, question: Question, tools: Toolbox, playbook: Playbook | None,
                      on_step: StepObserver | None) -> Trace:
    # Only when the model failed before any tool ran: a run that got somewhere keeps its own partial answer.
    if trace.stop_reason is StopReason.LLM_UNAVAILABLE and trace.totals.tool_calls == 0 and playbook is not None:
        log.warning("LLM unavailable at the first call, running the playbook trace_id=%s", trace.trace_id)
        fallback = _run_playbook(question, tools, playbook, on_step, MODEL_DOWN_NOTE)
        return replace(fallback, notes=(*fallback.notes, *trace.notes))
    return trace


def _run_playbook(question: Question, tools: Toolbox, playbook: Playbook | None, on_step: StepObserver | None,
                  note: str) -> Trace:
    if playbook is None:
        return canned_trace(question, f"{note.split(',')[0]}, and no playbook is available: I can't diagnose.",
                            complete=False, stop_reason=StopReason.LLM_UNAVAILABLE)
    trace = playbook(question, tools, on_step=on_step)
    return replace(trace, answer=f"_{note}_\n\n{trace.answer}", notes=(*trace.notes, note))


def _chitchat(question: Question, llm: LLM | None, tools: Toolbox, on_step: StepObserver | None) -> Trace:
    if llm is not None:
        trace = answer_once(question, llm, tools, allow_tool=False, on_step=on_step)
        if trace.stop_reason is StopReason.FINISH:  # an unreachable model or an empty reply gets the canned one
            return trace
    return canned_trace(question, "Hi! I'm opsbot. Ask me why a service misbehaves, or say `help`.")


def canned_trace(question: Question, answer: str, *, complete: bool = True,
                 stop_reason: StopReason = StopReason.FINISH) -> Trace:
    """A trace for an answer that needed no model and no tool."""
    return Trace(
        trace_id=uuid.uuid4().hex,
        question=question.text,
        protocol="single",
        steps=(),
        answer=answer,
        complete=complete,
        stop_reason=stop_reason,
        totals=Totals(),
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def failure_trace(question: Question, intent: Intent, exc: Exception, started: float) -> Trace:
    """The answer when something nobody anticipated broke; details go to the log, not to the user."""
    trace = canned_trace(
        question,
        "Sorry, I hit an internal error while answering and have no conclusion. The error is logged; "
        "please try again, or check the dashboards directly.",
        complete=False,
    )
    elapsed_ms = int((time.monotonic() - started) * 1000)
    return replace(trace, intent=intent, totals=Totals(elapsed_ms=elapsed_ms),
                   notes=(f"internal error: {type(exc).__name__}",))
