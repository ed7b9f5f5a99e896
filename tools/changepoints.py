"""Level shifts in a metric series: where the typical value before a moment differs clearly from after it.

The detector compares rolling medians of the points before and after each index. Medians keep a single
outlier from making a change, and the noise test (median absolute deviation) keeps an already noisy series
from reporting its own wiggles. It finds step changes (a deploy, a saturated pool) and both edges of a
plateau-shaped incident; it is not meant to find slow trends.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from statistics import median

MIN_SIDE_POINTS = 3  # at the series' ends a side may shrink to this, so a change 10 minutes ago still shows


@dataclass(frozen=True)
class ChangePoint:
    at: datetime
    before: float  # median of the points before `at`
    after: float  # median of the points from `at` on

    @property
    def ratio(self) -> float | None:
        """after / before, or None when before is zero."""
        return self.after / self.before if self.before else None


def detect_changes(
    times: Sequence[datetime],
    values: Sequence[float],
    *,
    min_ratio: float = 1.5,
    max_changes: int = 3,
) -> list[ChangePoint]:
    """Change points in time order: shifts of at least `min_ratio`x that stand well clear of the noise."""
    n = len(values)
    if n < 2 * MIN_SIDE_POINTS + 1:
        return []
    window = max(MIN_SIDE_POINTS, min(n // 10, 30))
    floor = 0.02 * max(abs(v) for v in values)  # ignore shifts that are tiny next to the series' peak
    scores = [_score(values, i, window, min_ratio, floor) for i in range(n)]
    picked: list[int] = []
    for i in sorted(range(n), key=lambda k: scores[k], reverse=True):
        if scores[i] <= 0 or len(picked) == max_changes:
            break
        if all(abs(i - p) > window for p in picked):
            picked.append(i)
    changes = [_refine(times, values, i, window) for i in sorted(picked)]
    return [c for c in changes if c is not None]


def _score(values: Sequence[float], i: int, window: int, min_ratio: float, floor: float) -> float:
    before = values[max(0, i - window) : i]
    after = values[i : i + window]
    if len(before) < MIN_SIDE_POINTS or len(after) < MIN_SIDE_POINTS:
        return 0.0
    mb, ma = median(before), median(after)
    diff = abs(ma - mb)
    scale = max(abs(mb), abs(ma))
    noise = 1.4826 * max(_mad(before), _mad(after))  # ~ standard deviation for normal noise
    if diff < floor or diff < 4 * noise or diff < scale * (1 - 1 / min_ratio):
        return 0.0
    return diff / max(noise, 0.01 * scale, 1e-12)


def _refine(times: Sequence[datetime], values: Sequence[float], i: int, window: int) -> ChangePoint | None:
    """Move to the first point that crosses the midway level and stays across for the next points."""
    mb = median(values[max(0, i - window) : i])
    ma = median(values[i : i + window])
    mid, up = (mb + ma) / 2, ma > mb
    lo, hi = max(1, i - window), min(len(values) - 1, i + window)
    for j in range(lo, hi + 1):
        run = values[j : j + MIN_SIDE_POINTS]
        if all((v > mid) == up for v in run):
            before = median(values[max(0, j - window) : j])
            after = median(values[j : j + window])
            return ChangePoint(times[j], before, after)
    return None


def _mad(values: Sequence[float]) -> float:
    centre = median(values)
    return median(abs(v - centre) for v in values)
