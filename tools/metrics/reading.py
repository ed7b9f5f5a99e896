"""Reading a Prometheus range answer: the step a window is read at, the display unit, and points per series.

A catalogue unit becomes the unit the model reads (latency in ms, ratios in %, bytes in MB); the step is a round
one (15 s ... 1 d) so points fall on round times and repeated queries agree.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tools.analysis.pooling import Counts
    from tools.metrics.prometheus import PrometheusAPI
    from tools.timerange import TimeWindow

NICE_STEPS_S = (15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10_800, 21_600, 43_200, 86_400)
# Catalogue unit -> (unit shown to the model, factor): latency in ms, ratios in %, bytes in MB.
DISPLAY_UNITS = {
    "s": ("ms", 1000.0),
    "ms": ("ms", 1.0),
    "ratio": ("%", 100.0),
    "rps": ("req/s", 1.0),
    "cores": ("cores", 1.0),
    "bytes": ("MB", 1e-6),
    "count": ("", 1.0),
}

COUNTED_UNITS = ("s", "ms", "ratio")  # a quantile or a share rests on a number of requests; a rate does not
Points = tuple[tuple[datetime, float], ...]


def display_unit(unit: str) -> tuple[str, float]:
    """(the unit the model reads, the factor from the catalogue's unit to it)."""
    return DISPLAY_UNITS.get(unit, (unit, 1.0))


def points_from_result(result: Sequence[Mapping[str, Any]], factor: float) -> Points:
    """The first series' finite samples, scaled to the display unit."""
    return points_of(result[0], factor) if result else ()


def points_of(series: Mapping[str, Any], factor: float) -> Points:
    """One series' finite samples, scaled (histogram_quantile gives NaN when there was no traffic: dropped)."""
    points = []
    for ts, raw in series.get("values", []):
        value = float(raw)
        if math.isfinite(value):
            points.append((datetime.fromtimestamp(float(ts), tz=UTC), value * factor))
    return tuple(points)


def step_for(window_s: float, max_points: int) -> int:
    """The smallest round step that reads the window in at most `max_points` points."""
    wanted = window_s / max(1, max_points)
    return next((s for s in NICE_STEPS_S if s >= wanted), NICE_STEPS_S[-1])


def align(moment: datetime, step_s: int) -> datetime:
    """Start on a multiple of the step, so points fall on round times and repeated queries agree."""
    seconds = moment.timestamp()
    return datetime.fromtimestamp(seconds - seconds % step_s, tz=UTC)


def promql_string(value: str) -> str:
    """A PromQL double-quoted string literal (JSON escaping is a valid subset)."""
    return json.dumps(value)


def requests_per_point(result: Sequence[Mapping[str, Any]], times: Sequence[datetime], step_s: int) -> list[float]:
    """The requests behind each of `times`: the counts query's rate (requests per second) times the step, so
    neighbouring points, whose rate windows overlap, are not counted twice; 0 where it has no sample."""
    rates = {t: v for t, v in points_from_result(result, 1.0)}
    return [rates.get(t, 0.0) * step_s for t in times]


def read_counts(
    client: PrometheusAPI, promql: str, unit: str, window: TimeWindow, step_s: int, times: Sequence[datetime]
) -> Counts | None:
    """The requests behind each of `times` from the catalogue entry's counts query (already rendered; "" = none),
    for a quantile or a share; None for a rate, which needs none."""
    from tools.analysis.pooling import Counts

    if not promql.strip() or unit not in COUNTED_UNITS or not times:
        return None
    result = client.query_range(promql, window.start, window.end, f"{step_s}s")
    return Counts(requests_per_point(result, times, step_s), share=unit == "ratio", whole=display_unit(unit)[1])
