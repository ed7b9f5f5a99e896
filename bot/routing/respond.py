"""The one responder every surface calls: classify, then the cheapest path that answers the question.

diagnose -> the agent loop, or the deterministic playbook when no LLM is configured or it is unavailable at the
first call (the answer says so); lookup -> one answer with at most one tool call, or without a model the quick
lookup (one query), else the playbook with a note saying why; chitchat -> one cheap answer; help -> canned help.
The Intent is recorded on the Trace, grounding marks unverified numbers, redaction runs last. Never raises: an
unexpected failure becomes a labelled answer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal, Protocol

from bot.engine.context import ContextLimits
from bot.engine.llm import LLM
from bot.engine.loop import answer_once, run_agent
from bot.engine.types import (
    Budget,
    Intent,
    Question,
    StepObserver,
    StopReason,
    Totals,
    Trace,
    internal_error_trace,
    trace_from_answer,
)
from bot.safety.grounding import mark_unverified
from bot.safety.redact import redact_trace
from tools.base import Toolbox

log = logging.getLogger(__name__)

Classify = Callable[[str], Intent]
Miss = Callable[[str], None]


class Playbook(Protocol):
    """The model-free diagnosis, with its topology and metric roles already bound."""

    def __call__(self, question: Question, tools: Toolbox, *, on_step: StepObserver | None = None,
                 now: datetime | None = None) -> Trace: ...


class Lookup(Protocol):
    """The model-free quick lookup: one query, or None (and `on_miss` says why) when it can't tell what to read."""

    def __call__(self, question: Question, tools: Toolbox, *, on_step: StepObserver | None = None,
                 on_miss: Miss | None = None) -> Trace | None: ...


HELP_ANSWER = (
    "I'm opsbot. I investigate production incidents with read-only queries over metrics (Prometheus), logs and "
    "deploy records, and I show every step I take.\n"
    "- Ask why something broke: \"why is order p99 high since 15:05?\" / \"order 服务 P99 飙升，帮我排查一下\"\n"
    "- Ask for one number: \"what is the p99 of order now?\" / \"当前 order 的 QPS 是多少\"\n"
    "- Follow up in the same thread: \"and what about payment?\"\n"
    "When a budget stops me early I say so and label the answer partial."
)
GREETING_ANSWER = "Hi! I'm opsbot. Ask me why a service misbehaves, or say `help`."
NO_MODEL_NOTE = "No LLM is configured, so this is the deterministic playbook's diagnosis (no model involved)."
MODEL_DOWN_NOTE = "The LLM was unavailable, so this is the deterministic playbook's diagnosis (no model involved)."
LOOKUP_MODEL_DOWN_NOTE = "The LLM was unavailable, so the quick lookup answered without it."
LOOKUP_EMPTY_NOTE = "The quick lookup got an empty answer from the model, so the full diagnosis ran instead."
_DEFAULT_INTENT = Intent("diagnose", 0.0, "default", "classifier failed; defaulting to diagnose")


@dataclass(frozen=True)
class Router:
    """Everything a question may need, bound once: call it with a question (it is a Responder)."""

    llm: LLM | None
    tools: Toolbox
    budget: Budget
    classify: Classify
    playbook: Playbook | None = None
    lookup: Lookup | None = None
    protocol: Literal["text", "native"] = "native"
    limits: ContextLimits | None = None
    tool_timeout_s: float | None = 20.0

    def __call__(self, question: Question, on_step: StepObserver | None = None) -> Trace:
        """Answer `question` on the route its intent calls for; the Trace records the route and why."""
        started = time.monotonic()
        intent = question.intent or _DEFAULT_INTENT
        try:
            intent = question.intent or self.classify(question.text)
            log.info("intent route=%s tier=%s confidence=%.2f reason=%s", intent.route, intent.tier,
                     intent.confidence, intent.reason)
            trace = replace(self._answer(question, intent, on_step), intent=intent)
            if intent.route in ("diagnose", "lookup"):
                trace = mark_unverified(trace)
            return redact_trace(trace)
        except Exception as exc:  # the contract: never raise, always answer
            log.exception("respond failed question=%r", question.text[:200])
            return internal_error_trace(question, exc, intent=intent,
                                        elapsed_ms=int((time.monotonic() - started) * 1000))

    def _answer(self, question: Question, intent: Intent, on_step: StepObserver | None) -> Trace:
        if intent.route == "help":
            return trace_from_answer(question, HELP_ANSWER)
        if intent.route == "chitchat":
            return self._chitchat(question, on_step)
        if intent.route == "lookup" and self.llm is not None:
            return self._lookup(question, self.llm, on_step)
        if intent.route == "lookup":
            return self._quick_lookup(question, on_step)
        return self._diagnose(question, on_step)

    def _diagnose(self, question: Question, on_step: StepObserver | None) -> Trace:
        if self.llm is None:
            return self._run_playbook(question, on_step, note=NO_MODEL_NOTE)
        trace = run_agent(question, self.llm, self.tools, self.budget, protocol=self.protocol, on_step=on_step,
                          limits=self.limits, tool_timeout_s=self.tool_timeout_s)
        return self._playbook_if_down(trace, question, on_step)

    def _lookup(self, question: Question, llm: LLM, on_step: StepObserver | None) -> Trace:
        """One cheap answer; a dead model gets the quick lookup, an empty reply the full diagnosis."""
        timeout_s = self.budget.time_budget_s if self.tool_timeout_s is None else self.tool_timeout_s
        lookup = answer_once(question, llm, self.tools, allow_tool=True, on_step=on_step, tool_timeout_s=timeout_s)
        if lookup.stop_reason is StopReason.LLM_UNAVAILABLE and lookup.totals.tool_calls == 0:
            return self._quick_lookup(question, on_step, down=lookup)
        if lookup.stop_reason is not StopReason.FORMAT_ERRORS:
            return lookup
        log.warning("lookup got an empty answer, running the full diagnosis trace_id=%s", lookup.trace_id)
        fallback = self._diagnose(question, on_step)
        return replace(fallback, totals=_added(fallback.totals, lookup.totals),  # the lookup's tokens were spent too
                       notes=(LOOKUP_EMPTY_NOTE, *lookup.notes, *fallback.notes))

    def _quick_lookup(self, question: Question, on_step: StepObserver | None, *, down: Trace | None = None) -> Trace:
        """The model-free quick lookup; when it can't tell what to read, the diagnosis runs with a note saying why.

        `down` is the single answer that failed because the LLM was unavailable: its notes and time are kept, and
        the diagnosis it falls back to is the playbook, since the model already failed.
        """
        if self.lookup is None:
            return self._fallback_diagnosis(question, on_step, down)
        misses: list[str] = []
        quick = self.lookup(question, self.tools, on_step=on_step, on_miss=misses.append)
        if quick is not None and down is not None:
            totals = replace(quick.totals, elapsed_ms=quick.totals.elapsed_ms + down.totals.elapsed_ms)
            return replace(quick, answer=f"_{LOOKUP_MODEL_DOWN_NOTE}_\n{quick.answer}", totals=totals,
                           notes=(*quick.notes, LOOKUP_MODEL_DOWN_NOTE, *down.notes))
        if quick is not None:
            return quick
        why = (f"The quick lookup could not answer this with one query ({'; '.join(misses) or 'unsure'}), "
               "so the full diagnosis ran instead.")
        log.info("quick lookup missed, running the full diagnosis: %s", why)
        fallback = self._fallback_diagnosis(question, on_step, down)
        return replace(fallback, answer=f"_{why}_\n{fallback.answer}", notes=(why, *fallback.notes))

    def _fallback_diagnosis(self, question: Question, on_step: StepObserver | None, down: Trace | None) -> Trace:
        return self._diagnose(question, on_step) if down is None else self._playbook_if_down(down, question, on_step)

    def _playbook_if_down(self, trace: Trace, question: Question, on_step: StepObserver | None) -> Trace:
        # Only when the model failed before any tool ran: a run that got somewhere keeps its own partial answer.
        down_at_first_call = trace.stop_reason is StopReason.LLM_UNAVAILABLE and trace.totals.tool_calls == 0
        if down_at_first_call and self.playbook is not None:
            log.warning("LLM unavailable at the first call, running the playbook trace_id=%s", trace.trace_id)
            fallback = self._run_playbook(question, on_step, note=MODEL_DOWN_NOTE)
            return replace(fallback, notes=(*fallback.notes, *trace.notes))
        return trace

    def _run_playbook(self, question: Question, on_step: StepObserver | None, *, note: str) -> Trace:
        if self.playbook is None:
            return trace_from_answer(
                question, f"{note.split(',')[0]}, and no playbook is available: I can't diagnose.",
                complete=False, stop_reason=StopReason.LLM_UNAVAILABLE)
        trace = self.playbook(question, self.tools, on_step=on_step)
        return replace(trace, answer=f"_{note}_\n\n{trace.answer}", notes=(*trace.notes, note))

    def _chitchat(self, question: Question, on_step: StepObserver | None) -> Trace:
        if self.llm is not None:
            trace = answer_once(question, self.llm, self.tools, allow_tool=False, on_step=on_step)
            if trace.stop_reason is StopReason.FINISH:  # an unreachable model or an empty reply gets the canned one
                return trace
        return trace_from_answer(question, GREETING_ANSWER)


def _added(spent: Totals, more: Totals) -> Totals:
    """`spent` with the tokens and time of `more` added (an earlier attempt in the same answer)."""
    return replace(spent, prompt_tokens=spent.prompt_tokens + more.prompt_tokens,
                   completion_tokens=spent.completion_tokens + more.completion_tokens,
                   elapsed_ms=spent.elapsed_ms + more.elapsed_ms)
