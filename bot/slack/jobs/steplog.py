"""A Slack diagnosis' steps, kept in the TraceStore as they complete: a crash keeps what was done.

The run's trace id is chosen before it starts (a durable job's by the replica that runs this attempt). Each step
is appended to a partial trace as it completes; the final trace replaces it. When a replica dies mid-run, the
replica that takes the job over closes the dead attempt's partial trace as interrupted (its steps kept) and
tells the thread what that attempt had already found (`found_text`), rather than silently starting over.
"""

from __future__ import annotations

import logging
import threading

from bot.engine.types import Step, StepObserver, Trace
from bot.slack.delivery.render import mrkdwn_escape, trim
from bot.store.base import TraceStore, interrupted_from_partial, is_partial, step_keeper, store_quietly

log = logging.getLogger(__name__)

INTERRUPTED_TRACE_ANSWER = (
    "opsbot was interrupted (its replica stopped) before finishing this attempt. The "
    "steps it had taken are kept here; the job was re-run or answered in its thread."
)
STEPS_SHOWN = 5


class StepLog:
    """The seam between a Slack run and the store, for steps; every write is quiet (the answer comes first)."""

    def __init__(self, store: TraceStore) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._running: set[str] = set()  # this process's runs whose final trace is not stored yet

    def running(self, trace_id: str) -> bool:
        """True while this process runs `trace_id` (its stored trace is partial because it is not done yet)."""
        with self._lock:
            return trace_id in self._running

    def finished(self, trace_id: str) -> None:
        """The run's final trace was handed to the store (or it never will be): no longer running here."""
        with self._lock:
            self._running.discard(trace_id)

    def observer(self, trace_id: str, question: str, show: StepObserver) -> StepObserver:
        """`show` (the live progress) plus the step appended to the stored partial trace; the stub goes now."""
        with self._lock:
            self._running.add(trace_id)
        store_quietly("record the accepted run", lambda: self._store.append_step(trace_id, question, None))
        keep = step_keeper(self._store, trace_id, question)

        def on_step(step: Step) -> None:
            keep(step)
            show(step)

        return on_step

    def close_interrupted(self, trace_id: str) -> Trace | None:
        """The dead attempt's trace, closed as interrupted when it was still partial (None when none was kept)."""
        try:
            kept = self._store.get(trace_id) if trace_id else None
            if kept is not None and is_partial(kept):
                kept = interrupted_from_partial(kept, INTERRUPTED_TRACE_ANSWER)
                self._store.save(kept)
            return kept
        except Exception:
            log.exception("could not close the interrupted trace %s", trace_id)
            return None


def found_text(attempt: int, trace: Trace | None) -> str:
    """What attempt `attempt` (the dead one) had got through, for the thread: its steps and its kept trace."""
    if trace is None:
        return f"Attempt {attempt}'s steps were not found in the trace store (not kept, or the store was away)."
    steps = [s for s in trace.steps if s.action not in ("", "finish")]
    if not steps:
        return f"Attempt {attempt} had not finished a step before its replica stopped (trace `{trace.trace_id}`)."
    shown = "; ".join(
        f"`{mrkdwn_escape(s.action)}` {s.status}: {mrkdwn_escape(trim(_line(s), 80, '…'))}" for s in steps[:STEPS_SHOWN]
    )
    more = f"; and {len(steps) - STEPS_SHOWN} more" if len(steps) > STEPS_SHOWN else ""
    count = f"{len(steps)} step{'s' if len(steps) != 1 else ''}"
    return (
        f"Attempt {attempt} got through {count} before its replica stopped: {shown}{more}. "
        f"Its partial trace is kept: `opsbot traces show {trace.trace_id}`."
    )


def _line(step: Step) -> str:
    lines = [line.strip() for line in step.observation.splitlines() if line.strip()]
    return lines[0] if lines else "(no output)"
