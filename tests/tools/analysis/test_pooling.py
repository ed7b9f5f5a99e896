"""Points on too few requests pooled before detection (tools/analysis/pooling.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tools.analysis.logscale import log_shift
from tools.analysis.pooling import MIN_COUNT, Counts, Pooled, pooled

T0 = datetime(2026, 11, 28, tzinfo=UTC)
TIMES = [T0 + timedelta(minutes=5 * i) for i in range(8)]


def test_without_counts_or_with_enough_requests_the_series_stays_as_it_is():
    values = [0.2, 0.3, 0.25, 0.2, 0.9, 0.3, 0.2, 0.2]
    assert pooled(TIMES, values, None) == Pooled(TIMES, values, 0.0)
    kept = pooled(TIMES, values, Counts([MIN_COUNT] * 8))
    assert (list(kept.times), list(kept.values), kept.floor) == (TIMES, values, 0.0)


def test_a_share_pools_to_the_share_of_the_pooled_requests_from_the_first_point_of_each_pool():
    requests = [50.0, 100.0, 60.0, 200.0, 30.0, 30.0, 150.0, 20.0]  # pools: 0-2 (210), 3 (200), 4-7 (230)
    errors = [1.0, 0.0, 3.0, 2.0, 0.0, 1.0, 3.0, 0.0]
    shares = [e / r for e, r in zip(errors, requests, strict=True)]
    pools = pooled(TIMES, shares, Counts(requests, share=True))
    assert list(pools.times) == [TIMES[0], TIMES[3], TIMES[4]]
    assert list(pools.values) == pytest.approx([4 / 210, 2 / 200, 4 / 230])
    assert pools.floor == pytest.approx(1 / 210)  # one request's share of the median pool


def test_a_short_last_pool_joins_the_one_before_and_a_quantile_has_no_floor():
    requests = [150.0, 100.0, 30.0, 30.0, 30.0, 30.0, 30.0, 20.0]  # 0-1 (250), then 170: too few, joins
    p99 = [0.1, 0.4, 0.2, 0.2, 0.2, 0.2, 0.2, 1.0]
    pools = pooled(TIMES, p99, Counts(requests))
    assert list(pools.times) == [TIMES[0]]
    assert list(pools.values) == pytest.approx([(15 + 40 + 5 * 6 + 20) / 420])
    assert pools.floor == 0.0


def test_points_without_requests_weigh_nothing():
    pools = pooled(TIMES[:3], [5.0, 0.2, 0.4], Counts([0.0, 100.0, 100.0]))
    assert list(pools.values) == pytest.approx([0.3])


def test_a_floor_raises_the_log_shift_of_a_sparse_share():
    shares = [0.0, 0.0, 0.005, 0.0, 0.01]
    assert log_shift(shares) == pytest.approx(0.01 * 0.008)
    assert log_shift(shares, floor=1 / 200) == pytest.approx(1 / 200)
