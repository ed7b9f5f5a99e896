"""Slow trends (a leak, creeping latency) and sawtooth restarts in a metric series, on log values.

A trend is a climb (or fall) that goes on to the window's end: the series is fitted as flat up to a moment
and then a straight line in log space (a hinge), the moment chosen by least squares. It counts when the line
grows by at least `min_ratio`x, stands clear of the noise (t statistic), the fit leaves no more spread than the
noise itself, and no single step explains the segment better (a step is tools/analysis/changepoints.py's to report).

A window that spans most of a day holds a daily curve too (traffic, and the latency that follows it): half of
that curve, rising to the window's end, reads like a trend. There the hinge must fit better than a daily
sinusoid (a 24 h sine, cosine and level fitted by least squares, as many parameters as the hinge): a leak
keeps climbing where a daily curve comes back round, so it does; a daily curve does not.

A sawtooth is memory climbing and dropping back, again and again: OOM kills or restarts. It counts when at
least MIN_DROPS sharp drops of at least DROP_RATIO x are each preceded by a climb.

With the requests behind each point (tools/analysis/pooling.py), a trend and each drop must also stand on them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from tools.analysis.changepoints import best_step
from tools.analysis.dailycurve import daily_design, daily_sse
from tools.analysis.logscale import Floats, log_shift, log_values, noise_sigma
from tools.analysis.pooling import Counts, pooled

MIN_TREND_POINTS = 12
T_TREND = 8.0  # the slope must be this many standard errors from zero
MAX_SPREAD = 1.4  # the fit's residual spread may exceed the point-to-point noise by at most this factor
MIN_DROPS = 2  # one drop is a level shift; two or more after climbs is a pattern
DROP_RATIO = 1.3


@dataclass(frozen=True)
class Trend:
    start: datetime  # where the flat part ends and the climb begins
    end: datetime  # the last point
    before: float  # the fitted level at `start`
    after: float  # the fitted level at `end`
    per_hour: float  # fractional change per hour (+0.35 = +35 %/h)


@dataclass(frozen=True)
class Sawtooth:
    drops: tuple[datetime, ...]  # when each drop happened
    low: float  # median level just after the drops
    high: float  # median level just before them

    @property
    def ratio(self) -> float | None:
        return self.high / self.low if self.low else None


def detect_trends(
    times: Sequence[datetime],
    values: Sequence[float],
    *,
    min_ratio: float = 1.5,
    counts: Counts | None = None,
) -> list[Trend]:
    """The trend that runs to the window's end, as a one-item list; [] when there is none. `counts`, when given,
    are the requests behind each point: points on too few are pooled first (tools/analysis/pooling.py)."""
    series = pooled(times, values, counts)
    times, values = series.times, series.values
    n = len(values)
    if n < 2 * MIN_TREND_POINTS:
        return []
    logs = log_values(values, series.floor)
    sigma = noise_sigma(logs)
    start, level, slope = _best_hinge(logs, range(0, n - MIN_TREND_POINTS, max(1, n // 96)))
    growth = slope * (n - 1 - start)
    span = np.arange(n - start, dtype=float)
    se = sigma / math.sqrt(float(np.sum((span - span.mean()) ** 2)) or 1.0)
    residual = logs - (level + slope * np.maximum(0.0, np.arange(n) - start))
    spread = 1.4826 * float(np.median(np.abs(residual - np.median(residual))))
    if abs(growth) < math.log(min_ratio) or abs(slope) < T_TREND * se or spread > MAX_SPREAD * sigma:
        return []
    if _step_sse(logs[start:]) < float(np.sum(residual[start:] ** 2)):
        return []
    if daily_sse(daily_design(times), logs) <= float(np.sum(residual**2)):
        return []
    if not series.differ(slice(max(0, start - MIN_TREND_POINTS), start), slice((start + n) // 2, n)):
        return []  # the flat part and the climb's second half rest on too few requests to tell apart
    step_h = (times[-1] - times[0]).total_seconds() / 3600 / (n - 1)
    per_hour = math.exp(slope / step_h) - 1 if step_h else 0.0
    shift = log_shift(values, series.floor)
    return [Trend(times[start], times[-1], math.exp(level) - shift, math.exp(level + growth) - shift, per_hour)]


def _best_hinge(logs: Floats, starts: range) -> tuple[int, float, float]:
    """(start, level, slope) of the least-squares fit flat up to `start`, a line after it, over every start
    (one row of ramps max(0, x - start) per start; the best start explains the most of the variance)."""
    x = np.arange(len(logs), dtype=float)
    ramps = np.maximum(0.0, x[None, :] - np.asarray(starts, dtype=float)[:, None])
    centred = ramps - ramps.mean(axis=1, keepdims=True)
    spreads = np.sum(centred**2, axis=1)
    slopes = centred @ (logs - logs.mean()) / spreads
    best = int(np.argmax(slopes**2 * spreads))  # the sse falls by slope^2 x spread
    slope = float(slopes[best])
    return starts[best], float(logs.mean() - slope * ramps[best].mean()), slope


def _step_sse(logs: Floats) -> float:
    """The residual sum of squares of the best single step (two flat parts, 3+ points each) over `logs`."""
    n = len(logs)
    if n < 6:
        return float(np.sum((logs - logs.mean()) ** 2))
    return best_step(logs, 3, n - 2)[1]


def detect_sawtooth(
    times: Sequence[datetime], values: Sequence[float], *, counts: Counts | None = None
) -> Sawtooth | None:
    """Repeated climbs that drop back sharply (restarts), or None (`counts`: as detect_trends)."""
    series = pooled(times, values, counts)
    times, values = series.times, series.values
    n = len(values)
    k = max(3, min(8, n // 36))
    if n < 4 * k:
        return None
    logs = log_values(values, series.floor)
    sigma = noise_sigma(logs)
    se = 1.2533 * sigma * math.sqrt(2 / k)
    gate = max(math.log(DROP_RATIO), 4 * se)
    windows = np.median(sliding_window_view(logs, k), axis=1)  # windows[i] = median of logs[i : i + k]
    falls = windows[k:] - windows[:-k]  # falls[i - k]: the median k points on less the one before, at i
    drops: list[int] = []
    for i in (np.argsort(falls, kind="stable") + k).tolist():
        if falls[i - k] > -gate:
            break
        if all(abs(i - d) > 2 * k for d in drops):
            drops.append(i)
    drops = sorted(d for d in drops if series.differ(slice(d - k, d), slice(d, d + k)))  # and on the counts
    climbs = [_climbed(logs, start, end, k, gate) for start, end in zip([0, *drops], drops, strict=False)]
    if len(drops) < MIN_DROPS or not all(climbs[1:]):
        return None
    raw = np.asarray(values, dtype=float)
    high = float(np.median([np.median(raw[d - k : d]) for d in drops]))
    low = float(np.median([np.median(raw[d : d + k]) for d in drops]))
    return Sawtooth(tuple(times[d] for d in drops), low, high)


def _climbed(logs: Floats, start: int, end: int, k: int, gate: float) -> bool:
    """Whether the tooth from `start` to the drop at `end` rose by about as much as the drop."""
    if end - start < 2 * k:
        return False
    return float(np.median(logs[end - k : end]) - np.median(logs[start : start + k])) > 0.6 * gate
