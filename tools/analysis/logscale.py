"""Metric values on a log scale, where a ratio is a distance, and the robust noise of a series there.

The detectors (tools/analysis/changepoints.py, tools/analysis/trends.py) judge every shift on this scale.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from numpy.typing import ArrayLike, NDArray

MIN_NOISE = 0.01  # log units: a perfectly flat series still has a 1 % noise floor

Floats = NDArray[np.float64]


def log_values(values: ArrayLike, floor: float = 0.0) -> Floats:
    """log(value + log_shift(values, floor)): ratios become distances, and zeros stay finite."""
    return np.log(np.asarray(values, dtype=float) + log_shift(values, floor))


def log_shift(values: ArrayLike, floor: float = 0.0) -> float:
    """What log_values adds before the log: 1 % of the 90th percentile, or `floor` (the least value the counts
    behind the points can tell from zero) when that is more, less any negative minimum."""
    raw = np.asarray(values, dtype=float)
    low = min(0.0, float(raw.min()))
    top = float(np.percentile(raw - low, 90)) or float((raw - low).max())
    return max(0.01 * top, floor, 1e-12) - low


def rolling_median(logs: Floats, half: int) -> Floats:
    """The median of each point and `half` points either side (mirrored at the ends)."""
    half = min(half, len(logs) - 1)
    padded = np.pad(logs, half, mode="reflect")  # mirrored ends: the median still sees only this series' values
    return np.median(sliding_window_view(padded, 2 * half + 1), axis=1)


def noise_sigma(logs: Floats) -> float:
    """Robust standard deviation of the noise: MAD of the first differences / sqrt(2), at least MIN_NOISE."""
    if len(logs) < 3:
        return MIN_NOISE
    diffs = np.diff(logs)
    mad = float(np.median(np.abs(diffs - np.median(diffs))))
    return max(1.4826 * mad / math.sqrt(2), MIN_NOISE)
