"""The numpy detectors that tools/analysis/ (segmentation, dailycurve, changepoints, trends) replaced, verbatim
but for docstrings (as of commit 15ab16a): the reference tests/tools/analysis/test_detectors_match_numpy.py compares the
plain-Python ones with. Reference only; numpy is a [dev] dependency, so importing this skips the importing test
module where numpy is not installed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from statistics import median
from typing import TYPE_CHECKING

import pytest

from tools.analysis.changepoints import (
    _MEDIAN_SE,
    _PENALTY,
    MIN_NOISE,
    MIN_SIDE_POINTS,
    MIN_SPIKE_POINTS,
    SIDE_POINTS,
    Z_SHIFT,
    ChangePoint,
    Spike,
    _change,
)
from tools.analysis.dailycurve import DAILY_MIN_HOURS, DAY_S
from tools.analysis.segmentation import _ROUNDING
from tools.analysis.trends import DROP_RATIO, MAX_SPREAD, MIN_DROPS, MIN_TREND_POINTS, T_TREND, Sawtooth, Trend

if TYPE_CHECKING:
    import numpy as np
else:
    np = pytest.importorskip("numpy")  # without it there is no reference to compare with


def reference_outputs(times: list[datetime], values: list[float]) -> dict[str, object]:
    """What the numpy version gave for one series: breaks, change points, spikes, trends and sawtooth."""
    logs = log_values(values)
    penalty = _PENALTY * noise_sigma(logs) ** 2 * math.log(len(values))
    return {
        "breaks": optimal_breaks(logs, penalty, MIN_SIDE_POINTS),
        "changes": detect_changes(times, values),
        "spikes": detect_spikes(times, values),
        "trends": detect_trends(times, values),
        "sawtooth": detect_sawtooth(times, values),
    }


def optimal_breaks(signal: np.ndarray, penalty: float, min_size: int) -> list[int]:

    values = np.asarray(signal, dtype=float).ravel()
    n = len(values)
    if n < 2 * max(min_size, 1):
        return []
    last = _last_breaks(values - values.mean(), penalty, max(min_size, 1))  # centred: less cancellation
    breaks, end = [], n
    while (start := int(last[end])) > 0:
        breaks.append(start)
        end = start
    return breaks[::-1]


def _last_breaks(centred: np.ndarray, penalty: float, min_size: int) -> np.ndarray:

    n = len(centred)
    sums = np.concatenate(([0.0], np.cumsum(centred)))
    squares = np.concatenate(([0.0], np.cumsum(centred * centred)))
    margin = _ROUNDING * (float(squares[-1]) + penalty)
    offset = np.full(n + 1, np.inf)  # best[s] - squares[s], where best[s] is the least penalised cost of s points
    offset[0] = 0.0
    shrinking = 1.0 / np.arange(n, 0, -1)  # 1 / segment length, for starts in ascending order (a view per end)
    totals = sums.tolist()
    last = [0] * (n + 1)
    leaves = [n + 1] * (n + 1)  # the first end for which a start is no longer a candidate
    leaves[1:min_size] = [0] * (min_size - 1)  # no segmentation ends there: fewer than min_size points
    low = 0  # every start below this has left
    for end in range(min_size, n + 1):
        while leaves[low] <= end:
            low += 1
        top = end - min_size + 1  # a full segment must fit after the start
        gap = totals[end] - sums[low:top]
        fitted = offset[low:top] - gap * gap * shrinking[n - end + low : n - end + top]
        first = int(fitted.argmin())  # the first minimum: the earliest last break among ties
        least = float(fitted[first])
        offset[end] = least + penalty
        last[end] = low + first
        if float(fitted[0]) > least + penalty + margin:  # the oldest start is pruned: how many follow it?
            _leave(fitted > least + penalty + margin, leaves, low, end + min_size)
    return np.asarray(last)


def _leave(pruned: np.ndarray, leaves: list[int], low: int, leave_at: int) -> None:
    count = len(pruned) if pruned.all() else int(pruned.argmin())
    for s in range(low, low + count):
        leaves[s] = min(leaves[s], leave_at)


def daily_design(times: Sequence[datetime]) -> np.ndarray | None:
    seconds = np.asarray([(t - times[0]).total_seconds() for t in times], dtype=float)
    if len(seconds) < 3 or seconds[-1] < DAILY_MIN_HOURS * 3600:
        return None
    angle = 2 * math.pi * seconds / DAY_S
    return np.column_stack([np.ones_like(angle), np.sin(angle), np.cos(angle)])


def daily_sse(design: np.ndarray | None, logs: np.ndarray) -> float:
    if design is None:
        return math.inf
    coefficients = np.linalg.lstsq(design, logs, rcond=None)[0]
    return float(np.sum((logs - design @ coefficients) ** 2))


def without_daily(design: np.ndarray | None, logs: np.ndarray, step_at: int) -> np.ndarray:
    if design is None:
        return logs
    step = (np.arange(len(logs)) >= step_at).astype(float)
    coefficients = np.linalg.lstsq(np.column_stack([design, step]), logs, rcond=None)[0]
    return logs - design[:, 1:] @ coefficients[1:3]


def log_values(values: Sequence[float]) -> np.ndarray:
    return np.log(np.asarray(values, dtype=float) + log_shift(values))


def log_shift(values: Sequence[float]) -> float:
    raw = np.asarray(values, dtype=float)
    low = min(0.0, float(raw.min()))
    top = float(np.percentile(raw - low, 90)) or float((raw - low).max())
    return max(0.01 * top, 1e-12) - low


def rolling_median(logs: np.ndarray, half: int) -> np.ndarray:
    half = min(half, len(logs) - 1)
    padded = np.pad(logs, half, mode="reflect")  # mirrored ends: the median still sees only this series' values
    return np.asarray(np.median(np.lib.stride_tricks.sliding_window_view(padded, 2 * half + 1), axis=1))


def noise_sigma(logs: np.ndarray) -> float:
    if len(logs) < 3:
        return MIN_NOISE
    diffs = np.diff(logs)
    mad = float(np.median(np.abs(diffs - np.median(diffs))))
    return max(1.4826 * mad / math.sqrt(2), MIN_NOISE)


def detect_changes(
    times: Sequence[datetime],
    values: Sequence[float],
    *,
    min_ratio: float = 1.5,
    max_changes: int = 3,
) -> list[ChangePoint]:
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


def _best_split(logs: np.ndarray, i: int, reach: int) -> int:
    lo, hi = max(0, i - reach), min(len(logs), i + reach)
    part = logs[lo:hi]
    n = len(part)
    if n < 2 * MIN_SIDE_POINTS:
        return i
    k = np.arange(MIN_SIDE_POINTS, n - MIN_SIDE_POINTS + 1)
    sums, squares = np.cumsum(part), np.cumsum(part**2)
    left = squares[k - 1] - sums[k - 1] ** 2 / k
    right = (squares[-1] - squares[k - 1]) - (sums[-1] - sums[k - 1]) ** 2 / (n - k)
    return lo + int(k[np.argmin(left + right)])


def _earliest_crossing(logs: np.ndarray, i: int, reach: int) -> int:
    before, after = np.median(logs[max(0, i - reach) : i]), np.median(logs[i : i + reach])
    mid, up = (before + after) / 2, after > before
    for j in range(max(1, i - reach), i):
        if all((v > mid) == up for v in logs[j : j + MIN_SIDE_POINTS]):
            return j
    return i


def _shift_score(
    logs: np.ndarray, values: Sequence[float], i: int, sigma: float, min_ratio: float, floor: float
) -> float:
    before, after = logs[max(0, i - SIDE_POINTS) : i], logs[i : i + SIDE_POINTS]
    if len(before) < MIN_SIDE_POINTS or len(after) < MIN_SIDE_POINTS:
        return 0.0
    shift = abs(float(np.median(after) - np.median(before)))
    se = _MEDIAN_SE * sigma * math.sqrt(1 / len(before) + 1 / len(after))
    raw_before = median(values[max(0, i - SIDE_POINTS) : i])
    raw_after = median(values[i : i + SIDE_POINTS])
    if shift < math.log(min_ratio) - se or shift < Z_SHIFT * se or abs(raw_after - raw_before) < floor:
        return 0.0
    return shift / se


def detect_spikes(
    times: Sequence[datetime],
    values: Sequence[float],
    *,
    min_ratio: float = 2.0,
    max_spikes: int = 3,
) -> list[Spike]:
    n = len(values)
    if n < MIN_SPIKE_POINTS + 2:
        return []
    logs = log_values(values)
    smooth = rolling_median(logs, 1)
    sigma = noise_sigma(logs)
    window = max(MIN_SIDE_POINTS, min(n // 10, 30))
    local = rolling_median(logs, 2 * window)
    level = np.minimum(local, np.median(logs))  # local for a daily curve; global under a long plateau
    raised = smooth > level + max(math.log(min_ratio) * 0.6, 2.5 * sigma)
    band = max(math.log(1.3), 3 * sigma / math.sqrt(window))
    found = []
    for first, last in _raised_runs(raised):
        spike = _spike(times, values, logs, (first, last), window, band)
        if spike is not None and spike.peak >= min_ratio * spike.before and spike.peak > spike.before:
            found.append(spike)
    found = sorted(found, key=lambda s: s.peak / max(s.before, 1e-12), reverse=True)[:max_spikes]
    return sorted(found, key=lambda s: s.start)


def _raised_runs(raised: np.ndarray) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    first = None
    for i, up in enumerate([*raised.tolist(), False]):  # the sentinel closes a run still open at the end
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
    logs: np.ndarray,
    run: tuple[int, int],
    window: int,
    band: float,
) -> Spike | None:
    first, last = run
    before_logs, after_logs = logs[max(0, first - window) : first], logs[last + 1 : last + 1 + window]
    if len(after_logs) == 0 or abs(float(np.median(after_logs) - np.median(before_logs))) > band:
        return None
    before = median(values[max(0, first - window) : first])
    after = median(values[last + 1 : last + 1 + window])
    peak_index = max(range(first, last + 1), key=lambda k: values[k])
    return Spike(times[first], before, times[peak_index], values[peak_index], times[last + 1], after)


def detect_trends(times: Sequence[datetime], values: Sequence[float], *, min_ratio: float = 1.5) -> list[Trend]:
    n = len(values)
    if n < 2 * MIN_TREND_POINTS:
        return []
    logs = log_values(values)
    sigma = noise_sigma(logs)
    start, level, slope = _best_hinge(logs, range(0, n - MIN_TREND_POINTS, max(1, n // 96)))
    x = np.arange(n, dtype=float)
    growth = slope * (n - 1 - start)
    span = x[start:] - start
    se = sigma / math.sqrt(float(np.sum((span - span.mean()) ** 2)) or 1.0)
    residual = logs - (level + slope * np.maximum(0.0, x - start))
    spread = 1.4826 * float(np.median(np.abs(residual - np.median(residual))))
    if abs(growth) < math.log(min_ratio) or abs(slope) < T_TREND * se or spread > MAX_SPREAD * sigma:
        return []
    if _step_sse(logs[start:]) < float(np.sum(residual[start:] ** 2)):
        return []
    if daily_sse(daily_design(times), logs) <= float(np.sum(residual**2)):
        return []
    step_h = (times[-1] - times[0]).total_seconds() / 3600 / (n - 1)
    per_hour = math.exp(slope / step_h) - 1 if step_h else 0.0
    shift = log_shift(values)
    return [Trend(times[start], times[-1], math.exp(level) - shift, math.exp(level + growth) - shift, per_hour)]


def _best_hinge(logs: np.ndarray, starts: range) -> tuple[int, float, float]:
    x = np.arange(len(logs), dtype=float)
    ramps = np.maximum(0.0, x[None, :] - np.asarray(starts, dtype=float)[:, None])  # one row per start
    centred = ramps - ramps.mean(axis=1, keepdims=True)
    slopes = centred @ (logs - logs.mean()) / np.sum(centred**2, axis=1)
    explained = slopes**2 * np.sum(centred**2, axis=1)  # the sse falls by this much; the best start explains most
    best = int(np.argmax(explained))
    slope = float(slopes[best])
    return starts[best], float(logs.mean() - slope * ramps[best].mean()), slope


def _step_sse(logs: np.ndarray) -> float:
    n = len(logs)
    if n < 6:
        return float(np.sum((logs - logs.mean()) ** 2))
    k = np.arange(3, n - 2)
    sums, squares = np.cumsum(logs), np.cumsum(logs**2)
    left = squares[k - 1] - sums[k - 1] ** 2 / k
    right = (squares[-1] - squares[k - 1]) - (sums[-1] - sums[k - 1]) ** 2 / (n - k)
    return float(np.min(left + right))


def detect_sawtooth(times: Sequence[datetime], values: Sequence[float]) -> Sawtooth | None:
    n = len(values)
    k = max(3, min(8, n // 36))
    if n < 4 * k:
        return None
    logs = log_values(values)
    sigma = noise_sigma(logs)
    se = 1.2533 * sigma * math.sqrt(2 / k)
    gate = max(math.log(DROP_RATIO), 4 * se)
    windows = np.median(np.lib.stride_tricks.sliding_window_view(logs, k), axis=1)  # windows[i] = logs[i : i + k]
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


def _climbed(logs: np.ndarray, start: int, end: int, k: int, gate: float) -> bool:
    if end - start < 2 * k:
        return False
    return float(np.median(logs[end - k : end]) - np.median(logs[start : start + k])) > 0.6 * gate
