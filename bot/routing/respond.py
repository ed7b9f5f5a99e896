"""The one responder every surface calls: classify, then the cheapest path that answers the question.

diagnose -> the agent loop, or the deterministic playbook when no LLM is configured or it is unavailable at the
first call (the answer says so); lookup -> one answer with at most one tool call, or without a model the quick
lookup (one query), else the playbook with a note saying why (a `quick_only` question, from a surface with a
diagnosis lane of its own, is handed back instead: see HANDED_BACK); chitchat -> one cheap answer (or a template for
a writing request without a model); help -> canned help;
act (roll back, restart, page...) -> the canned read-only answer.
The Intent is recorded on the Trace, grounding marks unverified numbers, redaction runs last. Never raises: an
unexpected failure becomes a labelled answer. The canned texts live in replies.py; attempts.py keeps a failed
attempt's steps and costs under the fallback that replaced it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal, Protocol

from bot.engine.types import (
    Budget,
    Intent,
    Question,
    StepObserver,
    StopReason,
    Trace,
    internal_error_trace,
    trace_from_answer,
)
from bot.routing.attempts import after_attempt, handed_back, shifted_observer, spent_text
from bot.routing.replies import (
    GREETING_ANSWER,
    HELP_ANSWER,
    LOOKUP_EMPTY_NOTE,
    LOOKUP_MODEL_DOWN_NOTE,
    MODEL_DOWN_NOTE,
    NO_MODEL_NOTE,
    READ_ONLY_ANSWER,
    WRITE_ANSWER,
)
from bot.safety.inbound import clean_inbound, has_request_text

if TYPE_CHECKING:  # what a route needs loads when the route first runs: building the Router imports none of it
    from datetime import datetime

    from bot.engine.context import ContextLimits
    from bot.engine.llm import LLM
    from tools.base import Toolbox

log = logging.getLogger(__name__)

Classify = Callable[[str], Intent]
Miss = Callable[[str], None]


class Playbook(Protocol):
    """The model-free diagnosis, with its topology and metric roles already bound."""

    def __call__(
        self, question: Question, tools: Toolbox, *, on_step: StepObserver | None = None, now: datetime | None = None
    ) -> Trace: ...


class Lookup(Protocol):
    """The model-free quick lookup: one query, or None (and `on_miss` says why) when it can't tell what to read."""

    def __call__(
        self, question: Question, tools: Toolbox, *, on_step: StepObserver | None = None, on_miss: Miss | None = None
    ) -> Trace | None: ...


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
        from bot.routing.intent import confirm_investigation, needs_confirmation, with_confirmation_cost
        from bot.safety.grounding import mark_unverified  # the rules compile with the first question, not at build
        from bot.safety.redact import redact, redact_trace

        started = time.monotonic()
        intent = question.intent or _DEFAULT_INTENT
        # every surface cleans its own input; this repeats it for any caller that did not (idempotent)
        # and nothing a user pasted (a key, a password) is sent to the model
        question = replace(
            question, text=redact(clean_inbound(question.text)), history=tuple(redact(h) for h in question.history)
        )
        try:
            intent = question.intent or self.classify(question.text)
            if self.llm is not None and needs_confirmation(intent):  # the second line of defence: the cheap model
                intent = confirm_investigation(question.text, intent, self.llm)  # confirms an investigation first
            log.info(
                "intent route=%s tier=%s confidence=%.2f reason=%s",
                intent.route,
                intent.tier,
                intent.confidence,
                intent.reason,
            )
            trace = with_confirmation_cost(replace(self._answer(question, intent, on_step), intent=intent))
            if intent.route in ("diagnose", "lookup"):
                trace = mark_unverified(_confirmed(trace))
            return redact_trace(trace)
        except Exception as exc:  # the contract: never raise, always answer
            log.exception("respond failed question=%r", question.text[:200])
            return internal_error_trace(
                question, exc, intent=intent, elapsed_ms=int((time.monotonic() - started) * 1000)
            )

    def _answer(self, question: Question, intent: Intent, on_step: StepObserver | None) -> Trace:
        if intent.route == "help":
            return trace_from_answer(question, HELP_ANSWER)
        if intent.route == "act":
            return trace_from_answer(question, READ_ONLY_ANSWER)
        if intent.route == "chitchat" and self.llm is None and intent.request == "write":
            return trace_from_answer(question, WRITE_ANSWER)  # a writing request without a model: a template
        if intent.route == "chitchat":
            return self._chitchat(question, on_step)
        if intent.route == "lookup" and self.llm is not None:
            return self._lookup(question, self.llm, on_step)
        if intent.route == "lookup":
            return self._quick_lookup(question, on_step)
        trace = self._diagnose(question, on_step)
        if question.escalated:  # a quick answer handed this back: say why, as the inline fallback does
            return replace(
                trace, answer=f"_{question.escalated}_\n{trace.answer}", notes=(question.escalated, *trace.notes)
            )
        return trace

    def _diagnose(self, question: Question, on_step: StepObserver | None) -> Trace:
        if self.llm is None:
            return self._run_playbook(question, on_step, note=NO_MODEL_NOTE)
        from bot.engine.loop import run_agent  # the loop (and its text reader) loads with the first model run

        protocol, chosen = self._protocol_for(self.llm.model)
        trace = run_agent(
            question,
            self.llm,
            self.tools,
            self.budget,
            protocol=protocol,
            on_step=on_step,
            limits=self.limits,
            tool_timeout_s=self.tool_timeout_s,
        )
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
        from bot.engine.loop import answer_once

        timeout_s = self.budget.time_budget_s if self.tool_timeout_s is None else self.tool_timeout_s
        lookup = answer_once(
            question,
            llm,
            self.tools,
            allow_tool=True,
            on_step=on_step,
            tool_timeout_s=timeout_s,
            llm_timeout_s=self.budget.time_budget_s,
        )
        if lookup.stop_reason is StopReason.LLM_UNAVAILABLE and lookup.totals.tool_calls == 0:
            return self._quick_lookup(question, on_step, down=lookup)
        if lookup.stop_reason is not StopReason.FORMAT_ERRORS:
            return lookup
        if question.quick_only:
            return handed_back(question, lookup, LOOKUP_EMPTY_NOTE)
        log.warning("lookup got no usable answer, running the full diagnosis trace_id=%s", lookup.trace_id)
        fallback = after_attempt(lookup, self._diagnose(question, shifted_observer(on_step, len(lookup.steps))))
        return replace(fallback, notes=(LOOKUP_EMPTY_NOTE, *lookup.notes, *fallback.notes))

    def _quick_lookup(self, question: Question, on_step: StepObserver | None, *, down: Trace | None = None) -> Trace:
        """The model-free quick lookup; when it can't tell what to read, the diagnosis runs with a note saying why.

        `down` is the single answer that failed because the LLM was unavailable: its notes and time are kept, and
        the diagnosis it falls back to is the playbook, since the model already failed.
        """
        if self.lookup is None:
            if question.quick_only:
                return handed_back(question, down, "No quick lookup is configured, so the full diagnosis runs instead.")
            return self._fallback_diagnosis(question, on_step, down)
        misses: list[str] = []
        shift = len(down.steps) if down is not None else 0
        quick = self.lookup(question, self.tools, on_step=shifted_observer(on_step, shift), on_miss=misses.append)
        if quick is not None and down is not None:
            return replace(
                after_attempt(down, quick),
                answer=f"_{LOOKUP_MODEL_DOWN_NOTE}_\n{quick.answer}",
                notes=(*quick.notes, LOOKUP_MODEL_DOWN_NOTE, *down.notes),
            )
        if quick is not None:
            return quick
        why = (
            f"The quick lookup could not answer this with one query ({'; '.join(misses) or 'unsure'}), "
            "so the full diagnosis ran instead."
        )
        if question.quick_only:
            return handed_back(question, down, why)
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
        observer = shifted_observer(on_step, len(trace.steps))
        fallback = after_attempt(trace, self._run_playbook(question, observer, note=note))
        return replace(
            fallback,
            notes=(*fallback.notes, *trace.notes, f"model attempt before the playbook: {spent_text(trace.totals)}"),
        )

    def _unusable_note(self, trace: Trace) -> str:
        model = self.llm.model if self.llm is not None else trace.model
        endpoint = getattr(self.llm, "endpoint", "") or "its endpoint"
        return (
            f"The model {model} at {endpoint} produced nothing usable ({trace.totals.format_errors} unreadable "
            "replies), so this is the deterministic playbook's diagnosis (no model involved)."
        )

    def _run_playbook(self, question: Question, on_step: StepObserver | None, *, note: str) -> Trace:
        if self.playbook is None:
            return trace_from_answer(
                question,
                f"{note.split(',')[0]}, and no playbook is available: I can't diagnose.",
                complete=False,
                stop_reason=StopReason.LLM_UNAVAILABLE,
            )
        trace = self.playbook(question, self.tools, on_step=on_step)
        return replace(trace, answer=f"_{note}_\n\n{trace.answer}", notes=(*trace.notes, note))

    def _chitchat(self, question: Question, on_step: StepObserver | None) -> Trace:
        if self.llm is None or not has_request_text(question.text):  # an emoji or a mark alone costs no model call
            return trace_from_answer(question, GREETING_ANSWER)
        from bot.engine.loop import answer_once

        trace = answer_once(
            question, self.llm, self.tools, allow_tool=False, on_step=on_step, llm_timeout_s=self.budget.time_budget_s
        )
        if trace.stop_reason is StopReason.FINISH:
            return trace
        # an unreachable model or an unusable reply gets the canned one; what the attempt cost stays on record
        return replace(
            after_attempt(trace, trace_from_answer(question, GREETING_ANSWER, notes=trace.notes)), model=trace.model
        )


def _confirmed(trace: Trace) -> Trace:
    """The trace with what confirms its cause, from the tools' evidence alone (never from the answer's words)."""
    from bot.playbook.confirmation import confirmation_from_trace  # with the first diagnosis or lookup

    confirmed_by = confirmation_from_trace(trace)
    return replace(trace, confirmed_by=confirmed_by) if confirmed_by else trace
