"""What query_metrics saw, as a small frozen value, and its compact text rendering.

The playbook reads `MetricSeries` directly; the model reads `render_series()`: PromQL, stats with units,
`change: HH:MM before -> after (xN)` lines for level shifts,
`spike: HH:MM before -> peak P at HH:MM (xN), back to ~A by HH:MM` lines for excursions that came and went,
and about a dozen averaged points.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from statistics import fmean

from tools.changepoints import ChangePoint, Spike
from tools.timerange import TimeWindow, duration_to_text

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


def render_series(series: MetricSeries) -> str:
    """The compact observation: PromQL, stats with units, change points, a 12-point summary."""
    head = f"{series.metric} of {series.service}, {series.window.describe()}, step {duration_to_text(series.step_s)}"
    lines = [head, f"promql: {series.promql}"]
    if series.stats is None:
        lines.append("no data: the query returned no samples in this window for this service.")
        return "\n".join(lines)
    s, u = series.stats, series.unit
    stats = f"min {_value(s.min, u)} · median {_value(s.median, u)} · max {_value(s.max, u)}"
    lines.append(f"{stats} · last {_value(s.last, u)}")
    if series.series_count > 1:
        lines.append(f"note: the query returned {series.series_count} series; this is the first.")
    clock = series.window.clock_format
    lines += [_change_line(c, u, clock) for c in series.changes] or ["change: none detected"]
    lines += [_spike_line(spike, u, clock) for spike in series.spikes]
    lines.append(_summary_line(series.points, u, series.step_s, clock))
    return "\n".join(lines)


def _change_line(change: ChangePoint, unit: str, clock: str) -> str:
    before, after = _value(change.before, unit), _value(change.after, unit)
    return f"change: {change.at:{clock}} {before} -> {after} ({_factor(change.ratio)})"


def _spike_line(spike: Spike, unit: str, clock: str) -> str:
    """`spike: 15:26 94 ms -> peak 2,455 ms at 15:30 (x26.0), back to ~93 ms by 16:04`."""
    rise = f"{spike.start:{clock}} {_value(spike.before, unit)} -> peak {_value(spike.peak, unit)}"
    back = f"back to ~{_value(spike.after, unit)} by {spike.back_at:{clock}}"
    return f"spike: {rise} at {spike.peak_at:{clock}} ({_factor(spike.ratio)}), {back}"


def _factor(ratio: float | None) -> str:
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
