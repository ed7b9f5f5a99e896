"""Level shifts and transient spikes in a metric series with multiplicative noise.

Latency and traffic spread in proportion to their level, so both detectors work on log values: a 2x step
is the same distance at 20 ms and at 2 s, and 25 % noise is the same band at either level. The noise is
estimated robustly from point-to-point differences (median absolute deviation), which a step, a spike or a
daily curve barely moves.

A level shift is found by optimal segmentation of the log series (least squares, solved exactly in
tools/analysis/segmentation.py) with a penalty scaled to that noise. Every break it proposes is
checked against the medians of the points on each side (at most SIDE_POINTS each): kept only when they
differ by at least `min_ratio`x (less the medians' standard error) AND by Z_SHIFT standard errors. Medians
keep a single outlier from making a change; the bounded sides keep a daily curve from reading as a step, and
over most of a day the daily curve (fitted together with the break) is taken out first (tools/analysis/dailycurve.py).
A kept break is then placed by a local least-squares split and moved back to where a ramp first crossed
halfway (a rate() window spreads a step over a few points; the operator wants its start).

A spike is an incident that rose and decayed (a cache refilling, a queue draining): over a long window it is
too short to move a segment median, so it is found separately, as a run of (3-point median smoothed) points
well above the local level that comes back near the level it left. It must last MIN_SPIKE_POINTS points; a
lone outlier does not count. A plateau is both: two change points and a spike. Slow trends and sawtooth
restarts are in tools/analysis/trends.py.

A stop is a series that had samples and then none up to the window's end: a service that serves no requests
has no latency quantile (NaN, dropped) and a 0/0 error ratio, so its series ends. That is the biggest change a
series can show, never "no change"; detect_stop reports where it ended.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import accumulate, pairwise
from statistics import median

from tools.analysis.dailycurve import daily_design, without_daily
from tools.analysis.segmentation import optimal_breaks

MIN_SIDE_POINTS = 3  # at the series' ends a side may shrink to this, so a change 10 minutes ago still shows
MIN_SPIKE_POINTS = 3  # one or two high samples are an outlier (a GC pause, a scrape glitch), not an incident
SIDE_POINTS = 30  # the most points each side of a break that judge it (more lets a daily curve read as a step)
Z_SHIFT = 5.0  # a shift must stand this many standard errors of the two medians clear of the noise
MIN_NOISE = 0.01  # log units: a perfectly flat series still has a 1 % noise floor
STOP_MIN_STEPS = 3  # a series that ends this many steps before the window does has stopped...
STOP_MIN_S = 600.0  # ...and at least this long before: a late scrape or a rate() window is not a stop
_PENALTY = 5.0  # segmentation penalty, in units of noise variance x log(n)
_MEDIAN_SE = 1.2533  # the standard error of a median is this x sigma / sqrt(n) (normal noise)


@dataclass(frozen=True)
class ChangePoint:
    at: datetime
    before: float  # median of the points before `at`
    after: float  # median of the points from `at` on

    @property
    def ratio(self) -> float | None:
        """after / before, or None when before is zero."""
        return self.after / self.before if self.before else None


def log_values(values: Sequence[float]) -> list[float]:
    """log(value + log_shift(values)): ratios become distances, and zeros stay finite."""
    shift = log_shift(values)
    return [math.log(float(v) + shift) for v in values]


def log_shift(values: Sequence[float]) -> float:
    """What log_values adds before the log: 1 % of the 90th percentile (less any negative minimum)."""
    low = min(0.0, float(min(values)))
    raised = sorted(float(v) - low for v in values)
    top = percentile(raised, 0.9) or raised[-1]
    return max(0.01 * top, 1e-12) - low


def percentile(ordered: Sequence[float], q: float) -> float:
    """The q-quantile of sorted values, linearly interpolated (numpy's default method, the same arithmetic)."""
    virtual = len(ordered) * q + (1 + q * (1 - 1 - 1)) - 1
    below = min(max(math.floor(virtual), 0), len(ordered) - 1)
    gamma = virtual - below
    a, b = ordered[below], ordered[min(below + 1, len(ordered) - 1)]
    return b - (b - a) * (1 - gamma) if gamma >= 0.5 else a + (b - a) * gamma


def rolling_median(logs: Sequence[float], half: int) -> list[float]:
    """The median of each point and `half` points either side (mirrored at the ends)."""
    half = min(half, len(logs) - 1)
    n = len(logs)  # mirrored ends: the median still sees only this series' values
    padded = [logs[half - i] for i in range(half)] + list(logs) + [logs[n - 2 - i] for i in range(half)]
    window, medians = sorted(padded[: 2 * half + 1]), []
    for i in range(n):  # the window slides one point: drop the oldest, insert the newest, keep it sorted
        medians.append(window[half])
        if i + 2 * half + 1 < len(padded):
            del window[bisect_left(window, padded[i])]
            insort(window, padded[i + 2 * half + 1])
    return medians


def noise_sigma(logs: Sequence[float]) -> float:
    """Robust standard deviation of the noise: MAD of the first differences / sqrt(2), at least MIN_NOISE."""
    if len(logs) < 3:
        return MIN_NOISE
    diffs = [b - a for a, b in pairwise(logs)]
    centre = median(diffs)
    mad = float(median([abs(d - centre) for d in diffs]))
    return max(1.4826 * mad / math.sqrt(2), MIN_NOISE)


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
    logs = log_values(values)
    sigma = noise_sigma(logs)
    breaks = optimal_breaks(logs, _PENALTY * sigma**2 * math.log(n), MIN_SIDE_POINTS)
    floor = 0.02 * max(abs(v) for v in values)  # ignore shifts that are tiny next to the series' peak
    daily = daily_design(times)  # over most of a day, each break is judged with the daily curve taken out
    scored = [
        (s, b)
        for b in breaks
        if (s := _shift_score(without_daily(daily, logs, b), values, b, sigma, min_ratio, floor)) > 0
    ]
    apart = max(MIN_SIDE_POINTS, min(n // 10, 30))  # one shift, even a ramp over a few points, is one change
    picked: list[int] = []
    for _, index in sorted(scored, reverse=True):
        if len(picked) < max_changes and all(abs(index - p) > apart for p in picked):
            picked.append(index)
    located = sorted(_best_split(logs, i, apart) for i in picked)
    return [_change(times, values, _earliest_crossing(logs, i, apart)) for i in located]


def _best_split(logs: Sequence[float], i: int, reach: int) -> int:
    """The least-squares single split within `reach` of `i`: a break the segmentation put at the edge of a
    nearby slow segment ties with the true step on its medians, so its place is settled locally."""
    lo, hi = max(0, i - reach), min(len(logs), i + reach)
    part = logs[lo:hi]
    n = len(part)
    if n < 2 * MIN_SIDE_POINTS:
        return i
    return lo + best_step(part, MIN_SIDE_POINTS, n - MIN_SIDE_POINTS + 1)[0]


def best_step(part: Sequence[float], first: int, stop: int) -> tuple[int, float]:
    """(k, sse) of the least-squares split of `part` into [:k] and [k:], over first <= k < stop (the first
    minimum among ties)."""
    n = len(part)
    sums, squares = list(accumulate(part)), list(accumulate(v * v for v in part))
    best, least = first, math.inf
    for k in range(first, stop):
        s, q = sums[k - 1], squares[k - 1]
        sse = (q - s * s / k) + ((squares[-1] - q) - (sums[-1] - s) * (sums[-1] - s) / (n - k))
        if sse < least:
            best, least = k, sse
    return best, least


def _earliest_crossing(logs: Sequence[float], i: int, reach: int) -> int:
    """The first index, at most `reach` before `i`, from which the series is past the midway level for
    MIN_SIDE_POINTS points: least squares splits a ramp (a rate() window) in its middle, an operator wants its start."""
    before, after = median(logs[max(0, i - reach) : i]), median(logs[i : i + reach])
    mid, up = (before + after) / 2, after > before
    for j in range(max(1, i - reach), i):
        if all((v > mid) == up for v in logs[j : j + MIN_SIDE_POINTS]):
            return j
    return i


def _shift_score(
    logs: Sequence[float], values: Sequence[float], i: int, sigma: float, min_ratio: float, floor: float
) -> float:
    """How many standard errors the medians either side of `i` differ by; 0 when the shift does not count."""
    before, after = logs[max(0, i - SIDE_POINTS) : i], logs[i : i + SIDE_POINTS]
    if len(before) < MIN_SIDE_POINTS or len(after) < MIN_SIDE_POINTS:
        return 0.0
    shift = abs(float(median(after) - median(before)))
    se = _MEDIAN_SE * sigma * math.sqrt(1 / len(before) + 1 / len(after))
    raw_before = median(values[max(0, i - SIDE_POINTS) : i])
    raw_after = median(values[i : i + SIDE_POINTS])
    if shift < math.log(min_ratio) - se or shift < Z_SHIFT * se or abs(raw_after - raw_before) < floor:
        return 0.0
    return shift / se


def _change(times: Sequence[datetime], values: Sequence[float], i: int) -> ChangePoint:
    before, after = values[max(0, i - SIDE_POINTS) : i], values[i : i + SIDE_POINTS]
    return ChangePoint(times[i], median(before), median(after))


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
    """Spikes in time order: runs of at least MIN_SPIKE_POINTS points clearly above the local level,
    peaking at least `min_ratio`x above it, that came back down inside the window."""
    n = len(values)
    if n < MIN_SPIKE_POINTS + 2:
        return []
    logs = log_values(values)
    smooth = rolling_median(logs, 1)
    sigma = noise_sigma(logs)
    window = max(MIN_SIDE_POINTS, min(n // 10, 30))
    local = rolling_median(logs, 2 * window)
    overall = median(logs)
    margin = max(math.log(min_ratio) * 0.6, 2.5 * sigma)
    raised = [s > min(m, overall) + margin for s, m in zip(smooth, local, strict=True)]  # local for a daily
    # curve; global under a long plateau
    band = max(math.log(1.3), 3 * sigma / math.sqrt(window))
    found = []
    for first, last in _raised_runs(raised):
        spike = _spike(times, values, logs, (first, last), window, band)
        if spike is not None and spike.peak >= min_ratio * spike.before and spike.peak > spike.before:
            found.append(spike)
    found = sorted(found, key=lambda s: s.peak / max(s.before, 1e-12), reverse=True)[:max_spikes]
    return sorted(found, key=lambda s: s.start)


def _raised_runs(raised: list[bool]) -> list[tuple[int, int]]:
    """(first, last) index of every run of at least MIN_SPIKE_POINTS raised points, with room on each side."""
    runs: list[tuple[int, int]] = []
    first = None
    for i, up in enumerate([*raised, False]):  # the sentinel closes a run still open at the end
        if up and first is None:
            first = i
        elif not up and first is not None:
            if i - first >= MIN_SPIKE_POINTS and first > 0 and i < len(raised):
                runs.append((first, i - 1))
            first = None
    return runs


def _spike(
    times: Sequence[datetime],
    values: Sequence[float],
    logs: Sequence[float],
    run: tuple[int, int],
    window: int,
    band: float,
) -> Spike | None:
    """The run as a Spike, if the points after it are back near the level before it (else it is a level shift)."""
    first, last = run
    before_logs, after_logs = logs[max(0, first - window) : first], logs[last + 1 : last + 1 + window]
    if len(after_logs) == 0 or abs(float(median(after_logs) - median(before_logs))) > band:
        return None
    before = median(values[max(0, first - window) : first])
    after = median(values[last + 1 : last + 1 + window])
    peak_index = max(range(first, last + 1), key=lambda k: values[k])
    return Spike(times[first], before, times[peak_index], values[peak_index], times[last + 1], after)


@dataclass(frozen=True)
class Stop:
    """The series had samples up to `last_at`, then none to the window's end (no requests, or the series went)."""

    last_at: datetime  # the last sample
    before: float  # median of the last points before it stopped
    silent_s: float  # from the last sample to the window's end


def detect_stop(times: Sequence[datetime], values: Sequence[float], end: datetime, step_s: float) -> Stop | None:
    """The stop of a series whose samples end at least STOP_MIN_STEPS steps (and STOP_MIN_S) before `end`."""
    if len(times) < MIN_SIDE_POINTS:
        return None  # too few points to say it was there before
    silent_s = (end - times[-1]).total_seconds()
    if silent_s < max(STOP_MIN_STEPS * step_s, STOP_MIN_S):
        return None
    return Stop(times[-1], median(values[-SIDE_POINTS:]), silent_s)
