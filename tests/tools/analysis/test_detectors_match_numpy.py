"""The plain-Python detectors against the numpy version they replaced, on 1,000 seeded random series.

That numpy version, verbatim but for docstrings (tools/analysis/segmentation.py, dailycurve.py, changepoints.py and
trends.py as of commit 15ab16a), lives only in
tests/tools/analysis/numpy_detectors.py, and this file is skipped where numpy
is not installed (it is a [dev] dependency). The public outputs must be the same: the same breaks from
optimal_breaks, the same change points, spikes, trends and sawtooth, every float within 1e-9 relative. The
series are what a diagnosis meets and the edge cases: steps, spikes, trends, sawtooth, daily curves (with and
without a step), multiplicative noise, flat, zeros and sparse small integers; 24 to 300 points, 1 or 5 min apart.
"""

from __future__ import annotations

import dataclasses
import math
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import tools.analysis.changepoints as detectors
import tools.analysis.dailycurve as dailycurve
import tools.analysis.segmentation as segmentation
import tools.analysis.trends as trends
from tests.tools.analysis.numpy_detectors import daily_design, daily_sse, np, reference_outputs, without_daily
from tools.analysis.changepoints import _PENALTY, MIN_SIDE_POINTS

T0 = datetime(2026, 11, 28, tzinfo=UTC)
KINDS = ("step", "spike", "trend", "sawtooth", "daily", "zeros", "flat")
CASES = 1000


def incident_series(rng: random.Random, kind: str, n: int) -> list[float]:
    base, noise = rng.uniform(0.5, 500), rng.choice([0.0, 0.02, 0.05, 0.1, 0.2, 0.3])
    levels = [base] * n
    if kind == "step":
        at, ratio = rng.randrange(5, n - 5), rng.choice([0.3, 0.5, 1.5, 2, 3])
        levels = [base * (ratio if i >= at else 1) for i in range(n)]
    elif kind == "spike":
        at, width = rng.randrange(3, n - 18), rng.randrange(1, 15)
        levels = [base * (3 if at <= i < at + width else 1) for i in range(n)]
    elif kind == "trend":
        at = rng.randrange(0, n - 20)
        levels = [base * (1 + max(0, i - at) / (n - at)) for i in range(n)]
    elif kind == "sawtooth":
        period = rng.randrange(30, 80)
        levels = [base * (1 + (i % period) / period) for i in range(n)]
    elif kind == "daily":
        levels = _daily(rng, base, n)
    elif kind == "zeros":
        levels = [0.0] * n
        if rng.random() < 0.5:  # sparse small counts, exactly: ties everywhere
            levels, noise = [float(rng.choice([0, 0, 0, 1, 5])) for _ in range(n)], 0.0
    elif kind == "flat":
        noise = rng.choice([0.0, 0.01])
    return [v * max(0.05, 1 + rng.gauss(0, noise)) if noise else v for v in levels]


def _daily(rng: random.Random, base: float, n: int) -> list[float]:
    phase = rng.uniform(0, 2 * math.pi)
    levels = [base * (1 + 0.3 * math.sin(phase + 2 * math.pi * i / n)) for i in range(n)]
    if rng.random() < 0.5:
        at = rng.randrange(10, n - 10)
        levels = [v * (2 if i >= at else 1) for i, v in enumerate(levels)]
    return levels


def same(a: Any, b: Any) -> bool:
    """Equal, floats within 1e-9 relative (1e-12 absolute near zero), field by field and item by item."""
    if isinstance(a, list | tuple):
        return isinstance(b, list | tuple) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if dataclasses.is_dataclass(a):
        return type(a) is type(b) and all(same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, float | np.floating) or isinstance(b, float | np.floating):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return bool(a == b)


def plain_outputs(times: list[datetime], values: list[float]) -> dict[str, Any]:
    logs = detectors.log_values(values)
    penalty = _PENALTY * detectors.noise_sigma(logs) ** 2 * math.log(len(values))
    return {
        "breaks": segmentation.optimal_breaks(logs, penalty, MIN_SIDE_POINTS),
        "changes": detectors.detect_changes(times, values),
        "spikes": detectors.detect_spikes(times, values),
        "trends": trends.detect_trends(times, values),
        "sawtooth": trends.detect_sawtooth(times, values),
    }


def test_the_plain_detectors_give_what_the_numpy_ones_gave_on_a_thousand_series():
    rng = random.Random(1414)
    differences, found = [], dict.fromkeys(("breaks", "changes", "spikes", "trends", "sawtooth"), 0)
    for case in range(CASES):
        kind, n, step_min = rng.choice(KINDS), rng.choice([24, 60, 120, 288, 300]), rng.choice([1, 5])
        times = [T0 + timedelta(minutes=step_min * i) for i in range(n)]
        values = incident_series(rng, kind, n)
        plain, reference = plain_outputs(times, values), reference_outputs(times, values)
        differences += [(case, kind, n, key) for key in reference if not same(plain[key], reference[key])]
        found = {key: count + bool(reference[key]) for key, count in found.items()}
    assert differences == []
    assert all(count >= 20 for count in found.values()), found  # every detector found something to compare


def test_the_plain_daily_fits_match_numpy_least_squares():
    rng = random.Random(2424)
    times = [T0 + timedelta(minutes=5 * i) for i in range(288)]
    for _ in range(50):
        logs = [math.log(v) for v in _daily(rng, rng.uniform(1, 500), 288)]
        logs = [y + rng.gauss(0, 0.1) for y in logs]
        at = rng.randrange(3, 285)
        plain_design, design = dailycurve.daily_design(times), daily_design(times)
        assert same(dailycurve.daily_sse(plain_design, logs), daily_sse(design, np.asarray(logs)))
        assert same(dailycurve.without_daily(plain_design, logs, at), list(without_daily(design, np.asarray(logs), at)))
