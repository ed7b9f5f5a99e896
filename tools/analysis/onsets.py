"""Where a symptom's series changed, as find_changes reads it for an onset: steps, and the slower shapes.

The golden signals change in steps; memory and restarts climb, saw and rise from zero, which change points alone
miss (a sawtooth's segments are each small; a count from zero has no ratio). Pure functions over a series' shapes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # numpy loads with these, when a series is first analysed, not when the tools are built
    from tools.analysis.changepoints import ChangePoint, Stop
    from tools.analysis.trends import Sawtooth, Trend

SIGNIFICANT = 1.5  # a change of at least x1.5 (or to at most 1/1.5) counts


class Shaped(Protocol):
    """A series as the metric tools read it (tools/metrics/series.MetricSeries): its shapes, found already."""

    @property
    def changes(self) -> Sequence[ChangePoint]: ...

    @property
    def trends(self) -> Sequence[Trend]: ...

    @property
    def sawtooth(self) -> Sawtooth | None: ...

    @property
    def stop(self) -> Stop | None: ...

    @property
    def step_s(self) -> int: ...


def step_changes(series: Shaped) -> list[tuple[datetime, float]]:
    """The series' significant change points (a fall to 0 is the largest fall of all), and when it stopped."""
    found = [
        (c.at, c.ratio)
        for c in series.changes
        if c.ratio is not None and (c.ratio >= SIGNIFICANT or c.ratio <= 1 / SIGNIFICANT)
    ]
    if series.stop is not None:  # no samples since: a service serving nothing has no latency, no error ratio
        found.append((series.stop.last_at + timedelta(seconds=series.step_s), 0.0))
    return sorted(found)


def slow_changes(series: Shaped) -> list[tuple[datetime, float]]:
    """A sawtooth (from the start of its first climb: one period before the first drop), a climb, and a count that
    rose from zero (ratio inf), which the change points leave out (their ratio is undefined from zero)."""
    found = [(c.at, math.inf) for c in series.changes if c.before == 0 and c.after > 0]
    found += [
        (t.start, t.after / t.before) for t in series.trends if t.before > 0 and t.after / t.before >= SIGNIFICANT
    ]
    saw = series.sawtooth
    if saw is not None and saw.ratio is not None and saw.ratio >= SIGNIFICANT and saw.drops:
        period = saw.drops[1] - saw.drops[0] if len(saw.drops) > 1 else timedelta(0)
        found.append((saw.drops[0] - period, saw.ratio))
    return found
