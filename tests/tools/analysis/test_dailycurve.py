"""The daily curve the detectors take out before judging a step or a trend (tools/analysis/dailycurve.py)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from tools.analysis.dailycurve import daily_design, daily_sse, without_daily

T0 = datetime(2026, 11, 28, tzinfo=UTC)
DAY = [T0 + timedelta(minutes=5 * i) for i in range(288)]
CURVE = [0.25 * math.sin(1.0 + 2 * math.pi * i / 288) for i in range(288)]


def test_a_window_shorter_than_most_of_a_day_gets_no_daily_fit():
    assert daily_design(DAY[:120]) is None  # 10 h
    assert daily_sse(None, CURVE) == math.inf
    assert without_daily(None, CURVE, 100).tolist() == CURVE


def test_taking_the_daily_curve_out_keeps_a_step_and_flattens_the_rest():
    design = daily_design(DAY)
    assert design is not None
    step = [math.log(2) if i >= 150 else 0.0 for i in range(288)]
    flat = without_daily(design, [5.3 + c + s for c, s in zip(CURVE, step, strict=True)], 150)
    assert all(math.isclose(v, flat[0], abs_tol=1e-6) for v in flat[:150])
    assert math.isclose(float(flat[200] - flat[100]), math.log(2), abs_tol=1e-6)
    assert daily_sse(design, [5.3 + c for c in CURVE]) < 1e-9
