"""The one responder every surface calls: classify, then the cheapest path that answers the question.

A forward pipeline of stages, each run at most once per question, none re-entered:
classify -> canned (help, act, chit-chat) -> model lookup -> quick lookup -> agent -> playbook -> confirm and ground.
A stage answers, steps aside, or fails and leaves its attempt on record for the next one (attempts.py):
- lookup: one answer with at most one tool call; a dead model gets the model-free quick lookup, an unusable answer
  the full diagnosis; without a model the quick lookup, and when it can't tell what to read the playbook, with a
  note saying why. A `quick_only` question (from a surface with a diagnosis lane of its own) is handed back instead
  of turning into a diagnosis here (see HANDED_BACK).
- diagnose: the agent loop, or the deterministic playbook when no LLM is configured or the model failed before any
  tool ran (the answer says so).
- chit-chat: one cheap answer (a writing request without a model: a template); help: canned help; act (roll back,
  restart, page...): the canned read-only answer.
With a model, an investigation whose text also asks for something smaller is confirmed by the cheap model before
any stage runs; what that cost is counted in the trace.
The Intent is recorded on the Trace and grounding marks unverified numbers. The question arrives cleaned and
redacted by the surface's inbound pass (bot/safety/inbound.py), and the trace leaves through each surface's
outbound pass and the stores' redaction: the Router repeats neither. Never raises: an unexpected failure becomes a
labelled answer. The canned texts live in replies.py.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, tzinfo
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
from bot.playbook.zones import is_utc, localise_text
from bot.routing.attempts import (
    Run,
    after_attempt,
    after_dead_model,
    after_unusable_lookup,
    quick_after_dead_model,
    with_reason,
)
from bot.routing.replies import (
    GREETING_ANSWER,
    HELP_ANSWER,
    LOOKUP_EMPTY_NOTE,
    MODEL_DOWN_NOTE,
    NO_MODEL_NOTE,
    READ_ONLY_ANSWER,
    WRITE_ANSWER,
)
from bot.safety.inbound import has_request_text

if TYPE_CHECKING:  # what a route needs loads when the route first runs: building the Router imports none of it
    from bot.engine.context import ContextLimits
    from bot.engine.llm import LLM
    from tools.base import Toolbox

log = logging.getLogger(__name__)

Classify = Callable[[str], Intent]
Miss = Callable[[str], None]
NO_QUICK_LOOKUP = "No quick lookup is configured, so the full diagnosis runs instead."


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
    zone: tzinfo = UTC  # the team's: the answer's UTC times are shown in it, with UTC beside them
    # models whose server ignored the tools they were offered: they get the text protocol from then on
    _text_models: set[str] = field(default_factory=set, compare=False, repr=False)

    def __call__(self, question: Question, on_step: StepObserver | None = None) -> Trace:
        """Answer `question` on the route its intent calls for; the Trace records the route and why."""
        from bot.routing.intent import confirm_investigation, needs_confirmation, with_confirmation_cost

        started = time.monotonic()
        intent = question.intent or _DEFAULT_INTENT
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
            run = Run(question, on_step, intent)
            if intent.route == "diagnose" and question.escalated:  # a quick answer handed this back: say why
                run.wraps.append(with_reason(question.escalated))
            for stage in (self._canned, self._model_lookup, self._quick_lookup, self._agent, self._playbook):
                if run.open:
                    stage(run)
            # its confirmation's cost counted, grounded, then its UTC times in the team's zone (grounding reads UTC)
            trace = _grounded(with_confirmation_cost(run.finished()))
            return trace if is_utc(self.zone) else replace(trace, answer=localise_text(trace.answer, self.zone))
        except Exception as exc:  # the contract: never raise, always answer
            log.exception("respond failed question=%r", question.text[:200])
            return internal_error_trace(
                question, exc, intent=intent, elapsed_ms=int((time.monotonic() - started) * 1000)
            )

    def _canned(self, run: Run) -> None:
        """help and act get their canned text; chit-chat one cheap answer, or the canned greeting."""
        if run.route == "help":
            run.answer = trace_from_answer(run.question, HELP_ANSWER)
        elif run.route == "act":
            run.answer = trace_from_answer(run.question, READ_ONLY_ANSWER)
        elif run.route == "chitchat" and self.llm is None and run.intent.request == "write":
            run.answer = trace_from_answer(run.question, WRITE_ANSWER)  # a writing request without a model: a template
        elif run.route == "chitchat":
            run.answer = self._chitchat(run.question, run.on_step)

    def _model_lookup(self, run: Run) -> None:
        """One cheap answer with at most one tool call; a dead model leaves it to the quick lookup, an unusable
        answer to the full diagnosis."""
        if run.route != "lookup" or self.llm is None:
            return
        from bot.engine.loop import answer_once

        timeout_s = self.budget.time_budget_s if self.tool_timeout_s is None else self.tool_timeout_s
        lookup = answer_once(
            run.question,
            self.llm,
            self.tools,
            allow_tool=True,
            on_step=run.on_step,
            tool_timeout_s=timeout_s,
            llm_timeout_s=self.budget.time_budget_s,
        )
        if lookup.stop_reason is StopReason.LLM_UNAVAILABLE and lookup.totals.tool_calls == 0:
            run.down = lookup
            run.failed(lookup)
        elif lookup.stop_reason is not StopReason.FORMAT_ERRORS:
            run.answer = lookup
        elif run.question.quick_only:
            run.hand_back(lookup, LOOKUP_EMPTY_NOTE)
        else:
            log.warning("lookup got no usable answer, running the full diagnosis trace_id=%s", lookup.trace_id)
            run.diagnose = True
            run.failed(lookup, after_unusable_lookup(lookup))

    def _quick_lookup(self, run: Run) -> None:
        """The model-free quick lookup (no model, or the model is down); when it can't tell what to read, the
        diagnosis runs with a note saying why."""
        if run.route != "lookup" or run.diagnose:
            return
        if self.lookup is None:
            if run.question.quick_only:
                run.hand_back(run.down, NO_QUICK_LOOKUP)
            return
        misses: list[str] = []
        quick = self.lookup(run.question, self.tools, on_step=run.observer(), on_miss=misses.append)
        if quick is not None:
            run.answer = quick if run.down is None else quick_after_dead_model(run.down, quick)
            return
        why = (
            f"The quick lookup could not answer this with one query ({'; '.join(misses) or 'unsure'}), "
            "so the full diagnosis ran instead."
        )
        if run.question.quick_only:
            run.hand_back(run.down, why)
            return
        log.info("quick lookup missed, running the full diagnosis: %s", why)
        run.wraps.append(with_reason(why))

    def _agent(self, run: Run) -> None:
        """The agent loop, for a diagnosis or a lookup the model could not answer; a run that failed before any
        tool ran is left to the playbook (its time and tokens kept)."""
        if self.llm is None or run.down is not None or (run.route != "diagnose" and not run.diagnose):
            return
        from bot.engine.loop import run_agent  # the loop (and its text reader) loads with the first model run
        from bot.playbook.moments import with_time_hint  # the model reads the question; the tools speak UTC

        protocol, chosen = self._protocol_for(self.llm.model)
        trace = run_agent(
            with_time_hint(run.question, datetime.now(UTC), self.zone),
            self.llm,
            self.tools,
            self.budget,
            protocol=protocol,
            on_step=run.observer(),
            limits=self.limits,
            tool_timeout_s=self.tool_timeout_s,
        )
        if trace.protocol == "text" and protocol == "native":  # the server ignored the tools: text from now on
            self._text_models.add(self.llm.model)
        if chosen:
            trace = replace(trace, notes=(chosen, *trace.notes))
        dead = trace.stop_reason in (StopReason.LLM_UNAVAILABLE, StopReason.FORMAT_ERRORS)
        if dead and not trace.totals.tool_calls and self.playbook is not None:
            run.down = trace
            run.failed(trace)
        else:
            run.answer = trace

    def _playbook(self, run: Run) -> None:
        """The deterministic diagnosis: no model, or the model failed before any tool ran (said in the answer)."""
        down = run.down
        if down is None:
            run.answer = self._run_playbook(run, note=NO_MODEL_NOTE)
        elif self.playbook is None:  # nothing to fall back on: the failed attempt is the answer
            run.answer = down
        else:
            run.answer = after_dead_model(down)(self._run_playbook(run, note=self._down_note(down)))

    def _down_note(self, trace: Trace) -> str:
        if trace.stop_reason is StopReason.LLM_UNAVAILABLE:
            call = next((n.split(":")[0] for n in trace.notes if n.startswith("LLM unavailable")), "LLM unavailable")
            log.warning("%s, before any tool ran: running the playbook trace_id=%s", call, trace.trace_id)
            return MODEL_DOWN_NOTE
        model = self.llm.model if self.llm is not None else trace.model
        endpoint = getattr(self.llm, "endpoint", "") or "its endpoint"
        note = (
            f"The model {model} at {endpoint} produced nothing usable ({trace.totals.format_errors} unreadable "
            "replies), so this is the deterministic playbook's diagnosis (no model involved)."
        )
        log.warning("%s trace_id=%s", note, trace.trace_id)
        return note

    def _run_playbook(self, run: Run, *, note: str) -> Trace:
        if self.playbook is None:
            return trace_from_answer(
                run.question,
                f"{note.split(',')[0]}, and no playbook is available: I can't diagnose.",
                complete=False,
                stop_reason=StopReason.LLM_UNAVAILABLE,
            )
        trace = self.playbook(run.question, self.tools, on_step=run.observer())
        return replace(trace, answer=f"_{note}_\n\n{trace.answer}", notes=(*trace.notes, note))

    def _protocol_for(self, model: str) -> tuple[Literal["text", "native"], str]:
        """The protocol for this model, and a note when it is not the configured one."""
        if self.protocol == "native" and model in self._text_models:
            return "text", f"text protocol: an earlier run found that the server ignores the tools offered to {model}"
        return self.protocol, ""

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
        greeting = trace_from_answer(question, GREETING_ANSWER, notes=trace.notes)
        return replace(after_attempt(trace, greeting), model=trace.model)


def _grounded(trace: Trace) -> Trace:
    """A diagnosis or lookup with what confirms its cause (from the tools' evidence alone, never from the answer's
    words) and its unverified numbers marked."""
    if trace.intent is None or trace.intent.route not in ("diagnose", "lookup"):
        return trace
    from bot.playbook.confirmation import confirmation_from_trace  # with the first diagnosis or lookup
    from bot.safety.grounding import mark_unverified  # the rules compile with the first question, not at build

    confirmed_by = confirmation_from_trace(trace)
    return mark_unverified(replace(trace, confirmed_by=confirmed_by) if confirmed_by else trace)
