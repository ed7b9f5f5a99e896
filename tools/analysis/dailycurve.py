"""The daily curve in a metric series: a 24 h sinusoid fitted by least squares, on log values.

Traffic, and the latency and CPU that follow it, rise and fall over the day. Over a window of most of a day,
half of that curve reads like a trend and its steepest part like a step. The detectors fit it here and judge
a candidate against it: a trend must fit better than the daily curve (tools/analysis/trends.py), and a step is
measured after the daily curve is taken out, fitted together with the step so that a real step stays a step
(tools/analysis/changepoints.py). Before segmenting, the curve is taken out whole (daily_component): fitted
with Tukey's biweight, so outliers weigh nothing, together with the best single step, which a 24 h sinusoid
would otherwise absorb. A shorter window shows too little of the day to tell a curve from a line: no fit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

import numpy as np
from numpy.typing import ArrayLike, NDArray

DAILY_MIN_HOURS = 18.0  # a window this long shows enough of a daily curve to fit one
DAY_S = 86400.0
ROBUST_ROUNDS = 3  # reweighting rounds of the robust fit (the weights settle by the third)
BIWEIGHT_C = 4.685  # Tukey's constant: 95 % efficient on normal noise, no weight beyond 4.7 MADs
MIN_STEP_SIDE = 3  # the step fitted with the curve has at least this many points on each side

Design = NDArray[np.float64]  # one row per point: the columns 1, sin, cos of the 24 h cycle


def daily_design(times: Sequence[datetime]) -> Design | None:
    """Rows [1, sin, cos] of the 24 h cycle at each time; None when the window is too short to fit one."""
    seconds = np.asarray([(t - times[0]).total_seconds() for t in times], dtype=float)
    if len(seconds) < 3 or seconds[-1] < DAILY_MIN_HOURS * 3600:
        return None
    angles = 2 * math.pi * seconds / DAY_S
    return np.column_stack([np.ones_like(angles), np.sin(angles), np.cos(angles)])


def daily_sse(design: Design | None, logs: ArrayLike) -> float:
    """The residual sum of squares of level + daily curve; infinite without a design (a short window)."""
    if design is None:
        return math.inf
    ys = np.asarray(logs, dtype=float)
    coefficients = np.linalg.lstsq(design, ys, rcond=None)[0]
    return float(np.sum((ys - design @ coefficients) ** 2))


def without_daily(design: Design | None, logs: ArrayLike, step_at: int) -> NDArray[np.float64]:
    """`logs` less the daily curve fitted together with a step at `step_at` (the level and the step stay)."""
    ys = np.asarray(logs, dtype=float)
    if design is None:
        return ys
    step = (np.arange(len(ys)) >= step_at).astype(float)
    coefficients = np.linalg.lstsq(np.column_stack([design, step]), ys, rcond=None)[0]
    return ys - design[:, 1:] @ coefficients[1:3]


def daily_component(design: Design | None, logs: ArrayLike, penalty: float) -> NDArray[np.float64]:
    """The daily curve in `logs` (its sin and cos part: zero over the day), fitted robustly together with the
    best single step; zeros without a design, or when the curve lowers the weighted squared error by less than
    `penalty` (a flat series has no curve to take out, and a spurious one would bend a step)."""
    ys = np.asarray(logs, dtype=float)
    if design is None:
        return np.zeros_like(ys)
    weights = np.ones_like(ys)
    for _ in range(ROBUST_ROUNDS):
        columns = np.column_stack([design, _step(_best_step_at(design, ys, weights), len(ys))])
        coefficients = _weighted_fit(columns, ys, weights)
        weights = _biweights(ys - columns @ coefficients)
    without_curve = columns[:, [0, 3]]  # the level and the step alone
    kept = _weighted_sse(columns, ys, weights)
    if _weighted_sse(without_curve, ys, weights) - kept < penalty:
        return np.zeros_like(ys)
    return design[:, 1:] @ coefficients[1:3]


def _weighted_fit(columns: Design, ys: NDArray[np.float64], weights: NDArray[np.float64]) -> NDArray[np.float64]:
    root = np.sqrt(weights)
    return np.asarray(np.linalg.lstsq(columns * root[:, None], ys * root, rcond=None)[0], dtype=np.float64)


def _weighted_sse(columns: Design, ys: NDArray[np.float64], weights: NDArray[np.float64]) -> float:
    residual = ys - columns @ _weighted_fit(columns, ys, weights)
    return float(np.sum(weights * residual**2))


def _biweights(residual: NDArray[np.float64]) -> NDArray[np.float64]:
    """Tukey's biweight of each residual, scaled by their MAD: an outlier (a scrape glitch, a GC pause) gets
    none, so it cannot pull the curve towards it."""
    scale = 1.4826 * float(np.median(np.abs(residual - np.median(residual)))) or 1e-12
    return np.clip(1 - (residual / (BIWEIGHT_C * scale)) ** 2, 0, None) ** 2


def _step(at: int, n: int) -> NDArray[np.float64]:
    return (np.arange(n) >= at).astype(float)


def _best_step_at(design: Design, ys: NDArray[np.float64], weights: NDArray[np.float64]) -> int:
    """Where a single step, added to the weighted fit of `design`, lowers its squared error the most: every
    split is scored at once from cumulative sums of the tails (each at least MIN_STEP_SIDE points)."""
    n = len(ys)
    weighted = design * weights[:, None]
    gram_inv = np.linalg.pinv(design.T @ weighted)  # pinv: a series of zeros leaves no weight to invert
    residual = ys - design @ (gram_inv @ (weighted.T @ ys))
    tails = np.cumsum(weighted[::-1], axis=0)[::-1]  # tails[k] = the weighted design rows from k on, summed
    tail_y = np.cumsum((weights * residual)[::-1])[::-1]
    spread = np.cumsum(weights[::-1])[::-1] - np.einsum("ij,jk,ik->i", tails, gram_inv, tails)
    k = np.arange(MIN_STEP_SIDE, n - MIN_STEP_SIDE + 1)
    gain = tail_y[k] ** 2 / np.maximum(spread[k], 1e-12)
    return int(k[np.argmax(gain)])
