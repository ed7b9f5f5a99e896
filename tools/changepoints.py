"""Level shifts and transient spikes in a metric series.

A level shift is where the typical value before a moment differs clearly from after it.

The detector compares rolling medians of the points before and after each index. Medians keep a single
outlier from making a change, and the noise test (median absolute deviation) keeps an already noisy series
from reporting its own wiggles. It finds step changes (a deploy, a saturated pool) and both edges of a
plateau-shaped incident; it is not meant to find slow trends.

A spike is an incident that rose and decayed (a cache refilling, a queue draining): over a long window it is
too short to move a rolling median, so it is found separately, as a run of points well clear of the series'
noise band that comes back near the level it left. It must last MIN_SPIKE_POINTS points; a lone outlier does
not count. A plateau is both: two change points and a spike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from statistics import median

MIN_SIDE_POINTS = 3  # at the series' ends a side may shrink to this, so a change 10 minutes ago still shows
MIN_SPIKE_POINTS = 3  # one or two high samples are an outlier (a GC pause, a scrape glitch), not an incident


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


@dataclass(frozen=True)
class Spike:
    """A transient excursion: the series rose from `before`, peaked, and came back near it."""

    start: datetime  # the first point clearly above `before`
    before: float  # median of the points before the spike
    peak_at: datetime
    peak: float
    back_at: datetime  # the first point back within the noise band
    after: float  # median of the points from `back_at` on

    @property
    def ratio(self) -> float | None:
        """peak / before, or None when before is zero."""
        return self.peak / self.before if self.before else None


def detect_spikes(
    times: Sequence[datetime],
    values: Sequence[float],
    *,
    min_ratio: float = 2.0,
    max_spikes: int = 3,
) -> list[Spike]:
    """Spikes in time order: runs of at least MIN_SPIKE_POINTS points clearly above the series' typical level,
    peaking at least `min_ratio`x above it, that came back down inside the window."""
    n = len(values)
    if n < MIN_SPIKE_POINTS + 2:
        return []
    base = median(values)
    band = max(5 * 1.4826 * _mad(values), 0.02 * max(abs(v) for v in values), 0.2 * abs(base))
    window = max(MIN_SIDE_POINTS, min(n // 10, 30))
    found = []
    for first, last in _raised_runs(values, base + band):
        spike = _spike(times, values, first, last, window, band)
        if spike is not None and spike.peak >= min_ratio * spike.before and spike.peak - spike.before > band:
            found.append(spike)
    found = sorted(found, key=lambda s: s.peak - s.before, reverse=True)[:max_spikes]
    return sorted(found, key=lambda s: s.start)



def _raised_runs(values: Sequence[float], level: float) -> list[tuple[int, int]]:
    """(first, last) index of every run of at least MIN_SPIKE_POINTS points above `level`, with room on each side."""
    runs: list[tuple[int, int]] = []
    first = None
    for i, value in enumerate([*values, level]):  # the sentinel closes a run still open at the end
        if value > level and first is None:
            first = i
        elif value <= level and first is not None:
            if i - first >= MIN_SPIKE_POINTS and first > 0 and i < len(values):
                runs.append((first, i - 1))
            first = None
    return runs


def _spike(
    times: Sequence[datetime], values: Sequence[float], first: int, last: int, window: int, band: float
) -> Spike | None:
    """The run as a Spike, if the points after it are back near the level before it (else it is a level shift)."""
    before = median(values[max(0, first - window) : first])
    after = median(values[last + 1 : last + 1 + window])
    if abs(after - before) > band:
        return None
    peak_index = max(range(first, last + 1), key=lambda k: values[k])
    return Spike(times[first], before, times[peak_index], values[peak_index], times[last + 1], after)
