"""Running the suite: diagnose every case in turn, time it, score it, and collect the report."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime

from bot.engine.types import Trace
from bot.eval.case import EvalCase
from bot.eval.report import EvalReport
from bot.eval.scoring import CaseResult, failed_result, score_trace

log = logging.getLogger(__name__)


def run_eval(
    cases: Iterable[EvalCase],
    diagnose: Callable[[EvalCase], Trace],
    *,
    mode: str,
    model: str = "",
    on_result: Callable[[CaseResult], None] | None = None,
    scenario_set: str = "suite",
) -> EvalReport:
    """Diagnose every case in turn; one failing scenario is recorded as a miss, never ends the run."""
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    results = []
    for case in cases:
        started = time.monotonic()
        try:
            trace = diagnose(case)
            # the diagnosis' own clock when it has one: sandbox set-up is not the model's time
            wall_s = trace.totals.elapsed_ms / 1000 if trace.totals.elapsed_ms else time.monotonic() - started
            result = score_trace(case, trace, wall_s)
        except Exception as exc:  # the eval's one catch: a broken scenario must not hide the others' scores
            log.exception("eval scenario %s failed", case.name)
            result = failed_result(case, f"{type(exc).__name__}: {exc}", time.monotonic() - started)
        results.append(result)
        if on_result is not None:
            on_result(result)
    return EvalReport(uuid.uuid4().hex, started_at, mode, model, tuple(results), scenario_set)
