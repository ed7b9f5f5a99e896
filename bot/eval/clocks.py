"""The suite at several run clocks: a scenario is a hit only when it hits at every clock.

A scenario's incident time, noise and daily curve follow the clock it is built at, so each clock is a different
draw of the same story. A diagnosis that names the cause at 15:00 and misses it at 03:00 is luck, not a fix; this
module runs the suite once per clock and folds the runs into one verdict per scenario.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bot.engine.types import Trace
from bot.eval.case import EvalCase
from bot.eval.report import EvalReport, miss_reason, report_to_dict
from bot.eval.run import run_eval
from bot.eval.scoring import CaseResult

DAY = timedelta(days=1)


@dataclass(frozen=True)
class ClockRun:
    """One pass over the cases with every sandbox built for `clock`."""

    clock: datetime
    report: EvalReport


@dataclass(frozen=True)
class ClocksReport:
    """The per-clock runs of the same cases, in the order they ran."""

    runs: tuple[ClockRun, ...]

    @property
    def scenarios(self) -> list[str]:
        return [r.scenario for r in self.runs[0].report.results] if self.runs else []

    def results(self, scenario: str) -> list[CaseResult]:
        """The scenario's result at each clock, in clock order."""
        return [next(r for r in run.report.results if r.scenario == scenario) for run in self.runs]

    def hit(self, scenario: str) -> bool:
        return all(r.hit for r in self.results(scenario))

    @property
    def hits(self) -> int:
        return sum(self.hit(name) for name in self.scenarios)


def spread_clocks(count: int, last: datetime) -> list[datetime]:
    """`count` run clocks spread evenly over the day that ends at `last` (newest first, whole minutes)."""
    if count < 1:
        raise ValueError("the number of run clocks must be at least 1")
    last = last.replace(second=0, microsecond=0)
    return [last - k * DAY / count for k in range(count)]


def run_clocks(
    cases: Sequence[EvalCase],
    diagnoser_at: Callable[[datetime], Callable[[EvalCase], Trace]],
    clocks: Iterable[datetime],
    *,
    mode: str,
    model: str = "",
    scenario_set: str = "suite",
    on_result: Callable[[datetime, CaseResult], None] | None = None,
) -> ClocksReport:
    """Run every case at every clock (`diagnoser_at(clock)` builds each sandbox for that clock)."""
    runs = []
    for clock in clocks:
        report = run_eval(
            cases,
            diagnoser_at(clock),
            mode=mode,
            model=model,
            scenario_set=scenario_set,
            on_result=_at_clock(on_result, clock),
        )
        runs.append(ClockRun(clock, report))
    return ClocksReport(tuple(runs))


def _at_clock(
    on_result: Callable[[datetime, CaseResult], None] | None, clock: datetime
) -> Callable[[CaseResult], None] | None:
    if on_result is None:
        return None
    return lambda result: on_result(clock, result)


def clock_label(clock: datetime) -> str:
    return f"{clock:%m-%d %H:%M}"


def clocks_to_table(report: ClocksReport) -> str:
    """One row per scenario, one column per clock, and the all-clocks verdict; then every miss, per clock."""
    first = report.runs[0].report if report.runs else None
    head = (
        f"eval {first.mode if first else ''}{' ' + first.model if first and first.model else ''} · "
        f"{first.scenario_set if first else ''} · {len(report.runs)} run clocks (UTC) · "
        "a scenario is a hit only when its headline names the cause at every clock"
    )
    columns = ["scenario", *(clock_label(run.clock) for run in report.runs), "all clocks"]
    rows = [
        [name, *("yes" if r.hit else "NO" for r in report.results(name)), "yes" if report.hit(name) else "NO"]
        for name in report.scenarios
    ]
    total = len(report.scenarios)
    rows.append(["TOTAL", *(f"{run.report.hits}/{total}" for run in report.runs), f"{report.hits}/{total}"])
    widths = [max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(columns)]
    lines = [head]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in (columns, *rows)]
    for run in report.runs:
        lines += [
            f"miss {r.scenario} at {clock_label(run.clock)}: {miss_reason(r)}" for r in run.report.results if not r.hit
        ]
    return "\n".join(lines)


def clocks_to_dict(report: ClocksReport) -> dict[str, Any]:
    """JSON-ready: the verdict per scenario and clock, totals per clock and over all, and each clock's full run."""
    stamps = [run.clock.isoformat() for run in report.runs]
    per_clock = list(zip(stamps, report.runs, strict=True))
    scenarios = [
        {
            "scenario": name,
            "hit": report.hit(name),
            "clocks": {stamp: r.hit for stamp, r in zip(stamps, report.results(name), strict=True)},
        }
        for name in report.scenarios
    ]
    return {
        "clocks": stamps,
        "scenarios": scenarios,
        "totals": {
            "scenarios": len(report.scenarios),
            "hits": report.hits,
            "per_clock": {stamp: run.report.hits for stamp, run in per_clock},
        },
        "runs": [{"clock": stamp, **report_to_dict(run.report)} for stamp, run in per_clock],
    }
