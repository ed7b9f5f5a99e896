"""tools.analysis.segmentation against references written here: every segmentation enumerated on short series, and an
unpruned optimal partitioning (segment costs from each segment's own mean, no running sums) on longer ones.

The series are what the detectors meet: level shifts, multiplicative noise, spikes, daily curves, in log space
with the detector's own penalty (5 x noise variance x log n) and also with penalties from tiny to large.
"""

from __future__ import annotations

import math
import random
import subprocess
import sys
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import pytest

from tools.analysis.changepoints import _PENALTY, MIN_SIDE_POINTS, log_values, noise_sigma
from tools.analysis.segmentation import optimal_breaks

TIE = 1e-9  # relative: two penalised costs closer than this are a tie


def segment_cost(x: list[float]) -> float:
    mean = math.fsum(x) / len(x)
    return math.fsum((v - mean) ** 2 for v in x)


def penalised_cost(x: list[float], breaks: list[int], penalty: float) -> float:
    edges = [0, *breaks, len(x)]
    return sum(segment_cost(x[a:b]) for a, b in pairwise(edges)) + penalty * (len(breaks) + 1)


def every_segmentation(n: int, min_size: int, start: int = 0) -> Iterator[list[int]]:
    """All break lists of range(start, n) whose segments are at least min_size long."""
    if n - start >= min_size:
        yield []
    for b in range(start + min_size, n - min_size + 1):
        for rest in every_segmentation(n, min_size, b):
            yield [b, *rest]


def brute_force(x: list[float], penalty: float, min_size: int) -> tuple[float, list[list[int]]]:
    """The least penalised cost and every segmentation within TIE of it."""
    scored = [(penalised_cost(x, b, penalty), b) for b in every_segmentation(len(x), min_size)]
    least = min(cost for cost, _ in scored)
    return least, [b for cost, b in scored if cost <= least + TIE * max(least, 1.0)]


def optimal_partitioning(x: list[float], penalty: float, min_size: int) -> tuple[float, list[int]]:
    """Jackson et al.'s recursion without pruning: best[t] = min over s of best[s] + cost(x[s:t]) + penalty."""
    n = len(x)
    best, last = [0.0] + [math.inf] * n, [0] * (n + 1)
    for t in range(min_size, n + 1):
        for s in [0, *range(min_size, t - min_size + 1)]:
            total = best[s] + segment_cost(x[s:t]) + penalty
            if total < best[t]:
                best[t], last[t] = total, s
    breaks, end = [], n
    while last[end] > 0:
        breaks.append(last[end])
        end = last[end]
    return best[n], breaks[::-1]


def incident_series(rng: random.Random, n: int) -> list[float]:
    """A level with multiplicative noise, and some of: level shifts, a spike, a daily curve."""
    levels = [rng.choice([0.4, 20.0, 200.0, 5000.0])] * n
    for _ in range(rng.randrange(0, 3)):
        at, factor = rng.randrange(n), rng.choice([0.3, 0.5, 1.5, 2.0, 3.0])
        levels = levels[:at] + [v * factor for v in levels[at:]]
    if rng.random() < 0.4:
        at, width = rng.randrange(n), rng.randrange(1, 8)
        levels = [v * 3 if at <= i < at + width else v for i, v in enumerate(levels)]
    phase, daily = rng.uniform(0, 2 * math.pi), rng.random() < 0.4
    noise = rng.choice([0.02, 0.1, 0.25])
    curve = [1 + (0.25 * math.sin(phase + 2 * math.pi * i / n) if daily else 0.0) for i in range(n)]
    return [v * c * max(0.05, 1 + rng.gauss(0, noise)) for v, c in zip(levels, curve, strict=True)]


def detector_input(rng: random.Random, n: int) -> tuple[list[float], float]:
    """The log series and penalty detect_changes segments, or (a third of the time) a penalty from tiny to large."""
    logs = log_values(incident_series(rng, n)).tolist()
    penalty = _PENALTY * noise_sigma(logs) ** 2 * math.log(n)
    return logs, penalty * rng.choice([1.0, 1.0, 0.01, 0.2, 5.0])


def test_matches_every_segmentation_enumerated_on_short_series():
    rng = random.Random(14)
    for _ in range(400):
        logs, penalty = detector_input(rng, rng.randrange(MIN_SIDE_POINTS, 19))
        least, optimal = brute_force(logs, penalty, MIN_SIDE_POINTS)
        found = optimal_breaks(logs, penalty, MIN_SIDE_POINTS)
        assert found in optimal
        assert penalised_cost(logs, found, penalty) == pytest.approx(least, rel=TIE, abs=TIE)


def test_matches_unpruned_optimal_partitioning_on_longer_series():
    rng = random.Random(1414)
    for _ in range(60):
        logs, penalty = detector_input(rng, rng.randrange(20, 90))
        least, reference = optimal_partitioning(logs, penalty, MIN_SIDE_POINTS)
        found = optimal_breaks(logs, penalty, MIN_SIDE_POINTS)
        assert penalised_cost(logs, found, penalty) == pytest.approx(least, rel=TIE, abs=TIE)
        assert found == reference  # noisy floats leave no exact ties to break differently


@pytest.mark.parametrize("min_size", [1, 2, 3, 5])
def test_every_segment_is_at_least_min_size_and_optimal(min_size):
    rng = random.Random(min_size)
    for _ in range(40):
        logs, penalty = detector_input(rng, rng.randrange(2 * min_size, 10 + 2 * min_size))
        found = optimal_breaks(logs, penalty, min_size)
        edges = [0, *found, len(logs)]
        assert all(b - a >= min_size for a, b in pairwise(edges))
        assert penalised_cost(logs, found, penalty) == pytest.approx(brute_force(logs, penalty, min_size)[0], rel=TIE)


def test_exact_tie_takes_the_earliest_break():
    # [0 0 0] + [.5 1 1 1] and [0 0 0 .5] + [1 1 1] cost exactly the same (0.1875, in binary fractions)
    assert optimal_breaks([0, 0, 0, 0.5, 1, 1, 1], 0.01, 3) == [3]
    assert optimal_breaks([1, 1, 1, 0.5, 0, 0, 0], 0.01, 3) == [3]


def test_exact_tie_in_an_earlier_segment_takes_the_earliest_break_there_too():
    tied = [0, 0, 0, 0.5, 1, 1, 1]
    assert optimal_breaks([*tied, 8, 8, 8, 8], 0.01, 3) == [3, 7]


def test_clean_steps_are_found_where_they_are():
    values = [1.0] * 40 + [3.0] * 25 + [0.5] * 35
    assert optimal_breaks(values, 0.5, 3) == [40, 65]


def test_large_penalty_or_short_series_gives_no_break():
    values = [1.0] * 10 + [2.0] * 10
    assert optimal_breaks(values, 100.0, 3) == []
    assert optimal_breaks(values[:5], 0.001, 3) == []
    assert optimal_breaks([], 1.0, 3) == []


def test_a_constant_shift_of_the_series_does_not_move_the_breaks():
    rng = random.Random(7)
    logs, penalty = detector_input(rng, 288)
    assert optimal_breaks(logs, penalty, 3) == optimal_breaks([v + 1e4 for v in logs], penalty, 3)


def test_detecting_changes_loads_neither_scipy_nor_ruptures():
    # scipy is installed here (scikit-learn, for `opsbot intent train`); a diagnosis must not load it (~70 MB of
    # peak RSS with ruptures): numpy alone does the detectors' numeric work
    script = (
        "import sys\nfrom datetime import UTC, datetime, timedelta\n"
        "from tools.analysis.changepoints import detect_changes, detect_spikes\n"
        "from tools.analysis.trends import detect_sawtooth, detect_trends\n"
        "t = [datetime(2026, 12, 1, tzinfo=UTC) + timedelta(minutes=5 * i) for i in range(288)]\n"
        "v = [1.0 + (i % 7) / 50 + (2.0 if i > 150 else 0.0) for i in range(288)]\n"
        "assert detect_changes(t, v)\ndetect_spikes(t, v)\ndetect_trends(t, v)\ndetect_sawtooth(t, v)\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'scipy', 'ruptures', 'sklearn'}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert done.stdout.strip() == "['numpy']", done.stdout
