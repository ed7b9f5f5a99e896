"""Low-traffic series judged on counts: points that rest on too few requests are pooled with their neighbours.

A p99 over 5 requests is the slowest of them, not a p99, and an error ratio over 30 requests is 0 or 3 % or
7 %: on a pod serving 0.1-2 requests a second, a 5-minute point jumps x2-x40 with no fault, and the detectors,
which judge a point by how far it stands from the noise of its neighbours, see onsets in it. When the caller
knows how many requests each point rests on (Counts), consecutive points are pooled until each pool rests on at
least MIN_COUNT requests; a pool's time is its first point's, so an onset found there is not later than the
real one. A series with MIN_COUNT requests behind every point is not pooled. A pool's value is the
count-weighted mean of its points:

- for a share of the requests (an error ratio) that is exact: the share of the pooled requests. It is known only
  to one request: 0 errors of 200 is not 200x better than 1, so the detectors take logs above a floor of one
  request's share (the median pool's), where sparse zeros no longer read as drops;
- a quantile (a p99) does not pool exactly; the mean of the buckets' quantiles stands in for it. Their weighted
  median was tried and is worse: a p99 over 30 requests is the slowest of them, either a fast one or one of the
  slow tail, and the median of a few such flips between the two (on 100 seeded series at 0.1 requests a
  second: 30 false changes, 16 spikes and 13 sawtooth with the median; 2 false changes with the mean).

What a caller passes (the metrics tool reads them at the same step as the series): for a quantile of a
histogram, Counts(the increase of the histogram's _count over each step); for an error ratio,
Counts(the increase of its denominator, the requests, over each step, share=True). A series of totals or rates
(throughput) needs none: its noise already follows its level.

Pooling steadies the points; a change between them is then judged on the counts too (Pooled.differ), besides the
detectors' own noise test. Both must hold:

- a share: the errors on the two sides must split unlike the requests do (an exact binomial test,
  split_p_value, at P_CHANGE). The log-scale noise test alone saw 3-7 false onsets in 50 days at
  0.1-0.5 requests a second: a few pools at 0 or 2 errors read as a fall or a rise;
- a quantile: each side must rest on QUANTILE_SIDE_REQUESTS and, while its points rest on fewer than RANKED_BELOW
  requests each, they must rank apart (Mann-Whitney, Z_RANK). A p99 over a few hundred requests rests on its few
  slowest: with 2 or 3 slow ones it sits in the slow tail, with none in the fast body, so its points fall in two
  clusters, and the medians either side move with the share of points in each far more than normal noise would
  let them (at 2 requests a second, 1 false onset in 50 days: medians 5 standard errors apart, ranks 1.8 standard
  deviations). Too few requests to judge is no change.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from numpy.typing import NDArray

# Requests a point must rest on: a p99 then has 2 requests above it, a 1 % ratio 2 errors. 400 halves the false
# alarms of a p99 at 0.1 requests a second but pools 13 points there, too coarse to place a step (errors 1 % ->
# 20 % found 81/100 against 100/100).
MIN_COUNT = 200.0
FLOOR_REQUESTS = 1.0  # a share is told from zero from this many requests' share of its pool on
# A detector tries dozens of places for a change and keeps the most extreme, so one place's chance must be far
# smaller than the false onsets a day it may cost: at 1e-5 a 1 % -> 20 % step over 3 pools of 200 still clears it.
P_CHANGE = 1e-5
# A p99 over 1000 requests rests on the 10 slowest; over the 600 of 3 minimal pools it rests on 6 and moves with each.
QUANTILE_SIDE_REQUESTS = 1000.0
Z_RANK = 3.5  # a x3 p99 step at 0.1-2 requests a second ranks apart as often as its medians do; 4 lost 4 of 150
RANK_SHARE = 0.8
# Points on this many requests (50 above a p99) no longer fall in clusters; busy series keep the noise test alone.
RANKED_BELOW = 5000.0
EXACT_LIMIT = 20_000  # errors on both sides; past it the normal approximation stands in for the exact sum


@dataclass(frozen=True)
class Counts:
    """The requests behind each point of a series: those a quantile was taken over or a ratio is a share of."""

    requests: Sequence[float]
    share: bool = False  # the values are shares of those requests (an error ratio), not quantiles of them
    whole: float = 1.0  # the value of a share of every request (1 for a ratio, 100 for a percentage)


@dataclass(frozen=True)
class Pooled:
    times: Sequence[datetime]
    values: Sequence[float]
    floor: float  # a value this small cannot be told from zero (one request's share); 0 for a quantile
    requests: Sequence[float] = ()  # the requests behind each point; () when not known
    errors: Sequence[float] | None = None  # for a share, the requests it counts (errors) behind each point

    def differ(self, before: slice, after: slice) -> bool:
        """Whether the requests behind the points in `before` and in `after` tell the two apart (see the module's
        doc); True when the counts are not known, so the detectors' noise test judges alone."""
        if not len(self.requests):
            return True
        requests = np.asarray(self.requests, dtype=float)
        sides = (float(requests[before].sum()), float(requests[after].sum()))
        if self.errors is None:
            values = np.asarray(self.values, dtype=float)
            if min(sides) < QUANTILE_SIDE_REQUESTS:
                return False
            few = float(np.median(requests)) < RANKED_BELOW  # a point's tail holds few requests: two clusters
            return not few or _ranks_apart(values[before], values[after])
        errors = np.asarray(self.errors, dtype=float)
        return split_p_value((float(errors[before].sum()), float(errors[after].sum())), sides) < P_CHANGE


def pooled(times: Sequence[datetime], values: Sequence[float], counts: Counts | None) -> Pooled:
    """The series with consecutive points pooled until each pool rests on MIN_COUNT requests (a last pool short of
    it joins the one before). Without counts, as it is."""
    if counts is None or len(counts.requests) != len(values) or not len(values):
        return Pooled(times, values, 0.0)
    weights = np.maximum(np.asarray(counts.requests, dtype=float), 0.0)
    starts = _pool_starts(weights, MIN_COUNT)
    totals = np.add.reduceat(weights, starts)
    floor = FLOOR_REQUESTS / max(float(np.median(totals)), 1.0) if counts.share else 0.0
    ys = np.asarray(values, dtype=float)
    errors = np.add.reduceat(ys * weights / counts.whole, starts).tolist() if counts.share else None
    if len(starts) == len(values):
        return Pooled(times, values, floor, weights.tolist(), errors)
    bounds = np.append(starts, len(ys))
    pooled_values = [_weighted_mean(ys[a:b], weights[a:b]) for a, b in itertools.pairwise(bounds.tolist())]
    return Pooled([times[i] for i in starts.tolist()], pooled_values, floor, totals.tolist(), errors)


def _weighted_mean(values: NDArray[np.float64], weights: NDArray[np.float64]) -> float:
    """The count-weighted mean (the plain one when no point has a request behind it)."""
    total = float(weights.sum())
    return float(np.dot(values, weights)) / total if total > 0 else float(values.mean())


def _pool_starts(weights: NDArray[np.float64], min_count: float) -> NDArray[np.intp]:
    """The index where each pool starts: a pool closes as soon as it holds `min_count`."""
    starts, held = [0], 0.0
    for i, weight in enumerate(weights.tolist()):
        if held >= min_count:
            starts.append(i)
            held = 0.0
        held += weight
    if len(starts) > 1 and held < min_count:
        starts.pop()  # the short last pool joins the one before
    return np.asarray(starts, dtype=np.intp)


def _ranks_apart(before: NDArray[np.float64], after: NDArray[np.float64]) -> bool:
    """Whether the Mann-Whitney U of the two sides (ties count half) stands Z_RANK standard deviations from no
    change, or RANK_SHARE of the way to complete separation when the sides are too short to reach Z_RANK (3 points
    a side reach 1.96 at most: a step 15 minutes ago must still show)."""
    m, n = len(before), len(after)
    if not m or not n:
        return False
    u = float(np.sum(after[:, None] > before[None, :]) + 0.5 * np.sum(after[:, None] == before[None, :]))
    sd = math.sqrt(m * n * (m + n + 1) / 12)
    return abs(u - m * n / 2) / sd >= min(Z_RANK, RANK_SHARE * (m * n / 2) / sd)


def split_p_value(errors: tuple[float, float], requests: tuple[float, float]) -> float:
    """The two-sided p-value of `errors` (before, after) falling as they did on sides holding `requests` (before,
    after), if both sides had the same share. 1.0 when a side has no requests or there are no errors at all.

    A share over a few hundred requests moves by whole errors (2 of 200 is 1 %, 5 of 200 is 2.5 %). Given the
    errors on both sides together, under no change each fell on a side in proportion to its requests, so the
    errors after are binomial: the test sums that binomial's terms (on a log scale, so large counts do not
    underflow); past EXACT_LIMIT errors the normal approximation is as good and costs nothing."""
    total, after = round(errors[0] + errors[1]), round(errors[1])
    if total <= 0 or min(requests) <= 0:
        return 1.0
    p = requests[1] / (requests[0] + requests[1])
    if total > EXACT_LIMIT:
        z = max(0.0, abs(after - total * p) - 0.5) / math.sqrt(total * p * (1 - p))
        return math.erfc(z / math.sqrt(2))
    j = np.arange(total, dtype=float)
    steps = np.log((total - j) / (j + 1)) + math.log(p / (1 - p))  # log pmf(j + 1) - log pmf(j)
    pmf = np.exp(total * math.log1p(-p) + np.concatenate(([0.0], np.cumsum(steps))))
    upper, lower = float(pmf[after:].sum()), float(pmf[: after + 1].sum())
    return min(1.0, 2 * min(upper, lower))
