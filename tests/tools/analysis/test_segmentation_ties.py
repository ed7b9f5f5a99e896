"""Exact ties between break sets go to the earliest break, whatever the last bit of the input says.

A sparse count series ([0 0 0 0 0 5 0 0 5 1 0 ... 0 5 1 0 0 0 1 5]) has two break sets of exactly the same cost:
its tail [5 1 0 0 0 1 5] splits as [5 1 0] + [0 0 1 5] or as [5 1 0 0] + [0 1 5], the same values in another order.
Computed in floating point the tie went to whichever side rounding favoured, and log(1.05) is one unit in the last
place apart between numpy's AVX-512 kernel and libm: one machine reported the change at :20, another at :21.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction
from itertools import pairwise

import numpy as np

from tools.analysis.changepoints import _PENALTY, MIN_SIDE_POINTS, best_step, log_values, noise_sigma
from tools.analysis.segmentation import optimal_breaks

SPARSE_COUNTS = [0, 0, 0, 0, 0, 5, 0, 0, 5, 1, 0, 0, 0, 0, 0, 0, 0, 5, 1, 0, 0, 0, 1, 5]
EARLIER, LATER = [5, 10, 17, 20], [5, 10, 17, 21]
LOG_1_05 = (0.04879016416943204, 0.04879016416943205)  # log(1.05) from numpy's AVX-512 kernel, and from libm


def exact_cost(x: np.ndarray, breaks: list[int], penalty: float) -> Fraction:
    """The penalised l2 cost in exact arithmetic on the floats as given."""
    total = Fraction(penalty) * (len(breaks) + 1)
    for a, b in pairwise([0, *breaks, len(x)]):
        part = [Fraction(float(v)) for v in x[a:b]]
        mean = sum(part, Fraction(0)) / len(part)
        total += sum(((v - mean) ** 2 for v in part), Fraction(0))
    return total


def sparse_logs() -> tuple[np.ndarray, float]:
    logs = log_values([float(v) for v in SPARSE_COUNTS])
    return logs, _PENALTY * noise_sigma(logs) ** 2 * math.log(len(logs))


def with_log_1_05(logs: np.ndarray, value: float) -> np.ndarray:
    """The series as a machine whose log(1.05) rounds to `value` computes it (the counts of 1 map there)."""
    return np.where(np.asarray(SPARSE_COUNTS) == 1, value, logs)


def nudged(x: np.ndarray, rng: random.Random, ulps: int = 2) -> np.ndarray:
    """Each value moved by up to `ulps` units in the last place, up or down at random."""
    out = x.copy()
    for i in range(len(out)):
        for _ in range(rng.randrange(ulps + 1)):
            out[i] = np.nextafter(out[i], rng.choice([-np.inf, np.inf]))
    return out


def test_the_two_break_sets_of_the_sparse_series_cost_exactly_the_same():
    logs, penalty = sparse_logs()
    for value in LOG_1_05:
        tied = with_log_1_05(logs, value)
        assert exact_cost(tied, EARLIER, penalty) == exact_cost(tied, LATER, penalty)


def test_an_exact_tie_goes_to_the_earlier_last_break_whichever_way_log_rounds():
    logs, penalty = sparse_logs()

    assert [optimal_breaks(with_log_1_05(logs, value), penalty, MIN_SIDE_POINTS) for value in LOG_1_05] == [
        EARLIER,
        EARLIER,
    ]


def test_an_exact_tie_survives_any_rounding_of_the_last_bits():
    logs, penalty = sparse_logs()
    rng = random.Random(820)

    found = {tuple(optimal_breaks(nudged(logs, rng), penalty, MIN_SIDE_POINTS)) for _ in range(300)}

    assert found == {tuple(EARLIER)}


def test_a_real_difference_beyond_rounding_still_decides():
    """The tie margin is rounding-sized: the last point raised by 1e-6 makes the later break cheaper, and it wins."""
    logs, penalty = sparse_logs()
    raised = logs.copy()
    raised[-1] += 1e-6

    assert exact_cost(raised, LATER, penalty) < exact_cost(raised, EARLIER, penalty)
    assert optimal_breaks(raised, penalty, MIN_SIDE_POINTS) == LATER


def test_a_tie_in_an_earlier_segment_goes_to_its_earliest_break_too():
    """The same mirrored counts, then a clear step: the tie settles on the earlier break, the step where it is."""
    series = log_values([5.0, 1.0, 0.0, 0.0, 0.0, 1.0, 5.0] + [500.0] * 8)
    penalty = _PENALTY * noise_sigma(series) ** 2 * math.log(len(series))
    rng = random.Random(7)

    found = {tuple(optimal_breaks(nudged(series, rng), penalty, MIN_SIDE_POINTS)) for _ in range(200)}

    assert found == {(3, 7)}


def test_the_local_step_split_breaks_a_tie_the_same_way():
    tail = log_values([5.0, 1.0, 0.0, 0.0, 0.0, 1.0, 5.0])
    rng = random.Random(3)

    splits = {best_step(nudged(tail, rng), 3, 5)[0] for _ in range(200)}

    assert splits == {3}
