"""The daily curve the detectors take out before judging a step or a trend (tools/analysis/dailycurve.py)."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta

from tools.analysis.dailycurve import daily_component, daily_design, daily_sse, without_daily

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


def test_the_robust_daily_curve_keeps_the_step_out_and_the_outliers_off():
    design = daily_design(DAY)
    rng = random.Random("robust-curve")
    logs = [5.3 + c + (math.log(2) if i >= 150 else 0.0) + rng.gauss(0, 0.1) for i, c in enumerate(CURVE)]
    for i in (20, 90, 91, 200, 260):  # scrape glitches and GC pauses, 5-20x off
        logs[i] += rng.choice((-1, 1)) * math.log(rng.uniform(5, 20))
    curve = daily_component(design, logs, penalty=1.0)
    assert max(abs(float(fitted) - true) for fitted, true in zip(curve, CURVE, strict=True)) < 0.05


def test_a_flat_series_with_a_step_has_no_daily_curve_to_take_out():
    design = daily_design(DAY)
    rng = random.Random("flat-step")
    for _ in range(20):
        at = rng.randrange(60, 228)
        logs = [5.3 + (math.log(1.5) if i >= at else 0.0) + rng.gauss(0, 0.3) for i in range(288)]
        assert not daily_component(design, logs, penalty=5 * 0.3**2 * math.log(288)).any()


def test_no_daily_curve_without_a_design_or_in_a_series_of_zeros():
    assert daily_component(None, CURVE, 1.0).tolist() == [0.0] * 288
    assert not daily_component(daily_design(DAY), [0.0] * 288, 1.0).any()
