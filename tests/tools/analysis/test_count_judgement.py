"""A change on a low-traffic series judged on the requests behind its points (tools/analysis/pooling.py): an
exact split of the errors for a share, enough requests for a quantile."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tools.analysis.changepoints import detect_changes, detect_spikes
from tools.analysis.pooling import P_CHANGE, QUANTILE_SIDE_REQUESTS, RANKED_BELOW, Counts, pooled, split_p_value

T0 = datetime(2026, 11, 28, tzinfo=UTC)


def times(n: int) -> list[datetime]:
    return [T0 + timedelta(minutes=5 * i) for i in range(n)]


def test_errors_split_like_the_requests_are_chance_and_a_twentyfold_share_is_not():
    assert split_p_value((6, 6), (600, 600)) == pytest.approx(1.0)
    assert split_p_value((60, 1200), (6000, 6000)) < 1e-200
    assert split_p_value((3, 9), (600, 600)) == pytest.approx(0.146, abs=0.001)  # 2 * P(X >= 9), X ~ Bin(12, 1/2)


def test_no_errors_or_a_side_without_requests_tells_nothing():
    assert split_p_value((0, 0), (600, 600)) == 1.0
    assert split_p_value((4, 0), (600, 0)) == 1.0


def test_many_errors_take_the_normal_approximation_and_agree_with_the_exact_sum_near_its_limit():
    exact = split_p_value((9_900, 10_050), (1e6, 1e6))
    approximated = split_p_value((9_950, 10_100), (1e6, 1e6))  # past EXACT_LIMIT errors
    assert 0.2 < exact < 0.4 and 0.2 < approximated < 0.4


def test_a_share_pool_knows_its_errors_in_the_values_unit():
    requests = [100.0, 100.0, 100.0, 100.0]
    percent = [1.0, 3.0, 2.0, 0.0]  # a share shown in percent: 1, 3, 2, 0 errors
    pools = pooled(times(4), percent, Counts(requests, share=True, whole=100.0))
    assert list(pools.requests) == [200.0, 200.0]
    assert list(pools.errors or []) == pytest.approx([4.0, 2.0])


def test_a_quantile_side_needs_enough_requests_and_unknown_counts_leave_the_judgement_to_the_noise():
    step = [0.1] * 3 + [0.3] * 3
    few = pooled(times(6), step, Counts([QUANTILE_SIDE_REQUESTS / 4] * 6))
    enough = pooled(times(6), step, Counts([QUANTILE_SIDE_REQUESTS / 2] * 6))
    assert not few.differ(slice(0, 3), slice(3, 6))
    assert enough.differ(slice(0, 3), slice(3, 6))
    assert pooled(times(6), [0.1] * 6, None).differ(slice(0, 1), slice(1, 2))


def shares(errors: list[int], requests: int) -> list[float]:
    return [e / requests for e in errors]


def test_a_step_from_a_few_errors_to_many_is_a_change_on_the_counts_too():
    # 40 pools of 200 requests: 4 errors in the first 20, then 3-4 errors a pool (70 in 20): an error ratio going
    # from 0.1 % to 1.75 %.
    errors = [0, 1, 0, 0, 1, 0, 0, 0, 0, 0] * 2 + [3, 4, 3, 4, 3, 4, 3, 4, 3, 4] * 2
    values, counts = shares(errors, 200), Counts([200.0] * 40, share=True)
    assert split_p_value((4.0, 70.0), (4000.0, 4000.0)) < P_CHANGE
    found = detect_changes(times(40), values, counts=counts)
    assert [c.at for c in found] == [times(40)[20]]


def test_a_steady_doubling_from_one_error_a_pool_to_two_is_too_few_errors_and_from_ten_to_twenty_is_a_change():
    # 0.5 % -> 1 % on 30 pools a side: 30 errors against 60 split by chance about once in 300 tries (a day of
    # places tried meets that); 300 against 600 do not.
    values = [0.005] * 30 + [0.01] * 30
    assert detect_changes(times(60), values, min_ratio=1.3)  # the values alone, without their noise, see it
    assert detect_changes(times(60), values, min_ratio=1.3, counts=Counts([200.0] * 60, share=True)) == []
    assert detect_changes(times(60), values, min_ratio=1.3, counts=Counts([2000.0] * 60, share=True))


def test_a_tripled_p99_over_too_few_requests_a_side_is_not_judged_a_change():
    values = [0.1] * 4 + [0.3] * 4
    assert detect_changes(times(8), values, counts=Counts([300.0] * 8))  # 1200 requests a side
    assert detect_changes(times(8), values, counts=Counts([200.0] * 8)) == []  # 800: the slowest 8 of them


def test_a_burst_of_errors_on_sparse_pools_is_a_spike_only_when_the_errors_stand_out():
    quiet = [0, 1, 0, 1, 0, 0, 1, 0, 1, 0] * 3
    counts = Counts([200.0] * 40, share=True)
    small = shares([*quiet[:20], 3, 3, 3, *quiet[:17]], 200)
    large = shares([*quiet[:20], 30, 40, 30, *quiet[:17]], 200)
    assert detect_spikes(times(40), large, counts=counts)
    assert detect_spikes(times(40), small, counts=counts) == []


def test_a_quantile_in_two_clusters_whose_medians_move_but_whose_ranks_do_not_is_no_change():
    # A p99 over a few hundred requests: in the slow tail (about 1.2 s) when two or three slow requests came, in
    # the fast body (about 0.2 s) when none did. 12 of 30 points fast before, 16 of 30 after: the medians go from
    # the slow cluster to the fast one, the ranks barely part.
    slow, fast = [1.1, 1.2, 1.3], [0.18, 0.2, 0.22]
    before = (fast * 4 + slow * 6)[:30]
    after = (fast * 6 + slow * 4)[:30]
    counts = Counts([600.0] * 60)
    assert detect_changes(times(60), before + after)  # the medians alone call it a fall
    assert detect_changes(times(60), before + after, counts=counts) == []
    assert detect_changes(times(60), [0.2] * 30 + [0.6] * 30, counts=counts)  # a real x3 ranks apart
    busy = Counts([RANKED_BELOW] * 60)  # 50 above a p99: its points no longer cluster, the medians judge alone
    assert detect_changes(times(60), before + after, counts=busy)
