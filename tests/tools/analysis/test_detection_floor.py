"""A floor under the detectors on seeded noisy series (the full table is tests/bench/bench_detection.py).

Each property runs 30 seeded series of 288 points with multiplicative noise (each point x (1 + N(0, noise)));
the floors sit a little under what the bench measures, so a regression shows without flaking.
"""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

import tests.bench.detection_series as series
from tools.analysis.changepoints import detect_changes, detect_spikes
from tools.analysis.pooling import Counts
from tools.analysis.trends import detect_sawtooth, detect_trends

N = 288
RUNS = 30
T0 = datetime(2026, 11, 28, tzinfo=UTC)
TIMES = [T0 + timedelta(minutes=5 * i) for i in range(N)]


def noisy(levels: list[float], noise: float, rng: random.Random, daily: bool = False) -> list[float]:
    phase = rng.uniform(0, 2 * math.pi)
    curve = [1 + 0.25 * math.sin(phase + 2 * math.pi * i / N) if daily else 1.0 for i in range(N)]
    return [level * c * max(0.05, 1 + rng.gauss(0, noise)) for level, c in zip(levels, curve, strict=True)]


def index_of(moment: datetime) -> int:
    return round((moment - T0).total_seconds() / 300)


def test_a_doubling_under_25_percent_noise_is_found_at_its_place():
    rng = random.Random("step")
    found = 0
    for _ in range(RUNS):
        at = rng.randrange(60, N - 60)
        changes = detect_changes(TIMES, noisy([200.0] * at + [400.0] * (N - at), 0.25, rng))
        found += any(abs(index_of(c.at) - at) <= 10 and c.after > c.before for c in changes)
    assert found >= 28


def test_a_flat_series_under_25_percent_noise_raises_almost_no_alarm():
    rng = random.Random("flat")
    alarms = 0
    for _ in range(RUNS):
        values = noisy([200.0] * N, 0.25, rng)
        alarms += bool(
            detect_changes(TIMES, values)
            or detect_spikes(TIMES, values)
            or detect_trends(TIMES, values)
            or detect_sawtooth(TIMES, values)
        )
    assert alarms <= 1


def test_a_daily_curve_is_not_a_change():
    rng = random.Random("daily")
    alarms = sum(bool(detect_changes(TIMES, noisy([200.0] * N, 0.10, rng, daily=True))) for _ in range(RUNS))
    assert alarms <= 1


def test_half_a_daily_curve_rising_to_the_window_end_is_not_a_trend():
    # the hinge (flat, then a climb to the end) fits half a daily sine well; over a day-long window the fitted
    # daily curve fits it better, so no trend is reported (the bench had 6/100 false alarms here at 15 % noise)
    rng = random.Random("daily-trend")
    alarms = 0
    for _ in range(RUNS):
        values = noisy([200.0] * N, 0.15, rng, daily=True)
        alarms += bool(detect_trends(TIMES, values) or detect_changes(TIMES, values) or detect_spikes(TIMES, values))
    assert alarms <= 1


def test_a_leak_doubling_by_the_window_end_is_a_trend_from_near_its_start():
    rng = random.Random("trend")
    found = 0
    for _ in range(RUNS):
        at = rng.randrange(40, 140)
        levels = [200.0] * at + [200.0 * (1 + (i + 1) / (N - at)) for i in range(N - at)]
        trends = detect_trends(TIMES, noisy(levels, 0.15, rng))
        found += any(abs(index_of(t.start) - at) <= 30 and t.after > 1.6 * t.before and t.per_hour > 0 for t in trends)
    assert found >= 26


def test_repeated_climbs_and_drops_are_a_sawtooth_not_a_trend():
    rng = random.Random("sawtooth")
    found = 0
    for _ in range(RUNS):
        period = rng.randrange(50, 80)
        values = noisy([200.0 * (1 + (i % period) / period) for i in range(N)], 0.10, rng)
        saw = detect_sawtooth(TIMES, values)
        found += saw is not None and len(saw.drops) >= N // period - 1 and not detect_trends(TIMES, values)
    assert found >= 27


def test_a_tripling_that_comes_back_under_20_percent_noise_is_a_spike():
    rng = random.Random("spike")
    found = 0
    for _ in range(RUNS):
        at, width = rng.randrange(60, N - 60), rng.randrange(6, 16)
        values = noisy([600.0 if at <= i < at + width else 200.0 for i in range(N)], 0.20, rng)
        found += any(abs(index_of(s.start) - at) <= 3 and s.ratio and s.ratio > 2 for s in detect_spikes(TIMES, values))
    assert found >= 28


def test_a_doubling_on_a_40_percent_daily_curve_with_outliers_is_found_at_its_place():
    rng = series.generator("lognormal-daily-step")
    found = 0
    for _ in range(RUNS):
        at = int(rng.integers(60, N - 60))
        levels = np.where(np.arange(N) >= at, 400.0, 200.0)
        changes = detect_changes(TIMES, series.lognormal(levels, 0.25, rng, series.DAILY_AMPLITUDE))
        found += any(abs(index_of(c.at) - at) <= 10 and c.after > c.before for c in changes)
    assert found >= 28  # the bench: 98/100 (90/100 before the robust daily curve)


def test_a_40_percent_daily_curve_with_outliers_raises_almost_no_alarm():
    rng = series.generator("lognormal-daily-flat")
    alarms = 0
    for _ in range(RUNS):
        values = series.lognormal(np.full(N, 200.0), 0.25, rng, series.DAILY_AMPLITUDE)
        alarms += bool(
            detect_changes(TIMES, values)
            or detect_spikes(TIMES, values)
            or detect_trends(TIMES, values)
            or detect_sawtooth(TIMES, values)
        )
    assert alarms <= 1  # the bench: 0/100 (6/100 before: spikes at the day's peak)


def low_traffic_runs(
    name: str, kind: str, factor: float, rate: float = 0.1
) -> list[tuple[int, list[datetime], list[float], Counts]]:
    """RUNS series of one pod at `rate` requests a second, with a step of `factor` at `at` (none when factor is 1)."""
    rng = series.generator(name)
    runs = []
    for _ in range(RUNS):
        at = int(rng.integers(60, N - 60))
        times, values, counts = series.low_traffic(rate, rng, kind, np.where(np.arange(N) >= at, factor, 1.0))
        runs.append((at, times, values, Counts(counts, share=kind == "errors")))
    return runs


def any_finding(times: list[datetime], values: list[float], counts: Counts) -> bool:
    return bool(
        detect_changes(times, values, counts=counts)
        or detect_spikes(times, values, counts=counts)
        or detect_trends(times, values, counts=counts)
        or detect_sawtooth(times, values, counts=counts)
    )


@pytest.mark.parametrize("rate", [0.1, 0.5])
def test_a_low_traffic_error_ratio_judged_on_counts_raises_no_onset_over_a_day_of_noise(rate: float):
    runs = low_traffic_runs(f"low-errors-flat/{rate}", "errors", 1.0, rate)
    alarms = sum(any_finding(times, values, counts) for _, times, values, counts in runs)
    assert alarms == 0  # the bench: 0/100 at 0.1 and 0.5 requests a second (100/100 and 98/100 on the values alone)


def test_a_p99_at_two_requests_a_second_judged_on_counts_raises_few_alarms():
    runs = low_traffic_runs("low-p99-flat/2", "p99", 1.0, 2.0)
    alarms = sum(any_finding(times, values, counts) for _, times, values, counts in runs)
    assert alarms <= 1  # the bench: 1/100 (4/100 on the values alone; 3/100 before its points had to rank apart)


def test_a_low_traffic_error_ratio_going_from_1_to_20_percent_is_found_on_counts():
    found = 0
    for at, times, values, counts in low_traffic_runs("low-errors-step", "errors", 20.0):
        changes = detect_changes(times, values, counts=counts)
        found += any(abs(index_of(c.at) - at) <= 10 and c.after > 5 * c.before for c in changes)
    assert found >= 28  # the bench: 100/100 (77/100 on the values alone)


def test_a_low_traffic_p99_judged_on_counts_raises_few_alarms():
    alarms = 0
    for _, times, values, counts in low_traffic_runs("low-p99-flat", "p99", 1.0):
        alarms += bool(detect_changes(times, values, counts=counts) or detect_spikes(times, values, counts=counts))
    assert alarms <= 2  # the bench: 1/100 with the trend and sawtooth detectors too (23/100 on the values alone)
