"""What query_metrics saw, as a small frozen value, and its compact text rendering.

The playbook reads `MetricSeries` directly; the model reads `render_series()`: PromQL, stats with units,
`change: HH:MM before -> after (xN)` lines for level shifts,
`spike: HH:MM before -> peak P at HH:MM (xN), back to ~A by HH:MM` lines for excursions that came and went,
`trend: +35 %/h since HH:MM (before -> after, xN)` for a climb still going at the window's end,
`sawtooth: N drops (restarts?) HH:MM–HH:MM, high -> low (xN)` for repeated climbs that drop back,
`stopped: no samples after HH:MM (last V), D to the window's end; cause: C (up: ...; other services: ...)` for a
series that ended early (a service that serves no requests has no latency and no error ratio: "no samples", never
"no change"; C says whether the service stopped, the collection did, or it is unknown: tools/metrics/collection.py),
and about a dozen averaged points. When none of the four was found it says so (`change: none detected`), and
when there were too few points to look it says that instead (`change: not checked`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from statistics import fmean
from typing import TYPE_CHECKING

from tools.timerange import TimeWindow, duration_to_text

if TYPE_CHECKING:  # the detectors load with the first series analysed, not with the metrics tool
    from tools.analysis.changepoints import ChangePoint, Spike, Stop
    from tools.analysis.trends import Sawtooth, Trend
    from tools.metrics.collection import Collection

SUMMARY_POINTS = 12
_BUCKET_S = (60, 120, 300, 600, 900, 1200, 1800, 2700, 3600, 7200, 10_800, 14_400, 21_600, 43_200, 86_400)


@dataclass(frozen=True)
class MetricQuery:
    """One catalogue entry: a PromQL template with `$label` and `$service` placeholders, and its unit."""

    promql: str
    unit: str
    description: str = ""


@dataclass(frozen=True)
class MetricStats:
    min: float
    median: float
    max: float
    last: float


@dataclass(frozen=True)
class MetricSeries:
    """What query_metrics saw, in the display unit; the observation text is rendered from this."""

    service: str
    metric: str
    promql: str
    unit: str
    window: TimeWindow
    step_s: int
    points: tuple[tuple[datetime, float], ...]
    stats: MetricStats | None
    changes: tuple[ChangePoint, ...]
    series_count: int
    spikes: tuple[Spike, ...] = ()
    trends: tuple[Trend, ...] = ()
    sawtooth: Sawtooth | None = None
    stop: Stop | None = None
    collection: Collection | None = (
        None  # whether the stop is the service's or the collection's (tools/metrics/collection.py)
    )


def render_series(series: MetricSeries) -> str:
    """The compact observation: PromQL, stats with units, change points, a 12-point summary."""
    head = f"{series.metric} of {series.service}, {series.window.describe()}, step {duration_to_text(series.step_s)}"
    lines = [head, f"promql: {series.promql}"]
    if series.stats is None:
        lines.append("no data: the query returned no samples in this window for this service; nothing was checked.")
        return "\n".join(lines)
    s, u = series.stats, series.unit
    stats = f"min {_value(s.min, u)} · median {_value(s.median, u)} · max {_value(s.max, u)}"
    lines.append(f"{stats} · last {_value(s.last, u)}")
    if series.series_count > 1:
        lines.append(f"note: the query returned {series.series_count} series; this is the first.")
    clock = series.window.clock_format
    found = [_change_line(c, u, clock) for c in series.changes]
    found += [_spike_line(spike, u, clock) for spike in series.spikes]
    found += [_trend_line(trend, u, clock) for trend in series.trends]
    found += [_sawtooth_line(series.sawtooth, u, clock)] if series.sawtooth else []
    found += [_stop_line(series.stop, series.collection, u, clock)] if series.stop else []
    if found:
        lines += found
    elif len(series.points) < (needed := _min_detection_points()):
        lines.append(f"change: not checked (only {len(series.points)} points; detection needs {needed})")
    else:
        lines.append("change: none detected (no level shift, spike, trend or sawtooth)")
    lines.append(_summary_line(series.points, u, series.step_s, clock))
    return "\n".join(lines)


def _min_detection_points() -> int:
    """Fewer points than this and detect_changes does not look."""
    from tools.analysis.changepoints import MIN_SIDE_POINTS

    return 2 * MIN_SIDE_POINTS + 1


def _change_line(change: ChangePoint, unit: str, clock: str) -> str:
    before, after = _value(change.before, unit), _value(change.after, unit)
    return f"change: {change.at:{clock}} {before} -> {after} ({_factor(change.ratio)})"


def _spike_line(spike: Spike, unit: str, clock: str) -> str:
    """`spike: 15:26 94 ms -> peak 2,455 ms at 15:30 (x26.0), back to ~93 ms by 16:04`."""
    rise = f"{spike.start:{clock}} {_value(spike.before, unit)} -> peak {_value(spike.peak, unit)}"
    back = f"back to ~{_value(spike.after, unit)} by {spike.back_at:{clock}}"
    return f"spike: {rise} at {spike.peak_at:{clock}} ({_factor(spike.ratio)}), {back}"


def _trend_line(trend: Trend, unit: str, clock: str) -> str:
    """`trend: +35 %/h since 09:10 (212 MB -> 890 MB, x4.2)`."""
    ratio = trend.after / trend.before if trend.before else None
    levels = f"{_value(trend.before, unit)} -> {_value(trend.after, unit)}, {_factor(ratio)}"
    return f"trend: {trend.per_hour * 100:+.0f} %/h since {trend.start:{clock}} ({levels})"


def _sawtooth_line(saw: Sawtooth, unit: str, clock: str) -> str:
    """`sawtooth: 4 drops (restarts?) 09:40–13:10, 890 MB -> 420 MB (x2.1)`."""
    span = f"{saw.drops[0]:{clock}}–{saw.drops[-1]:{clock}}"
    levels = f"{_value(saw.high, unit)} -> {_value(saw.low, unit)} ({_factor(saw.ratio)})"
    return f"sawtooth: {len(saw.drops)} drops (restarts?) {span}, {levels}"


def _stop_line(stop: Stop, collection: Collection | None, unit: str, clock: str) -> str:
    """`stopped: no samples after 11:20 (last 55.9 ms), 40m to the window's end; cause: collection gap (up: ...;
    other services: ...)`: the service stopped serving, or the collection stopped, or unknown (not checked)."""
    silent = duration_to_text(int(stop.silent_s) // 60 * 60 or int(stop.silent_s))  # whole minutes
    cause = collection.describe() if collection else "cause: unknown (whether collection stopped too was not checked)"
    return (
        f"stopped: no samples after {stop.last_at:{clock}} (last {_value(stop.before, unit)}), {silent} to the "
        f"window's end; {cause}"
    )


def _factor(ratio: float | None) -> str:
    if ratio == 0:
        return "to 0"  # a fall to nothing, not a rise from it
    return f"x{ratio:.1f}" if ratio is not None and ratio >= 0.1 else f"x{ratio:.2g}" if ratio else "from 0"


def _summary_line(points: Sequence[tuple[datetime, float]], unit: str, step_s: int, clock: str) -> str:
    """About SUMMARY_POINTS means over buckets of a round length (2h rather than 125m)."""
    wanted_s = math.ceil(len(points) / SUMMARY_POINTS) * step_s
    bucket_s = next((s for s in _BUCKET_S if s >= wanted_s and s % step_s == 0), wanted_s)
    buckets: dict[int, list[tuple[datetime, float]]] = {}
    for moment, value in points:
        buckets.setdefault(int(moment.timestamp()) // bucket_s, []).append((moment, value))
    cells = [f"{b[0][0]:{clock}} {_number(fmean(v for _, v in b))}" for b in buckets.values()]
    return f"series (mean per {duration_to_text(bucket_s)}, {unit or 'count'}): " + ", ".join(cells)


def _value(number: float, unit: str) -> str:
    text = _number(number)
    return f"{text}%" if unit == "%" else f"{text} {unit}".rstrip()


def _number(number: float) -> str:
    if abs(number) >= 100:
        return f"{number:,.0f}"
    if abs(number) >= 1:
        return f"{number:.1f}"
    return f"{number:.2g}"
