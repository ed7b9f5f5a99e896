"""The daily curve in a metric series: a 24 h sinusoid fitted by least squares, on log values.

Traffic, and the latency and CPU that follow it, rise and fall over the day. Over a window of most of a day,
half of that curve reads like a trend and its steepest part like a step. The detectors fit it here and judge
a candidate against it: a trend must fit better than the daily curve (tools/analysis/trends.py), and a step is
measured after the daily curve is taken out, fitted together with the step so that a real step stays a step
(tools/analysis/changepoints.py). A shorter window shows too little of the day to tell a curve from a line: no fit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

import numpy as np
from numpy.typing import ArrayLike, NDArray

DAILY_MIN_HOURS = 18.0  # a window this long shows enough of a daily curve to fit one
DAY_S = 86400.0

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
