"""A failed attempt kept under the answer that replaced it: the Router's fallbacks (playbook after a dead model,
diagnosis after a lookup miss, a question handed back) splice traces with these, so nothing spent (steps, time,
tokens) vanishes from the record and the live step numbers match the stored ones.
"""

from __future__ import annotations

from dataclasses import replace

from bot.engine.types import HANDED_BACK, Question, StepObserver, Totals, Trace, trace_from_answer


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


def handed_back(question: Question, attempt: Trace | None, why: str) -> Trace:
    """A quick_only question that needs the full diagnosis: the attempt so far (kept on record) and why."""
    base = attempt or trace_from_answer(question, f"_{why}_", complete=False)
    return replace(base, complete=False, notes=(*base.notes, f"{HANDED_BACK}{why}"))


def spent_text(totals: Totals) -> str:
    """What an attempt cost, for a note: tokens, seconds, steps."""
    return f"{totals.tokens:,} tokens, {totals.elapsed_ms / 1000:.1f} s, {totals.steps} steps"
