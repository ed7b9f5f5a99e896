"""A text sparkline of the symptom (▁▂▃▅▇) with the onset marked, for when no picture can be posted.

`order p99_latency ▁▁▁▁▁▁│▇▇▇▇▇ (│ onset 15:07 UTC)`: one line, any font. The points are averaged into at most
WIDTH cells over the chart's window; a cell with no point is a space (a gap stays a gap); a flat series is all ▄.
"""

from __future__ import annotations

import math
from datetime import UTC

from bot.chart.spec import ChartSpec

WIDTH = 24
BARS = "▁▂▃▄▅▆▇█"
ONSET = "│"


def sparkline(spec: ChartSpec) -> str:
    panel = spec.panels[0]
    span_s = max((spec.end - spec.start).total_seconds(), 1.0)
    cells: list[list[float]] = [[] for _ in range(WIDTH)]
    for at, value in panel.points:
        if math.isfinite(value):
            cells[min(WIDTH - 1, max(0, int((at - spec.start).total_seconds() / span_s * WIDTH)))].append(value)
    means = [sum(c) / len(c) if c else None for c in cells]
    known = [m for m in means if m is not None]
    if not known:
        return ""
    low, high = min(known), max(known)
    bars = [" " if m is None else _bar(m, low, high) for m in means]
    onset = spec.onset
    note = ""
    if onset is not None:
        cell = min(WIDTH, max(0, round((onset - spec.start).total_seconds() / span_s * WIDTH)))
        bars.insert(cell, ONSET)
        note = f" ({ONSET} onset {onset.astimezone(UTC):%H:%M} UTC)"
    return f"{panel.service} {panel.metric} {''.join(bars).rstrip()}{note}"


def _bar(value: float, low: float, high: float) -> str:
    if high - low <= 1e-12 * max(abs(high), 1.0):
        return BARS[3]
    return BARS[min(len(BARS) - 1, int((value - low) / (high - low) * len(BARS)))]
