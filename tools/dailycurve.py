"""The daily curve in a metric series: a 24 h sinusoid fitted by least squares, on log values.

Traffic, and the latency and CPU that follow it, rise and fall over the day. Over a window of most of a day,
half of that curve reads like a trend and its steepest part like a step. The detectors fit it here and judge
a candidate against it: a trend must fit better than the daily curve (tools/trends.py), and a step is measured
after the daily curve is taken out, fitted together with the step so that a real step stays a step
(tools/changepoints.py). A shorter window shows too little of the day to tell a curve from a line: no fit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy (~0.1 s, ~18 MB) loads with the first series analysed, not at start-up
    import numpy as np


DAILY_MIN_HOURS = 18.0  # a window this long shows enough of a daily curve to fit one
DAY_S = 86400.0


def daily_design(times: Sequence[datetime]) -> np.ndarray | None:
    """Columns [1, sin, cos] of the 24 h cycle at each time; None when the window is too short to fit one."""
    import numpy as np
    seconds = np.asarray([(t - times[0]).total_seconds() for t in times], dtype=float)
    if len(seconds) < 3 or seconds[-1] < DAILY_MIN_HOURS * 3600:
        return None
    angle = 2 * math.pi * seconds / DAY_S
    return np.column_stack([np.ones_like(angle), np.sin(angle), np.cos(angle)])


def daily_sse(design: np.ndarray | None, logs: np.ndarray) -> float:
    """The residual sum of squares of level + daily curve; infinite without a design (a short window)."""
    import numpy as np
    if design is None:
        return math.inf
    coefficients = np.linalg.lstsq(design, logs, rcond=None)[0]
    return float(np.sum((logs - design @ coefficients) ** 2))


def without_daily(design: np.ndarray | None, logs: np.ndarray, step_at: int) -> np.ndarray:
    """`logs` less the daily curve fitted together with a step at `step_at` (the level and the step stay)."""
    import numpy as np
    if design is None:
        return logs
    step = (np.arange(len(logs)) >= step_at).astype(float)
    coefficients = np.linalg.lstsq(np.column_stack([design, step]), logs, rcond=None)[0]
    return logs - design[:, 1:] @ coefficients[1:3]
