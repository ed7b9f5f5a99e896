"""One question's way through the Router's stages, and the failed attempts kept under the answer that replaced them.

A `Run` is what the stages of one question share: the question, the attempt that answered it (once one has),
a model attempt that failed before any tool ran (the playbook runs after it), and how to keep each failed attempt
under the answer (`wraps`, applied when the run finishes, innermost last). Nothing spent (steps, time, tokens)
vanishes from the record, and the live step numbers match the stored ones: an attempt's observer numbers its steps
after those the failed attempts took (`observer`), as `after_attempt` renumbers them in the trace.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from bot.engine.types import HANDED_BACK, Intent, Question, StepObserver, Totals, Trace, trace_from_answer
from bot.routing.replies import LOOKUP_EMPTY_NOTE, LOOKUP_MODEL_DOWN_NOTE

Wrap = Callable[[Trace], Trace]


@dataclass
class Run:
    """The state one question's stages pass forward; each stage reads it and may answer, fail or step aside."""

    question: Question
    on_step: StepObserver | None
    intent: Intent
    answer: Trace | None = None
    down: Trace | None = None  # a model attempt that failed before any tool ran: the playbook runs after it
    diagnose: bool = False  # the lookup's model answer was unusable: the full diagnosis runs instead
    shift: int = 0  # steps the failed attempts took
    wraps: list[Wrap] = field(default_factory=list)

    @property
    def route(self) -> str:
        return self.intent.route

    @property
    def open(self) -> bool:
        return self.answer is None

    def observer(self) -> StepObserver | None:
        """The live observer for the next attempt: its steps numbered after the failed attempts' steps."""
        return shifted_observer(self.on_step, self.shift)

    def failed(self, attempt: Trace, wrap: Wrap | None = None) -> None:
        """An attempt that did not answer: later attempts number their steps after it; `wrap` keeps it on record."""
        self.shift += len(attempt.steps)
        if wrap is not None:
            self.wraps.append(wrap)

    def hand_back(self, attempt: Trace | None, why: str) -> None:
        """A quick_only question that needs the full diagnosis: the attempt so far (kept on record) and why."""
        base = attempt or trace_from_answer(self.question, f"_{why}_", complete=False)
        self.answer = replace(base, complete=False, notes=(*base.notes, f"{HANDED_BACK}{why}"))

    def finished(self) -> Trace:
        """The answer with every failed attempt kept under it, the last one's wrap first."""
        assert self.answer is not None, "a run finishes with an answer"
        trace = self.answer
        for wrap in reversed(self.wraps):
            trace = wrap(trace)
        return replace(trace, intent=self.intent)


def after_attempt(attempt: Trace, fallback: Trace) -> Trace:
    """The fallback's trace with the failed attempt kept: its steps first (the fallback's renumbered after them, as
    `shifted_observer` showed them live), its time and tokens in the totals."""
    shift = len(attempt.steps)
    steps = (*attempt.steps, *(replace(step, index=step.index + shift) for step in fallback.steps))
    a, f = attempt.totals, fallback.totals
    totals = Totals(
        steps=len(steps),
        prompt_tokens=a.prompt_tokens + f.prompt_tokens,
        completion_tokens=a.completion_tokens + f.completion_tokens,
        elapsed_ms=a.elapsed_ms + f.elapsed_ms,
        tool_calls=a.tool_calls + f.tool_calls,
        tool_errors=a.tool_errors + f.tool_errors,
        format_errors=a.format_errors + f.format_errors,
    )
    return replace(fallback, steps=steps, totals=totals)


def shifted_observer(on_step: StepObserver | None, by: int) -> StepObserver | None:
    """An observer that numbers the fallback's steps after the attempt's (the same numbers `after_attempt` keeps)."""
    if on_step is None or by == 0:
        return on_step
    observer = on_step
    return lambda step: observer(replace(step, index=step.index + by))


def after_unusable_lookup(lookup: Trace) -> Wrap:
    """The full diagnosis that ran because the lookup's answer was unusable, with that answer's cost kept."""

    def wrap(fallback: Trace) -> Trace:
        return replace(after_attempt(lookup, fallback), notes=(LOOKUP_EMPTY_NOTE, *lookup.notes, *fallback.notes))

    return wrap


def after_dead_model(attempt: Trace) -> Wrap:
    """The playbook's answer after a model that failed before any tool ran; the model's time and tokens kept."""

    def wrap(fallback: Trace) -> Trace:
        spent = f"model attempt before the playbook: {spent_text(attempt.totals)}"
        return replace(after_attempt(attempt, fallback), notes=(*fallback.notes, *attempt.notes, spent))

    return wrap


def quick_after_dead_model(down: Trace, quick: Trace) -> Trace:
    """The quick lookup's answer after the model was unavailable for the lookup: said in the answer and the notes."""
    return replace(
        after_attempt(down, quick),
        answer=f"_{LOOKUP_MODEL_DOWN_NOTE}_\n{quick.answer}",
        notes=(*quick.notes, LOOKUP_MODEL_DOWN_NOTE, *down.notes),
    )


def with_reason(why: str) -> Wrap:
    """The answer that replaced another way of answering, opening with why (in the answer and the notes)."""
    return lambda trace: replace(trace, answer=f"_{why}_\n{trace.answer}", notes=(why, *trace.notes))


def spent_text(totals: Totals) -> str:
    """What an attempt cost, for a note: tokens, seconds, steps."""
    return f"{totals.tokens:,} tokens, {totals.elapsed_ms / 1000:.1f} s, {totals.steps} steps"
