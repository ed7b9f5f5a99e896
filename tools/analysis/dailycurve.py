"""The daily curve in a metric series: a 24 h sinusoid fitted by least squares, on log values.

Traffic, and the latency and CPU that follow it, rise and fall over the day. Over a window of most of a day,
half of that curve reads like a trend and its steepest part like a step. The detectors fit it here and judge
a candidate against it: a trend must fit better than the daily curve (tools/analysis/trends.py), and a step is measured
after the daily curve is taken out, fitted together with the step so that a real step stays a step
(tools/analysis/changepoints.py). A shorter window shows too little of the day to tell a curve from a line: no fit.

The fits are 3 or 4 columns, so they are solved from their normal equations (Gaussian elimination with
partial pivoting) in plain Python; the columns are well conditioned over 18 h or more.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from datetime import datetime

DAILY_MIN_HOURS = 18.0  # a window this long shows enough of a daily curve to fit one
DAY_S = 86400.0

Design = list[tuple[float, ...]]  # one row per point: the columns 1, sin, cos of the 24 h cycle


def daily_design(times: Sequence[datetime]) -> Design | None:
    """Rows [1, sin, cos] of the 24 h cycle at each time; None when the window is too short to fit one."""
    seconds = [(t - times[0]).total_seconds() for t in times]
    if len(seconds) < 3 or seconds[-1] < DAILY_MIN_HOURS * 3600:
        return None
    angles = [2 * math.pi * s / DAY_S for s in seconds]
    return [(1.0, math.sin(a), math.cos(a)) for a in angles]


def daily_sse(design: Design | None, logs: Sequence[float]) -> float:
    """The residual sum of squares of level + daily curve; infinite without a design (a short window)."""
    if design is None:
        return math.inf
    coefficients = least_squares(design, logs)
    return math.fsum((y - _dot(row, coefficients)) ** 2 for row, y in zip(design, logs, strict=True))


def without_daily(design: Design | None, logs: Sequence[float], step_at: int) -> list[float]:
    """`logs` less the daily curve fitted together with a step at `step_at` (the level and the step stay)."""
    if design is None:
        return list(logs)
    rows = [(*row, 1.0 if i >= step_at else 0.0) for i, row in enumerate(design)]
    _, b_sin, b_cos, _ = least_squares(rows, logs)
    return [y - (row[1] * b_sin + row[2] * b_cos) for row, y in zip(design, logs, strict=True)]


def least_squares(rows: Design, ys: Sequence[float]) -> list[float]:
    """The coefficients minimising sum (y - row . b)^2: the normal equations, by Gaussian elimination."""
    width, columns = len(rows[0]), list(zip(*rows, strict=True))
    gram = [[math.fsum(map(operator.mul, columns[i], columns[j])) for j in range(width)] for i in range(width)]
    rhs = [math.fsum(map(operator.mul, columns[i], ys)) for i in range(width)]
    for col in range(width):
        pivot = max(range(col, width), key=lambda r: abs(gram[r][col]))
        gram[col], gram[pivot] = gram[pivot], gram[col]
        rhs[col], rhs[pivot] = rhs[pivot], rhs[col]
        for r in range(col + 1, width):
            factor = gram[r][col] / gram[col][col]
            gram[r] = [a - factor * b for a, b in zip(gram[r], gram[col], strict=True)]
            rhs[r] -= factor * rhs[col]
    coefficients = [0.0] * width
    for col in reversed(range(width)):
        known = math.fsum(gram[col][j] * coefficients[j] for j in range(col + 1, width))
        coefficients[col] = (rhs[col] - known) / gram[col][col]
    return coefficients


def _dot(row: Sequence[float], coefficients: Sequence[float]) -> float:
    return math.fsum(a * b for a, b in zip(row, coefficients, strict=True))
