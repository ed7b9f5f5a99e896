"""Level shifts and transient spikes in a metric series with multiplicative noise.

Latency and traffic spread in proportion to their level, so both detectors work on log values: a 2x step is the
same distance at 20 ms and at 2 s, and 25 % noise is the same band at either level. The noise is estimated
robustly from point-to-point differences (median absolute deviation), which a step, a spike or a daily curve
barely moves. Over most of a day the daily curve is taken out first (tools/analysis/dailycurve.py: fitted
robustly beside the best single step, and only when it earns the segmentation's penalty); on a +-40 % day its
steep part under noise otherwise hides a step, and its peak reads as a spike.

A level shift is found by optimal segmentation of the log series (least squares, solved exactly in
tools/analysis/segmentation.py) with a penalty scaled to that noise. Every break it proposes is checked against
the medians of the points on each side (at most SIDE_POINTS each, with what is left of a daily curve fitted
beside the break taken out): kept only when they differ by at least `min_ratio`x (less the medians' standard
error) AND by Z_SHIFT standard errors, unless it is a neighbouring break's shadow (its shift vanishes when judged
only up to that break). Medians keep a single outlier from making a change; the bounded sides keep a daily
curve from reading as a step. A kept break is then placed by a local least-squares split and moved back to
where a ramp first crossed halfway (a rate() window spreads a step over a few points; the operator wants its start).

A spike is an incident that rose and decayed (a cache refilling, a queue draining): too short to move a segment
median, it is found as a run of (3-point median smoothed) points well above the local level that comes back
near it. It must last MIN_SPIKE_POINTS points; a lone outlier does not count. A plateau is both: two change
points and a spike. Slow trends and sawtooth restarts are in tools/analysis/trends.py.

A stop is a series that had samples and then none up to the window's end: a service that serves no requests
has no latency quantile (NaN, dropped) and a 0/0 error ratio, so its series ends. That is the biggest change a
series can show, never "no change"; detect_stop reports where it ended. Low-traffic series are judged on the
counts behind their points when the caller has them (tools/analysis/pooling.py): pooled, and a change or a spike
must also stand on those counts (the errors on its two sides, or enough requests behind a quantile).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from numpy.typing import ArrayLike, NDArray

from tools.analysis.dailycurve import daily_component, daily_design, without_daily
from tools.analysis.logscale import Floats, log_values, noise_sigma, rolling_median
from tools.analysis.pooling import Counts, pooled
from tools.analysis.segmentation import TIE, optimal_breaks

MIN_SIDE_POINTS = 3  # at the series' ends a side may shrink to this, so a change 10 minutes ago still shows
MIN_SPIKE_POINTS = 3  # one or two high samples are an outlier (a GC pause, a scrape glitch), not an incident
SIDE_POINTS = 30  # the most points each side of a break that judge it (more lets a daily curve read as a step)
Z_SHIFT = 5.0  # a shift must stand this many standard errors of the two medians clear of the noise
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


def detect_changes(
    times: Sequence[datetime],
    values: Sequence[float],
    *,
    min_ratio: float = 1.5,
    max_changes: int = 3,
    counts: Counts | None = None,
) -> list[ChangePoint]:
    """Change points in time order: shifts of at least `min_ratio`x that stand well clear of the noise. `counts`,
    when given, are the requests behind each point: points on too few are pooled first (tools/analysis/pooling.py)."""
    series = pooled(times, values, counts)
    times, values = series.times, series.values
    n = len(values)
    if n < 2 * MIN_SIDE_POINTS + 1:
        return []
    raw = np.asarray(values, dtype=float)
    logs = log_values(raw, series.floor)
    sigma = noise_sigma(logs)
    penalty = _PENALTY * sigma**2 * math.log(n)
    daily = daily_design(times)  # over most of a day, the daily curve is taken out before segmenting...
    logs = logs - daily_component(daily, logs, penalty)
    breaks = optimal_breaks(logs, penalty, MIN_SIDE_POINTS)
    floor = 0.02 * float(np.abs(raw).max())  # ignore shifts that are tiny next to the series' peak

    def judge(b: int, lo: int, hi: int) -> float:  # ...and each break with what is left of it taken out too
        score = _shift_score(without_daily(daily, logs, b), raw, b, sigma, min_ratio, floor, (lo, hi))
        sides = slice(max(lo, b - SIDE_POINTS), b), slice(b, min(hi, b + SIDE_POINTS))
        return score if score and series.differ(*sides) else 0.0  # and on the requests behind the points

    shadows = _shadows(breaks, n, judge)
    scored = [(s, b) for b in breaks if b not in shadows and (s := judge(b, 0, n)) > 0]
    apart = max(MIN_SIDE_POINTS, min(n // 10, 30))  # one shift, even a ramp over a few points, is one change
    picked: list[int] = []
    for _, index in sorted(scored, reverse=True):
        if len(picked) < max_changes and all(abs(index - p) > apart for p in picked):
            picked.append(index)
    located = sorted(_best_split(logs, i, apart) for i in picked)
    return [_change(times, raw, _earliest_crossing(logs, i, apart)) for i in located]


def _shadows(breaks: Sequence[int], n: int, judge: Callable[[int, int, int], float]) -> set[int]:
    """Proposed breaks whose shift is a neighbour's. Medians reaching SIDE_POINTS judge a break across a step a
    few points away: a partial point just after a step gets a break of its own a few points on, which even
    scores higher (more points on its before side, still a majority from before the step), and a dip before a
    fall gets one whose after side is half the fall. Judged only up to the neighbour, a shadow's shift vanishes
    while the neighbour's holds (an hourly week placed an 07:58 step at 10:00 by its shadow)."""
    shadows = set()
    for a, b in itertools.pairwise(breaks):
        if b - a >= SIDE_POINTS:
            continue  # their sides do not reach each other's
        a_holds, b_holds = judge(a, 0, b) > 0, judge(b, a, n) > 0
        if a_holds != b_holds:
            shadows.add(b if a_holds else a)
    return shadows


def _best_split(logs: Floats, i: int, reach: int) -> int:
    """The least-squares single split within `reach` of `i`: a break the segmentation put at the edge of a
    nearby slow segment ties with the true step on its medians, so its place is settled locally."""
    lo, hi = max(0, i - reach), min(len(logs), i + reach)
    part = logs[lo:hi]
    n = len(part)
    if n < 2 * MIN_SIDE_POINTS:
        return i
    return lo + best_step(part, MIN_SIDE_POINTS, n - MIN_SIDE_POINTS + 1)[0]


def best_step(part: ArrayLike, first: int, stop: int) -> tuple[int, float]:
    """(k, sse) of the least-squares split of `part` into [:k] and [k:], over first <= k < stop; splits within
    TIE of the least tie, and a tie goes to the earliest (as in tools/analysis/segmentation.py)."""
    centred = np.asarray(part, dtype=float)
    centred = centred - centred.mean()  # the sse of a split does not change; the rounding does, for the better
    n, k = len(centred), np.arange(first, stop)
    sums, squares = np.cumsum(centred), np.cumsum(centred * centred)
    left = squares[k - 1] - sums[k - 1] ** 2 / k
    right = (squares[-1] - squares[k - 1]) - (sums[-1] - sums[k - 1]) ** 2 / (n - k)
    sse = left + right
    least = float(sse.min())
    at = int(np.argmax(sse <= least + TIE * float(squares[-1])))
    return int(k[at]), least


def _earliest_crossing(logs: Floats, i: int, reach: int) -> int:
    """The first index, at most `reach` before `i`, from which the series is past the midway level for
    MIN_SIDE_POINTS points: least squares splits a ramp (a rate() window) in its middle, an operator wants its start."""
    before, after = float(np.median(logs[max(0, i - reach) : i])), float(np.median(logs[i : i + reach]))
    first = max(1, i - reach)
    if first >= i:
        return i
    above = logs[first : i + MIN_SIDE_POINTS - 1] > (before + after) / 2
    past = above if after > before else ~above
    held = np.flatnonzero(sliding_window_view(past, MIN_SIDE_POINTS).all(axis=1))  # one window per j < i
    return first + int(held[0]) if len(held) else i


def _shift_score(
    logs: Floats, raw: Floats, i: int, sigma: float, min_ratio: float, floor: float, sides: tuple[int, int]
) -> float:
    """How many standard errors the medians either side of `i` (within `sides`) differ by; 0 when the shift does
    not count."""
    lo, hi = max(sides[0], i - SIDE_POINTS), min(sides[1], i + SIDE_POINTS)
    before, after = logs[lo:i], logs[i:hi]
    if len(before) < MIN_SIDE_POINTS or len(after) < MIN_SIDE_POINTS:
        return 0.0
    shift = abs(float(np.median(after) - np.median(before)))
    se = _MEDIAN_SE * sigma * math.sqrt(1 / len(before) + 1 / len(after))
    raw_shift = abs(float(np.median(raw[i:hi]) - np.median(raw[lo:i])))
    if shift < math.log(min_ratio) - se or shift < Z_SHIFT * se or raw_shift < floor:
        return 0.0
    return shift / se


def _change(times: Sequence[datetime], raw: Floats, i: int) -> ChangePoint:
    before, after = raw[max(0, i - SIDE_POINTS) : i], raw[i : i + SIDE_POINTS]
    return ChangePoint(times[i], float(np.median(before)), float(np.median(after)))


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
    counts: Counts | None = None,
) -> list[Spike]:
    """Spikes in time order: runs of at least MIN_SPIKE_POINTS points clearly above the local level,
    peaking at least `min_ratio`x above it, that came back down inside the window (`counts`: as detect_changes)."""
    series = pooled(times, values, counts)
    times, values = series.times, series.values
    n = len(values)
    if n < MIN_SPIKE_POINTS + 2:
        return []
    raw = np.asarray(values, dtype=float)
    logs = log_values(raw, series.floor)
    sigma = noise_sigma(logs)
    logs = logs - daily_component(daily_design(times), logs, _PENALTY * sigma**2 * math.log(n))  # its peak is no spike
    window = max(MIN_SIDE_POINTS, min(n // 10, 30))
    level = np.minimum(rolling_median(logs, 2 * window), np.median(logs))  # local for a daily curve; global
    raised = rolling_median(logs, 1) > level + max(math.log(min_ratio) * 0.6, 2.5 * sigma)  # under a plateau
    band = max(math.log(1.3), 3 * sigma / math.sqrt(window))
    found = []
    for first, last in _raised_runs(raised):
        spike = _spike(times, raw, logs, (first, last), window, band)
        counted = series.differ(slice(max(0, first - window), first), slice(first, last + 1))
        if spike is not None and spike.peak >= min_ratio * spike.before and spike.peak > spike.before and counted:
            found.append(spike)
    found = sorted(found, key=lambda s: s.peak / max(s.before, 1e-12), reverse=True)[:max_spikes]
    return sorted(found, key=lambda s: s.start)


def _raised_runs(raised: NDArray[np.bool_]) -> list[tuple[int, int]]:
    """(first, last) index of every run of at least MIN_SPIKE_POINTS raised points, with room on each side."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], raised.astype(np.int8), [0]))))
    firsts, stops = edges[0::2], edges[1::2]  # a run is raised[first:stop]
    keep = (stops - firsts >= MIN_SPIKE_POINTS) & (firsts > 0) & (stops < len(raised))
    return [(int(f), int(s) - 1) for f, s in zip(firsts[keep], stops[keep], strict=True)]


def _spike(
    times: Sequence[datetime],
    raw: Floats,
    logs: Floats,
    run: tuple[int, int],
    window: int,
    band: float,
) -> Spike | None:
    """The run as a Spike, if the points after it are back near the level before it (else it is a level shift)."""
    first, last = run
    before_logs, after_logs = logs[max(0, first - window) : first], logs[last + 1 : last + 1 + window]
    if len(after_logs) == 0 or abs(float(np.median(after_logs) - np.median(before_logs))) > band:
        return None
    before = float(np.median(raw[max(0, first - window) : first]))
    after = float(np.median(raw[last + 1 : last + 1 + window]))
    peak_index = first + int(raw[first : last + 1].argmax())  # the first of equal peaks
    return Spike(times[first], before, times[peak_index], float(raw[peak_index]), times[last + 1], after)


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
    return Stop(times[-1], float(np.median(np.asarray(values[-SIDE_POINTS:], dtype=float))), silent_s)
