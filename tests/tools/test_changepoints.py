"""The change-point detector on synthetic series with known shifts."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from tools.changepoints import detect_changes

T0 = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def minutes(n: int) -> list[datetime]:
    return [T0 + timedelta(minutes=i) for i in range(n)]


def noisy(level: float, n: int, rng: random.Random, spread: float = 0.05) -> list[float]:
    return [level * (1 + rng.uniform(-spread, spread)) for _ in range(n)]


def test_step_up_is_found_at_its_minute_with_before_and_after_levels():
    rng = random.Random(1)
    values = noisy(212, 185, rng) + noisy(1180, 100, rng)
    changes = detect_changes(minutes(285), values)
    assert len(changes) == 1
    change = changes[0]
    assert change.at == T0 + timedelta(minutes=185)
    assert 200 < change.before < 225 and 1100 < change.after < 1260
    assert change.ratio is not None and 5.0 < change.ratio < 6.0


def test_flat_noisy_series_has_no_change():
    rng = random.Random(2)
    assert detect_changes(minutes(288), noisy(200, 288, rng, spread=0.3)) == []


def test_single_outlier_is_not_a_change():
    rng = random.Random(3)
    values = noisy(200, 288, rng)
    values[140] = 5000
    assert detect_changes(minutes(288), values) == []


def test_plateau_gives_rise_and_recovery_in_time_order():
    rng = random.Random(4)
    values = noisy(0.5, 100, rng) + noisy(8.0, 60, rng) + noisy(0.5, 128, rng)
    changes = detect_changes(minutes(288), values)
    assert [c.at for c in changes] == [T0 + timedelta(minutes=100), T0 + timedelta(minutes=160)]
    assert changes[0].after > changes[0].before and changes[1].after < changes[1].before


def test_change_from_zero_has_no_ratio():
    values = [0.0] * 200 + [0.05] * 88
    changes = detect_changes(minutes(288), values)
    assert len(changes) == 1 and changes[0].before == 0 and changes[0].ratio is None


def test_change_near_the_end_of_the_window_is_still_found():
    rng = random.Random(5)
    values = noisy(200, 280, rng) + noisy(900, 8, rng)
    changes = detect_changes(minutes(288), values)
    assert [c.at for c in changes] == [T0 + timedelta(minutes=280)]


def test_small_relative_shift_is_ignored():
    values = [200.0] * 144 + [230.0] * 144  # x1.15 is business as usual
    assert detect_changes(minutes(288), values) == []


def test_gradual_ramp_from_rate_window_is_reported_once():
    rng = random.Random(6)
    ramp = [212 + (1180 - 212) * k / 5 for k in range(1, 5)]
    values = noisy(212, 180, rng) + ramp + noisy(1180, 104, rng)
    changes = detect_changes(minutes(288), values)
    assert len(changes) == 1
    assert T0 + timedelta(minutes=180) <= changes[0].at <= T0 + timedelta(minutes=184)


def test_too_short_series_has_no_changes():
    assert detect_changes(minutes(4), [1.0, 1.0, 9.0, 9.0]) == []
