"""One catalogued signal broken down by a label (pod, version, peer) and ranked by how far each part moved.

A canary on 1 of 8 pods moves the service-wide error ratio by an eighth of its own: "errors x1.4" reads as noise,
while the pod went from 0.1 % to 25 %. The breakdown reads the same template with the label added to each of its
aggregations (`sum by (le)` -> `sum by (le, pod)`, `sum(` -> `sum by (pod) (`), so a ratio of two sums stays a ratio
per pod, and ranks the parts by how far each one's recent level stands from its own baseline (the median of the
window's first half): a move of x10 ranks above one of x0.5, a rise from nothing above both.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from statistics import median
from typing import Any, ClassVar

from tools.base import ToolData
from tools.metrics.catalogue import segments
from tools.metrics.reading import Points, points_of
from tools.metrics.series import factor_text, value_text
from tools.timerange import TimeWindow, duration_to_text

MAX_SHOWN = 10  # parts listed; the rest are counted
RECENT_SHARE = 0.1  # the recent level: the median of the window's last tenth (at least RECENT_MIN points)
RECENT_MIN = 3
_AGGREGATION = re.compile(r"\b(sum|avg|min|max|count|group|stddev|stdvar)\s*(?:(by|without)\s*\(([^)]*)\)\s*)?\(")
_POSTFIX = re.compile(r"\s*(by|without)\s*\(([^)]*)\)")


@dataclass(frozen=True)
class PartMove:
    """One part (a pod, a version, a peer): its baseline, its recent level and its first level shift."""

    value: str  # the label's value
    baseline: float  # median of the window's first half, in the display unit
    recent: float  # median of the window's last tenth
    change_at: datetime | None  # the first level shift the detector found, if any
    samples: int
    new: bool = False  # no samples in the window's first half (a canary's pod): its baseline is the other parts'

    @property
    def ratio(self) -> float | None:
        return self.recent / self.baseline if self.baseline else None


@dataclass(frozen=True)
class MetricBreakdown(ToolData):
    """What query_metrics(by=...) saw: every part of the service's series, the most moved first."""

    kind: ClassVar[str] = "metric_breakdown"
    service: str
    metric: str
    by: str  # pod, version or peer
    label: str  # the Prometheus label read for it
    promql: str
    unit: str
    window: TimeWindow
    step_s: int
    parts: tuple[PartMove, ...]  # ranked, every one


def grouped_by(promql: str, label: str) -> str:
    """The template with `label` added to each aggregation's grouping (`without` groupings keep it already)."""
    quoted = [(a, b) for a, b, is_string, _ in segments(promql) if is_string]
    edits: list[tuple[int, int, str]] = []
    for match in _AGGREGATION.finditer(promql):
        if any(a <= match.start() < b for a, b in quoted):
            continue
        if match.group(2) == "without":
            continue
        if match.group(2) == "by":
            edits.append((match.start(3), match.end(3), _with_label(match.group(3), label)))
            continue
        close = _closing(promql, match.end() - 1, quoted)
        postfix = _POSTFIX.match(promql, close + 1)
        if postfix and postfix.group(1) == "by":
            edits.append((postfix.start(2), postfix.end(2), _with_label(postfix.group(2), label)))
        elif not postfix:
            edits.append((match.end(1), match.end(1), f" by ({label}) "))
    for start, end, text in sorted(edits, reverse=True):
        promql = promql[:start] + text + promql[end:]
    return promql


def _with_label(grouping: str, label: str) -> str:
    names = [name.strip() for name in grouping.split(",") if name.strip()]
    return ", ".join(names if label in names else [*names, label])


def _closing(promql: str, opening: int, quoted: Sequence[tuple[int, int]]) -> int:
    """The index of the bracket that closes the one at `opening` (strings skipped); the text's end when none."""
    depth = 0
    for index in range(opening, len(promql)):
        if any(a <= index < b for a, b in quoted):
            continue
        depth += {"(": 1, ")": -1}.get(promql[index], 0)
        if depth == 0:
            return index
    return len(promql) - 1


def parts_from_result(
    result: Sequence[Mapping[str, Any]], label: str, factor: float, window: TimeWindow
) -> tuple[PartMove, ...]:
    """Each series of the answer as a part (named by its `label` value), ranked by how far it moved. A part that
    began in the window's second half (a canary's new pod) is measured from the older parts' baseline."""
    middle = window.start + (window.end - window.start) / 2
    points = {_name(series, label): points_of(series, factor) for series in result}
    early = [v for found in points.values() for t, v in found if t < middle]
    shared = median(early) if early else 0.0
    parts = [_part(name, found, middle, shared) for name, found in points.items() if found]
    top = max((max(abs(p.baseline), abs(p.recent)) for p in parts), default=0.0)
    floor = top * 0.01 or 1e-12  # a part at zero moves from a hundredth of the largest level, not from nothing
    return tuple(sorted(parts, key=lambda p: (-_moved(p, floor), p.value)))


def _name(series: Mapping[str, Any], label: str) -> str:
    return str(series.get("metric", {}).get(label, "")) or f"(no {label})"


def _part(name: str, points: Points, middle: datetime, shared: float) -> PartMove:
    from tools.analysis.changepoints import detect_changes

    values = [v for _, v in points]
    recent = max(RECENT_MIN, math.ceil(len(values) * RECENT_SHARE))
    early = [v for t, v in points if t < middle]
    if not early:  # its first sample is where it starts
        return PartMove(name, shared, median(values[-recent:]), points[0][0], len(values), new=True)
    changes = detect_changes([t for t, _ in points], values)
    return PartMove(name, median(early), median(values[-recent:]), _first(changes), len(values))


def _first(changes: Sequence[Any]) -> datetime | None:
    return changes[0].at if changes else None


def _moved(part: PartMove, floor: float) -> float:
    return abs(math.log((part.recent + floor) / (part.baseline + floor)))


def render_breakdown(found: MetricBreakdown) -> str:
    """Heading, PromQL, then one line per part, the most moved first: `pod-a: 0.1% -> 24% (x240), change 14:03`."""
    plural = f"{len(found.parts)} {found.by}s" if len(found.parts) != 1 else f"1 {found.by}"
    heading = (
        f"{found.metric} of {found.service} by {found.by} (label {found.label!r}), {found.window.describe()}, "
        f"step {duration_to_text(found.step_s)}: {plural}, the most moved first (first half -> last tenth)"
    )
    if not found.parts:
        return "\n".join([heading, f"promql: {found.promql}", _NONE.format(label=found.label)])
    lines = [part_line(p, found.unit, found.window.clock_format) for p in found.parts[:MAX_SHOWN]]
    more = len(found.parts) - MAX_SHOWN
    return "\n".join([heading, f"promql: {found.promql}", *lines, *([f"… and {more} more"] if more > 0 else [])])


_NONE = "no data: no series with the label {label!r} in this window (the service may not carry it)."


def part_line(part: PartMove, unit: str, clock: str) -> str:
    """`inventory-svc-7d9-x2k: 0.10% -> 24% (x240), change at 14:03`."""
    levels = f"{value_text(part.baseline, unit)} -> {value_text(part.recent, unit)} ({factor_text(part.ratio)})"
    if part.new and part.change_at:
        return f"{part.value}: {levels}, new: first sample {part.change_at:{clock}}, measured from the others' level"
    change = f", change at {part.change_at:{clock}}" if part.change_at else ""
    return f"{part.value}: {levels}{change}"
