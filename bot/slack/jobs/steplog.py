"""A Slack diagnosis' steps in the TraceStore as they complete (one process: a crash keeps what was done), and what
the thread is told a dead attempt had found.

The run's trace id is its job's id. Each step is appended to a partial trace as it completes; the final trace
replaces it. With replicas the steps in flight live in the job runner's ledger in Redis instead (no replica reads
another's disk), and a takeover goes on from them (bot/durable/attempt.py); `found_text` tells the thread what they
found (each step's finding, read from its data as the answer's evidence is).
"""

from __future__ import annotations

import logging

from bot.engine.types import Step, StepObserver
from bot.slack.delivery.findings import deploy_time, finding_from_step
from bot.slack.delivery.render import mrkdwn_escape, trim
from bot.store.base import TraceStore, partial_with_step, step_keeper, store_quietly

log = logging.getLogger(__name__)

STEPS_SHOWN = 5


class StepLog:
    """The seam between a Slack run and the store, for steps; every write is quiet (the answer comes first)."""

    def __init__(self, store: TraceStore) -> None:
        self._store = store

    def observer(
        self, trace_id: str, question: str, show: StepObserver, earlier: tuple[Step, ...] = ()
    ) -> StepObserver:
        """`show` (the live progress) plus the step appended to the stored partial trace; the stub (with the steps
        an earlier attempt found) goes now."""
        stub = partial_with_step(None, trace_id, question, None)
        for step in earlier:
            stub = partial_with_step(stub, trace_id, question, step)
        store_quietly("record the accepted run", lambda: self._store.save(stub))
        keep = step_keeper(self._store, trace_id, question)

        def on_step(step: Step) -> None:
            keep(step)
            show(step)

        return on_step


def found_text(attempt: int, steps: tuple[Step, ...], trace_id: str) -> str:
    """What attempt `attempt` (the one that stopped) had found, for the thread."""
    checks = [s for s in steps if s.action not in ("", "finish")]
    if not checks:
        return f"Attempt {attempt} had not finished a step before its replica stopped."
    deploy_at = deploy_time(steps)
    shown = "; ".join(
        f"`{mrkdwn_escape(s.action)}` {s.status}: {mrkdwn_escape(trim(finding_from_step(s, deploy_at).text, 80, '…'))}"
        for s in checks[:STEPS_SHOWN]
    )
    more = f"; and {len(checks) - STEPS_SHOWN} more" if len(checks) > STEPS_SHOWN else ""
    count = f"{len(checks)} step{'s' if len(checks) != 1 else ''}"
    return (
        f"Attempt {attempt} got through {count} before its replica stopped: {shown}{more}. "
        f"They are kept in this run's trace: `opsbot traces show {trace_id}`."
    )
