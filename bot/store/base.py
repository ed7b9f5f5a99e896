"""The TraceStore seam and what both implementations share: the stats shapes and trace flattening.

Every diagnosis is stored by trace id before it is posted anywhere, so an operator can read it back after
a restart or a Slack outage. Traces are redacted by the store itself (bot.safety.redact's `redact_trace` unless a test
passes another), so no caller can store an unredacted one by forgetting a step: a store is one of the boundaries
text leaves by, and nothing upstream redacts a trace for it. What a store read back is stored redacted already, so a
step appended to a partial trace redacts that step alone (`partial_after`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol, cast

from bot.engine.types import Intent, Route, Step, StopReason, Totals, Trace

log = logging.getLogger(__name__)

TraceRedactor = Callable[[Trace], Trace]
EvalRun = dict[str, Any]
TraceList = list[Trace]
EvalRunList = list[EvalRun]

# Steps whose action is not a tool: the final answer and replies the parser could not read.
NON_TOOL_ACTIONS = frozenset({"", "finish"})


class TraceStore(Protocol):
    """Where traces, feedback votes and eval runs live."""

    def save(self, trace: Trace) -> None:
        """Store (or replace) one trace, redacted."""
        ...

    def get(self, trace_id: str) -> Trace | None: ...

    def list(self, limit: int = 20, *, min_steps: int = 0, since: datetime | None = None) -> TraceList:
        """Newest first; `min_steps` keeps runs with at least that many steps."""
        ...

    def search(self, text: str, limit: int = 20) -> TraceList:
        """Full-text search over question, answer and observations, best match first."""
        ...

    def record_feedback(self, trace_id: str, user: str, vote: int) -> None:
        """One vote (+1 / -1) per user and trace; a second vote replaces the first."""
        ...

    def downvoted(self, limit: int = 500, *, since: datetime | None = None) -> TraceList:
        """Traces with at least one 👎 (vote -1) cast since `since`, most recent vote first: each one's question
        and intent are a labelled example for the intent gate (`opsbot intent export`). The intent is the one the
        latest 👎 recorded when it was cast (the route the gate chose then), else the trace's own."""
        ...

    def stats(self, *, since: datetime | None = None, long_run_steps: int = 6) -> TraceStats: ...

    def save_eval_run(self, run: Mapping[str, Any]) -> str:
        """Store one eval run (a JSON-ready dict); returns its run id."""
        ...

    def eval_runs(self, limit: int = 20) -> EvalRunList: ...

    def append_step(self, trace_id: str, question: str, step: Step | None = None) -> None:
        """Keep a running diagnosis' steps as they complete (a partial trace, stop reason "interrupted",
        until save() replaces it); with no step, record that the run was accepted."""
        ...

    def delete_older_than(self, cutoff: datetime) -> int:
        """Retention: delete traces started before `cutoff`; returns how many."""
        ...

    def close(self) -> None: ...


PARTIAL_NOTE = "partial: this run had not finished when its steps were stored"


def is_partial(trace: Trace) -> bool:
    """A trace stored step by step whose run never saved its final answer (yet)."""
    return PARTIAL_NOTE in trace.notes


def state_of(trace: Trace, job_status: str = "") -> str:
    """What a listing shows for a stored run: its stop reason once finished; for a partial trace "running" or
    "queued" when its job (`job_status`, from the durable queue) says so, else "partial" (no final answer was
    stored: still running somewhere, or its replica stopped and nobody has finished it yet)."""
    if is_partial(trace):
        return job_status if job_status in ("queued", "running") else "partial"
    return trace.stop_reason.value


def answer_or_state(trace: Trace, state: str) -> str:
    """The answer, or for a partial trace what there is instead (never an empty answer that looks final)."""
    if not is_partial(trace):
        return trace.answer
    if state in ("queued", "running"):
        return f"[{state}: no answer yet, {len(trace.steps)} steps so far]"
    return f"[partial: no final answer stored, {len(trace.steps)} steps kept; still running, or its replica stopped]"


def partial_with_step(existing: Trace | None, trace_id: str, question: str, step: Step | None) -> Trace:
    """The partial trace after one more step (or the stub of an accepted run when `step` is None)."""
    steps = (*(existing.steps if existing is not None else ()), *((step,) if step is not None else ()))
    started = existing.started_at if existing is not None else datetime.now(UTC).isoformat(timespec="seconds")
    totals = Totals(
        steps=len(steps),
        prompt_tokens=sum(s.prompt_tokens for s in steps),
        completion_tokens=sum(s.completion_tokens for s in steps),
        elapsed_ms=sum(s.elapsed_ms for s in steps),
    )
    return Trace(
        trace_id=trace_id,
        question=question,
        protocol="single",
        steps=steps,
        answer="",
        complete=False,
        stop_reason=StopReason.INTERRUPTED,
        totals=totals,
        started_at=started,
        notes=(PARTIAL_NOTE,),
    )


def partial_after(
    existing: Trace | None, trace_id: str, question: str, step: Step | None, redact: TraceRedactor
) -> Trace:
    """`partial_with_step`, redacting only what is new: the step and, for a run not stored yet, its question."""
    new = redact(partial_with_step(None, trace_id, "" if existing is not None else question, step))
    kept_question = existing.question if existing is not None else new.question
    return partial_with_step(existing, trace_id, kept_question, new.steps[0] if new.steps else None)


def interrupted_from_partial(kept: Trace, answer: str) -> Trace:
    """A partial trace whose run will never finish (its replica stopped), closed with `answer` ("re-run?") and
    its steps kept: no longer "running" anywhere."""
    notes = (*(n for n in kept.notes if n != PARTIAL_NOTE), "interrupted")
    return replace(kept, answer=answer, complete=False, stop_reason=StopReason.INTERRUPTED, notes=notes)


def store_quietly(what: str, action: Callable[[], object]) -> None:
    """Run one write to the trace store; a broken store is logged, never raised: it must not cost the user the
    answer."""
    try:
        action()
    except Exception:
        log.exception("could not %s", what)


def step_keeper(store: TraceStore, trace_id: str, question: str) -> Callable[[Step], None]:
    """An observer that appends each completed step to `trace_id`'s stored partial trace, quietly: a crash keeps
    what was done (API, webhook and Slack runs alike)."""
    return lambda step: store_quietly("append a step", lambda: store.append_step(trace_id, question, step))


@dataclass(frozen=True)
class ToolStat:
    tool: str
    calls: int
    errors: int

    @property
    def error_rate(self) -> float:
        return self.errors / self.calls if self.calls else 0.0


@dataclass(frozen=True)
class DayTokens:
    day: str  # YYYY-MM-DD, UTC
    runs: int
    tokens: int

    @property
    def tokens_per_run(self) -> float:
        return self.tokens / self.runs if self.runs else 0.0


@dataclass(frozen=True)
class TraceStats:
    """The answers to the questions operators ask about the bot's runs."""

    runs: int
    long_runs: int  # runs with more than `long_run_steps` steps
    long_run_steps: int
    stop_reasons: Mapping[str, int]
    tools: tuple[ToolStat, ...]
    tokens_by_day: tuple[DayTokens, ...]
    votes_up: int
    votes_down: int
    p50_duration_ms: int
    p95_duration_ms: int
    intents: Mapping[str, int] = field(default_factory=dict)

    @property
    def feedback_ratio(self) -> float | None:
        """Share of helpful votes; None when nobody voted."""
        votes = self.votes_up + self.votes_down
        return self.votes_up / votes if votes else None


@dataclass(frozen=True)
class ToolCallRow:
    step: int
    tool: str
    status: str


def tool_calls_of(trace: Trace) -> list[ToolCallRow]:
    """The tool calls of a trace (format errors and the final answer are not tool calls)."""
    return [
        ToolCallRow(s.index, s.action, s.status)
        for s in trace.steps
        if s.action not in NON_TOOL_ACTIONS and s.status != "format_error"
    ]


def observations_of(trace: Trace) -> str:
    return "\n".join(s.observation for s in trace.steps if s.observation)


def started_at_of(trace: Trace, now: datetime | None = None) -> datetime:
    """The trace's start as an aware UTC datetime (now when the trace carries none or an unreadable one)."""
    text = trace.started_at.strip()
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None
    except ValueError:
        parsed = None
    if parsed is None:
        return now or datetime.now(UTC)
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def iso_utc(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def percentile_nearest_rank(sorted_values: Sequence[int], percent: float) -> int:
    """Nearest-rank percentile (an observed value, never an interpolation): both stores agree exactly."""
    if not sorted_values:
        return 0
    rank = max(1, math.ceil(percent / 100 * len(sorted_values)))
    return int(sorted_values[rank - 1])


def check_vote(vote: int) -> int:
    if vote not in (-1, 1):
        raise ValueError(f"vote must be +1 or -1, got {vote!r}")
    return vote


def with_voted_intent(trace: Trace, route: str | None, tier: str | None, probability: float | None) -> Trace:
    """`trace` carrying the intent a 👎 recorded (votes cast before votes kept it leave the trace's own)."""
    if not route:
        return trace
    reason = trace.intent.reason if trace.intent and trace.intent.route == route else "as routed when 👎 was cast"
    intent = Intent(cast(Route, route), float(probability or 0.0), cast(Any, tier or "default"), reason)
    return replace(trace, intent=intent)
