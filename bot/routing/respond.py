"""The one responder every surface calls: classify, then the cheapest path that answers the question.

diagnose -> the agent loop, or the deterministic playbook when no LLM is configured or it is unavailable at the
first call (the answer says so); lookup -> one answer with at most one tool call, or without a model the quick
lookup (one query), else the playbook with a note saying why (a `quick_only` question, from a surface with a
diagnosis lane of its own, is handed back instead: see HANDED_BACK); chitchat -> one cheap answer; help -> canned help;
act (roll back, restart, page...) -> the canned read-only answer.
The Intent is recorded on the Trace, grounding marks unverified numbers, redaction runs last. Never raises: an
unexpected failure becomes a labelled answer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Literal, Protocol

from bot.engine.context import ContextLimits
from bot.engine.llm import LLM
from bot.engine.loop import answer_once, run_agent
from bot.engine.types import (
    HANDED_BACK,
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
from bot.playbook.confirmation import confirmation_from_trace
from bot.safety.grounding import mark_unverified
from bot.safety.inbound import clean_inbound, has_request_text
from bot.safety.redact import redact, redact_trace
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
READ_ONLY_ANSWER = (
    "I'm read-only: I can't roll back, restart, scale, page anyone or open tickets, so I did nothing. "
    "I can investigate first and show you the evidence for that decision: ask me, e.g. "
    "\"why is payment failing since the deploy?\"\n"
    "我只有只读权限：不能回滚、重启、扩容、呼人或建工单。可以先问我「payment 为什么发布后报错」，我来排查并给出证据。"
)
GREETING_ANSWER = "Hi! I'm opsbot. Ask me why a service misbehaves, or say `help`."
NO_MODEL_NOTE = "No LLM is configured, so this is the deterministic playbook's diagnosis (no model involved)."
MODEL_DOWN_NOTE = "The LLM was unavailable, so this is the deterministic playbook's diagnosis (no model involved)."
LOOKUP_MODEL_DOWN_NOTE = "The LLM was unavailable, so the quick lookup answered without it."
LOOKUP_EMPTY_NOTE = "The quick lookup got no usable answer from the model, so the full diagnosis ran instead."
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
    # models whose server ignored the tools they were offered: they get the text protocol from then on
    _text_models: set[str] = field(default_factory=set, compare=False, repr=False)

    def __call__(self, question: Question, on_step: StepObserver | None = None) -> Trace:
        """Answer `question` on the route its intent calls for; the Trace records the route and why."""
        started = time.monotonic()
        intent = question.intent or _DEFAULT_INTENT
        # every surface cleans its own input; this repeats it for any caller that did not (idempotent)
        # and nothing a user pasted (a key, a password) is sent to the model
        question = replace(question, text=redact(clean_inbound(question.text)),
                           history=tuple(redact(h) for h in question.history))
        try:
            intent = question.intent or self.classify(question.text)
            log.info("intent route=%s tier=%s confidence=%.2f reason=%s", intent.route, intent.tier,
                     intent.confidence, intent.reason)
            trace = replace(self._answer(question, intent, on_step), intent=intent)
            if intent.route in ("diagnose", "lookup"):
                trace = mark_unverified(_confirmed(trace))
            return redact_trace(trace)
        except Exception as exc:  # the contract: never raise, always answer
            log.exception("respond failed question=%r", question.text[:200])
            return internal_error_trace(question, exc, intent=intent,
                                        elapsed_ms=int((time.monotonic() - started) * 1000))

    def _answer(self, question: Question, intent: Intent, on_step: StepObserver | None) -> Trace:
        if intent.route == "help":
            return trace_from_answer(question, HELP_ANSWER)
        if intent.route == "act":
            return trace_from_answer(question, READ_ONLY_ANSWER)
        if intent.route == "chitchat":
            return self._chitchat(question, on_step)
        if intent.route == "lookup" and self.llm is not None:
            return self._lookup(question, self.llm, on_step)
        if intent.route == "lookup":
            return self._quick_lookup(question, on_step)
        trace = self._diagnose(question, on_step)
        if question.escalated:  # a quick answer handed this back: say why, as the inline fallback does
            return replace(trace, answer=f"_{question.escalated}_\n{trace.answer}",
                           notes=(question.escalated, *trace.notes))
        return trace

    def _diagnose(self, question: Question, on_step: StepObserver | None) -> Trace:
        if self.llm is None:
            return self._run_playbook(question, on_step, note=NO_MODEL_NOTE)
        protocol, chosen = self._protocol_for(self.llm.model)
        trace = run_agent(question, self.llm, self.tools, self.budget, protocol=protocol, on_step=on_step,
                          limits=self.limits, tool_timeout_s=self.tool_timeout_s)
        if trace.protocol == "text" and protocol == "native":  # the server ignored the tools: text from now on
            self._text_models.add(self.llm.model)
        if chosen:
            trace = replace(trace, notes=(chosen, *trace.notes))
        return self._playbook_if_down(trace, question, on_step)

    def _protocol_for(self, model: str) -> tuple[Literal["text", "native"], str]:
        """The protocol for this model, and a note when it is not the configured one."""
        if self.protocol == "native" and model in self._text_models:
            return "text", f"text protocol: an earlier run found that the server ignores the tools offered to {model}"
        return self.protocol, ""

    def _lookup(self, question: Question, llm: LLM, on_step: StepObserver | None) -> Trace:
        """One cheap answer; a dead model gets the quick lookup, an empty reply the full diagnosis."""
        timeout_s = self.budget.time_budget_s if self.tool_timeout_s is None else self.tool_timeout_s
        lookup = answer_once(question, llm, self.tools, allow_tool=True, on_step=on_step, tool_timeout_s=timeout_s,
                             llm_timeout_s=self.budget.time_budget_s)
        if lookup.stop_reason is StopReason.LLM_UNAVAILABLE and lookup.totals.tool_calls == 0:
            return self._quick_lookup(question, on_step, down=lookup)
        if lookup.stop_reason is not StopReason.FORMAT_ERRORS:
            return lookup
        if question.quick_only:
            return _hand_back(question, lookup, LOOKUP_EMPTY_NOTE)
        log.warning("lookup got no usable answer, running the full diagnosis trace_id=%s", lookup.trace_id)
        fallback = _after(lookup, self._diagnose(question, _shifted(on_step, len(lookup.steps))))
        return replace(fallback, notes=(LOOKUP_EMPTY_NOTE, *lookup.notes, *fallback.notes))

    def _quick_lookup(self, question: Question, on_step: StepObserver | None, *, down: Trace | None = None) -> Trace:
        """The model-free quick lookup; when it can't tell what to read, the diagnosis runs with a note saying why.

        `down` is the single answer that failed because the LLM was unavailable: its notes and time are kept, and
        the diagnosis it falls back to is the playbook, since the model already failed.
        """
        if self.lookup is None:
            if question.quick_only:
                return _hand_back(question, down, "No quick lookup is configured, so the full diagnosis runs instead.")
            return self._fallback_diagnosis(question, on_step, down)
        misses: list[str] = []
        shift = len(down.steps) if down is not None else 0
        quick = self.lookup(question, self.tools, on_step=_shifted(on_step, shift), on_miss=misses.append)
        if quick is not None and down is not None:
            return replace(_after(down, quick), answer=f"_{LOOKUP_MODEL_DOWN_NOTE}_\n{quick.answer}",
                           notes=(*quick.notes, LOOKUP_MODEL_DOWN_NOTE, *down.notes))
        if quick is not None:
            return quick
        why = (f"The quick lookup could not answer this with one query ({'; '.join(misses) or 'unsure'}), "
               "so the full diagnosis ran instead.")
        if question.quick_only:
            return _hand_back(question, down, why)
        log.info("quick lookup missed, running the full diagnosis: %s", why)
        fallback = self._fallback_diagnosis(question, on_step, down)
        return replace(fallback, answer=f"_{why}_\n{fallback.answer}", notes=(why, *fallback.notes))

    def _fallback_diagnosis(self, question: Question, on_step: StepObserver | None, down: Trace | None) -> Trace:
        return self._diagnose(question, on_step) if down is None else self._playbook_if_down(down, question, on_step)

    def _playbook_if_down(self, trace: Trace, question: Question, on_step: StepObserver | None) -> Trace:
        """The playbook when the model failed before any tool ran (down, or nothing usable); a run that got
        somewhere keeps its own partial answer. The failed attempt's time and tokens stay in the totals."""
        if trace.totals.tool_calls or self.playbook is None:
            return trace
        if trace.stop_reason is StopReason.LLM_UNAVAILABLE:
            call = next((n.split(":")[0] for n in trace.notes if n.startswith("LLM unavailable")), "LLM unavailable")
            log.warning("%s, before any tool ran: running the playbook trace_id=%s", call, trace.trace_id)
            note = MODEL_DOWN_NOTE
        elif trace.stop_reason is StopReason.FORMAT_ERRORS:
            note = self._unusable_note(trace)
            log.warning("%s trace_id=%s", note, trace.trace_id)
        else:
            return trace
        fallback = _after(trace, self._run_playbook(question, _shifted(on_step, len(trace.steps)), note=note))
        return replace(fallback, notes=(
            *fallback.notes, *trace.notes, f"model attempt before the playbook: {_spent(trace.totals)}"))

    def _unusable_note(self, trace: Trace) -> str:
        model = self.llm.model if self.llm is not None else trace.model
        endpoint = getattr(self.llm, "endpoint", "") or "its endpoint"
        return (f"The model {model} at {endpoint} produced nothing usable ({trace.totals.format_errors} unreadable "
                "replies), so this is the deterministic playbook's diagnosis (no model involved).")

    def _run_playbook(self, question: Question, on_step: StepObserver | None, *, note: str) -> Trace:
        if self.playbook is None:
            return trace_from_answer(
                question, f"{note.split(',')[0]}, and no playbook is available: I can't diagnose.",
                complete=False, stop_reason=StopReason.LLM_UNAVAILABLE)
        trace = self.playbook(question, self.tools, on_step=on_step)
        return replace(trace, answer=f"_{note}_\n\n{trace.answer}", notes=(*trace.notes, note))

    def _chitchat(self, question: Question, on_step: StepObserver | None) -> Trace:
        if self.llm is None or not has_request_text(question.text):  # an emoji or a mark alone costs no model call
            return trace_from_answer(question, GREETING_ANSWER)
        trace = answer_once(question, self.llm, self.tools, allow_tool=False, on_step=on_step,
                            llm_timeout_s=self.budget.time_budget_s)
        if trace.stop_reason is StopReason.FINISH:
            return trace
        # an unreachable model or an unusable reply gets the canned one; what the attempt cost stays on record
        return replace(_after(trace, trace_from_answer(question, GREETING_ANSWER, notes=trace.notes)),
                       model=trace.model)


def _confirmed(trace: Trace) -> Trace:
    """The trace with what confirms its cause, from the tools' evidence alone (never from the answer's words)."""
    confirmed_by = confirmation_from_trace(trace)
    return replace(trace, confirmed_by=confirmed_by) if confirmed_by else trace


def _hand_back(question: Question, attempt: Trace | None, why: str) -> Trace:
    """A quick_only question that needs the full diagnosis: the attempt so far (kept on record) and why."""
    base = attempt or trace_from_answer(question, f"_{why}_", complete=False)
    return replace(base, complete=False, notes=(*base.notes, f"{HANDED_BACK}{why}"))


def _spent(totals: Totals) -> str:
    return f"{totals.tokens:,} tokens, {totals.elapsed_ms / 1000:.1f} s, {totals.steps} steps"


def _after(attempt: Trace, fallback: Trace) -> Trace:
    """The fallback's trace with the failed attempt kept: its steps first (the fallback's renumbered after them, as
    `_shifted` showed them live), its time and tokens in the totals. Nothing spent vanishes from the record."""
    shift = len(attempt.steps)
    steps = (*attempt.steps, *(replace(step, index=step.index + shift) for step in fallback.steps))
    a, f = attempt.totals, fallback.totals
    totals = Totals(steps=len(steps), prompt_tokens=a.prompt_tokens + f.prompt_tokens,
                    completion_tokens=a.completion_tokens + f.completion_tokens, elapsed_ms=a.elapsed_ms + f.elapsed_ms,
                    tool_calls=a.tool_calls + f.tool_calls, tool_errors=a.tool_errors + f.tool_errors,
                    format_errors=a.format_errors + f.format_errors)
    return replace(fallback, steps=steps, totals=totals)


def _shifted(on_step: StepObserver | None, by: int) -> StepObserver | None:
    """An observer that numbers the fallback's steps after the attempt's (the same numbers `_after` keeps)."""
    if on_step is None or by == 0:
        return on_step
    observer = on_step
    return lambda step: observer(replace(step, index=step.index + by))
