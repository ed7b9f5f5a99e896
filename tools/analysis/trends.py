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
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import accumulate
from statistics import median

from tools.analysis.changepoints import best_step, log_shift, log_values, noise_sigma
from tools.analysis.dailycurve import daily_design, daily_sse

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


def detect_trends(times: Sequence[datetime], values: Sequence[float], *, min_ratio: float = 1.5) -> list[Trend]:
    """The trend that runs to the window's end, as a one-item list; [] when there is none."""
    n = len(values)
    if n < 2 * MIN_TREND_POINTS:
        return []
    logs = log_values(values)
    sigma = noise_sigma(logs)
    start, level, slope = _best_hinge(logs, range(0, n - MIN_TREND_POINTS, max(1, n // 96)))
    growth = slope * (n - 1 - start)
    span_mean = (n - 1 - start) / 2  # the mean of 0, 1, ..., n - 1 - start
    se = sigma / math.sqrt(math.fsum((x - span_mean) ** 2 for x in range(n - start)) or 1.0)
    residual = [y - (level + slope * max(0.0, x - start)) for x, y in enumerate(logs)]
    centre = median(residual)
    spread = 1.4826 * float(median([abs(r - centre) for r in residual]))
    if abs(growth) < math.log(min_ratio) or abs(slope) < T_TREND * se or spread > MAX_SPREAD * sigma:
        return []
    if _step_sse(logs[start:]) < math.fsum(r * r for r in residual[start:]):
        return []
    if daily_sse(daily_design(times), logs) <= math.fsum(r * r for r in residual):
        return []
    step_h = (times[-1] - times[0]).total_seconds() / 3600 / (n - 1)
    per_hour = math.exp(slope / step_h) - 1 if step_h else 0.0
    shift = log_shift(values)
    return [Trend(times[start], times[-1], math.exp(level) - shift, math.exp(level + growth) - shift, per_hour)]


def _best_hinge(logs: Sequence[float], starts: range) -> tuple[int, float, float]:
    """(start, level, slope) of the least-squares fit flat up to `start`, a line after it, over every start.
    A ramp max(0, x - start) over x = 0..n-1 is 0 up to `start`, then 1, 2, ..., m = n - 1 - start."""
    n = len(logs)
    mean = math.fsum(logs) / n
    centred_logs = [y - mean for y in logs]
    tails = list(accumulate(reversed(centred_logs)))[::-1]  # tails[i] = sum of centred_logs[i:]
    best, most, best_slope, best_mean = starts[0], -math.inf, 0.0, 0.0
    for start in starts:
        m = n - 1 - start
        ramp_sum, ramp_squares = m * (m + 1) // 2, m * (m + 1) * (2 * m + 1) // 6  # integers: exact
        ramp_mean = ramp_sum / n
        spread = (n * ramp_squares - ramp_sum * ramp_sum) / n  # sum of (ramp - ramp_mean)^2, rounded once
        # sum (ramp - ramp_mean) * centred = sum ramp * centred (the centred logs sum to 0): a sum of tails
        covariance = math.fsum(tails[start + 1 : n]) - ramp_mean * math.fsum(centred_logs)
        slope = covariance / spread
        explained = slope * slope * spread  # the sse falls by this much; the best start explains most
        if explained > most:
            best, most, best_slope, best_mean = start, explained, slope, ramp_mean
    return best, mean - best_slope * best_mean, best_slope


def _step_sse(logs: Sequence[float]) -> float:
    """The residual sum of squares of the best single step (two flat parts, 3+ points each) over `logs`."""
    n = len(logs)
    if n < 6:
        mean = math.fsum(logs) / n
        return math.fsum((v - mean) ** 2 for v in logs)
    return best_step(logs, 3, n - 2)[1]


def detect_sawtooth(times: Sequence[datetime], values: Sequence[float]) -> Sawtooth | None:
    """Repeated climbs that drop back sharply (restarts), or None."""
    n = len(values)
    k = max(3, min(8, n // 36))
    if n < 4 * k:
        return None
    logs = log_values(values)
    sigma = noise_sigma(logs)
    se = 1.2533 * sigma * math.sqrt(2 / k)
    gate = max(math.log(DROP_RATIO), 4 * se)
    windows = [median(logs[i : i + k]) for i in range(n - k + 1)]
    falls = [(float(windows[i] - windows[i - k]), i) for i in range(k, n - k + 1)]
    drops: list[int] = []
    for fall, i in sorted(falls):
        if fall > -gate:
            break
        if all(abs(i - d) > 2 * k for d in drops):
            drops.append(i)
    drops.sort()
    climbs = [_climbed(logs, start, end, k, gate) for start, end in zip([0, *drops], drops, strict=False)]
    if len(drops) < MIN_DROPS or not all(climbs[1:]):
        return None
    high = median(median(values[d - k : d]) for d in drops)
    low = median(median(values[d : d + k]) for d in drops)
    return Sawtooth(tuple(times[d] for d in drops), low, high)


def _climbed(logs: Sequence[float], start: int, end: int, k: int, gate: float) -> bool:
    """Whether the tooth from `start` to the drop at `end` rose by about as much as the drop."""
    if end - start < 2 * k:
        return False
    return float(median(logs[end - k : end]) - median(logs[start : start + k])) > 0.6 * gate
