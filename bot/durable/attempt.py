"""One attempt at a queued job, as its surface's delivery gets it: the job, its number, and the steps found so far.

A job that was taken over (its replica died) is not started from nothing. The steps the earlier attempt found were
kept where every replica reads them (the job runner's ledger: Redis, or this process), and the new attempt goes on
from them:
- `observer` numbers each new step after the earlier ones, keeps it in the ledger, then shows it;
- `question` hands the model (or the playbook) what the earlier attempt found, as one line of context (each step
  as `step_line` words it: the engine's own one-line gist, handed in by wiring, for this package reads no tool);
- `continued` makes the one trace of the job: the earlier steps, then this attempt's, with totals for both.

`current` is False once another attempt owns the job (this replica was paused past its lease and the job was taken
over): a surface then writes nothing more, neither to the thread nor to the store.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from bot.engine.types import (
    Question,
    Step,
    StepObserver,
    StopReason,
    Totals,
    Trace,
    trace_from_dict,
    trace_to_dict,
)

log = logging.getLogger(__name__)

EARLIER_CONTEXT_CHARS = 900
NOT_TOOLS = ("", "finish")


class Ledger(Protocol):
    """Where a job's attempts keep what every replica must see (bot/durable/memoryjobs.py, redisjobs.py)."""

    def keep_step(self, job_id: str, attempt: int, record: str) -> None: ...

    def mark(self, job_id: str, name: str, value: str) -> None: ...

    def current(self, job_id: str, attempt: int) -> bool: ...


@dataclass(frozen=True)
class Attempt:
    """Attempt `number` (1 the first time) at job `job_id` of `kind`; `payload` is the surface's own job."""

    job_id: str
    kind: str
    payload: Mapping[str, Any]
    number: int
    earlier_steps: tuple[Step, ...] = ()
    marks: Mapping[str, str] = field(default_factory=dict)  # small facts a surface keeps with its job
    ledger: Ledger | None = field(default=None, repr=False, compare=False)
    step_line: Callable[[Step], str] | None = field(default=None, repr=False, compare=False)

    @property
    def taken_over(self) -> bool:
        return self.number > 1

    def keep_step(self, step: Step) -> None:
        if self.ledger is not None:
            self.ledger.keep_step(self.job_id, self.number, step_to_record(step, self.number))

    def mark(self, name: str, value: str) -> None:
        """Keep `name` = `value` with the job for whichever attempt comes next ("" removes it)."""
        if self.ledger is not None:
            self.ledger.mark(self.job_id, name, value)

    def current(self) -> bool:
        """False once another attempt took the job over; a ledger that does not answer counts as current."""
        if self.ledger is None:
            return True
        try:
            return self.ledger.current(self.job_id, self.number)
        except Exception as exc:  # Redis away for a moment: keep answering rather than fall silent
            log.info("could not check who owns job %s: %s", self.job_id, exc)
            return True

    def observer(self, show: StepObserver | None) -> StepObserver:
        """Each new step, numbered after the earlier attempt's, kept in the ledger (quietly), then shown."""
        offset = last_index(self.earlier_steps)

        def on_step(step: Step) -> None:
            step = replace(step, index=step.index + offset)
            try:
                self.keep_step(step)
            except Exception as exc:  # the run goes on; only a takeover would miss this step
                log.warning("could not keep step %d of job %s: %s", step.index, self.job_id, exc)
            if show is not None:
                show(step)

        return on_step

    def question(self, question: Question) -> Question:
        """The question with what the earlier attempt found as one more line of context."""
        if not self.earlier_steps:
            return question
        context = earlier_context(self.earlier_steps, self.step_line or plain_step_line)
        return replace(question, history=(*question.history, context))

    def continued(self, trace: Trace) -> Trace:
        """The job's one trace: the earlier attempt's steps, then this attempt's (renumbered), totals for both."""
        if not self.earlier_steps:
            return trace
        offset = last_index(self.earlier_steps)
        steps = (*self.earlier_steps, *(replace(s, index=s.index + offset) for s in trace.steps))
        note = f"taken over: attempt {self.number} went on from the {len(self.earlier_steps)} steps found before"
        totals = _with_earlier(trace.totals, self.earlier_steps)
        return replace(trace, steps=steps, totals=totals, notes=(*trace.notes, note))


def last_index(steps: tuple[Step, ...]) -> int:
    return max((s.index for s in steps), default=0)


def earlier_context(steps: tuple[Step, ...], step_line: Callable[[Step], str]) -> str:
    """One line for the model: what each step of the earlier attempt found, as `step_line` words it."""
    found = "; ".join(step_line(s) for s in steps if s.action != "finish")
    text = (
        "An earlier attempt at this question stopped (its replica went away) after these checks; build on what they "
        f"found rather than repeat them: {found}"
    )
    return text if len(text) <= EARLIER_CONTEXT_CHARS else text[: EARLIER_CONTEXT_CHARS - 1] + "…"


def plain_step_line(step: Step) -> str:
    """A step as `action status: first line of its result` (cut short): when no richer wording is handed in."""
    first = next((line.strip() for line in step.observation.splitlines() if line.strip()), "(no output)")
    first = first if len(first) <= 160 else first[:159] + "…"
    return f"{step.action or 'unreadable reply'} {step.status}: {first}"


def _with_earlier(totals: Totals, earlier: tuple[Step, ...]) -> Totals:
    tools = [s for s in earlier if s.action not in NOT_TOOLS and s.status != "format_error"]
    return Totals(
        steps=totals.steps + len(earlier),
        prompt_tokens=totals.prompt_tokens + sum(s.prompt_tokens for s in earlier),
        completion_tokens=totals.completion_tokens + sum(s.completion_tokens for s in earlier),
        elapsed_ms=totals.elapsed_ms + sum(s.elapsed_ms for s in earlier),
        tool_calls=totals.tool_calls + len(tools),
        tool_errors=totals.tool_errors + sum(s.status == "error" for s in tools),
        format_errors=totals.format_errors + sum(s.status == "format_error" for s in earlier),
    )


def step_to_record(step: Step, attempt: int) -> str:
    """A step as the ledger keeps it: JSON, with the attempt that found it (the trace codec's own step form)."""
    stored = trace_to_dict(_holder((step,)))["steps"][0]
    return json.dumps({"attempt": attempt, "step": stored})


def steps_from_records(records: list[str], before_attempt: int | None = None) -> tuple[Step, ...]:
    """The steps kept, in order; with `before_attempt`, only earlier attempts' (a paused attempt's late steps are left
    out of the attempt that took its job over)."""
    kept = [json.loads(r) for r in records]
    stored = [k["step"] for k in kept if before_attempt is None or int(k.get("attempt", 0)) < before_attempt]
    return trace_from_dict({**trace_to_dict(_holder(())), "steps": stored}).steps if stored else ()


def _holder(steps: tuple[Step, ...]) -> Trace:
    return Trace("", "", "single", steps, "", False, StopReason.INTERRUPTED, Totals())
