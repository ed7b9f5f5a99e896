"""The daily curve the detectors take out before judging a step or a trend (tools/dailycurve.py)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np

from tools.dailycurve import daily_design, daily_sse, without_daily

T0 = datetime(2026, 11, 28, tzinfo=UTC)
DAY = [T0 + timedelta(minutes=5 * i) for i in range(288)]
CURVE = np.asarray([0.25 * math.sin(1.0 + 2 * math.pi * i / 288) for i in range(288)])


def test_a_window_shorter_than_most_of_a_day_gets_no_daily_fit():
    assert daily_design(DAY[:120]) is None  # 10 h
    assert daily_sse(None, CURVE) == math.inf
    assert np.array_equal(without_daily(None, CURVE, 100), CURVE)


def test_taking_the_daily_curve_out_keeps_a_step_and_flattens_the_rest():
    design = daily_design(DAY)
    assert design is not None
    step = np.where(np.arange(288) >= 150, math.log(2), 0.0)
    flat = without_daily(design, 5.3 + CURVE + step, 150)
    assert np.allclose(flat[:150], flat[0], atol=1e-6)
    assert math.isclose(float(flat[200] - flat[100]), math.log(2), abs_tol=1e-6)
    assert daily_sse(design, 5.3 + CURVE) < 1e-9
