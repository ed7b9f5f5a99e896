"""Detection rate and false alarms of tools/analysis/changepoints.py on synthetic series with multiplicative noise.

Run on demand:  .venv/bin/python -m pytest tests/bench/bench_detection.py -s
Every series has 288 points (a day at 5 minutes, or 4.8 h at 1 minute) around a level of 200, each point
multiplied by (1 + N(0, noise)) clipped at 0.05: real latency and traffic spread in proportion to their level.
"+daily" multiplies a daily curve on top (+-25 % over the 288 points, a random phase). 100 seeded runs per cell.

- step 1.5x / 2x / 3x: the level multiplies at a random point in the middle; found = a `change` (or a spike
  or trend starting there) within 10 points of it, in the right direction.
- trend: flat, then a steady climb to 2x the level at the window end (a leak, creeping latency); found = a trend.
- sawtooth: memory climbing 2x over ~60 points then dropping back (restarts), 3-5 times; found = a sawtooth.
- spike 3x: a 6-15 point excursion to 3x that comes back; found = a spike (or change pair) at it.
- FA flat / FA +daily: no incident at all; an alarm = any finding (change, spike, trend or sawtooth).
Prints a table and the CPU it took; asserts nothing about the numbers
(tests/tools/analysis/test_detection_floor.py guards
a floor).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import tools.analysis.changepoints as cp

try:
    import tools.analysis.trends as trends
except ImportError:  # before trends and sawtooth had a detector
    trends = None  # type: ignore[assignment]

N = 288
RUNS = 100
NOISES = (0.05, 0.10, 0.15, 0.20, 0.25, 0.30)
T0 = datetime(2026, 11, 28, tzinfo=UTC)
TIMES = [T0 + timedelta(minutes=5 * i) for i in range(N)]
NEAR = 10  # points: how close a finding must be to the true onset


def noisy(levels: list[float], noise: float, rng: random.Random, daily: bool = False) -> list[float]:
    phase = rng.uniform(0, 2 * math.pi)
    curve = [1 + 0.25 * math.sin(phase + 2 * math.pi * i / N) if daily else 1.0 for i in range(N)]
    return [level * c * max(0.05, 1 + rng.gauss(0, noise)) for level, c in zip(levels, curve, strict=True)]


def findings(values: list[float]) -> dict[str, list[Any]]:
    """Whatever the detectors offer: changes and spikes always, trends and sawtooth when
    tools.analysis.trends exists."""
    found: dict[str, list[Any]] = {
        "change": list(cp.detect_changes(TIMES, values)),
        "spike": list(cp.detect_spikes(TIMES, values)),
    }
    for kind, name in (("trend", "detect_trends"), ("sawtooth", "detect_sawtooth")):
        detector: Callable[..., Any] | None = getattr(trends, name, None)
        result = detector(TIMES, values) if detector else None
        found[kind] = [] if result is None else list(result) if isinstance(result, list | tuple) else [result]
    return found


def index_of(moment: datetime) -> int:
    return round((moment - T0).total_seconds() / 300)


def step_case(factor: float) -> Callable[[float, random.Random, bool], bool]:
    def run(noise: float, rng: random.Random, daily: bool) -> bool:
        at = rng.randrange(60, N - 60)
        values = noisy([200.0] * at + [200.0 * factor] * (N - at), noise, rng, daily)
        found = findings(values)
        starts = [index_of(c.at) for c in found["change"] if c.after > c.before]
        starts += [index_of(t.start) for t in found["trend"]]
        return any(abs(s - at) <= NEAR for s in starts)

    return run


def trend_case(noise: float, rng: random.Random, daily: bool) -> bool:
    at = rng.randrange(40, 140)
    levels = [200.0] * at + [200.0 * (1 + (i + 1) / (N - at)) for i in range(N - at)]
    found = findings(noisy(levels, noise, rng, daily))
    return bool(found["trend"])


def sawtooth_case(noise: float, rng: random.Random, daily: bool) -> bool:
    period = rng.randrange(50, 80)
    offset = rng.randrange(period)
    levels = [200.0 * (1 + ((i + offset) % period) / period) for i in range(N)]
    found = findings(noisy(levels, noise, rng, daily))
    return bool(found["sawtooth"])


def spike_case(noise: float, rng: random.Random, daily: bool) -> bool:
    at, width = rng.randrange(60, N - 60), rng.randrange(6, 16)
    levels = [600.0 if at <= i < at + width else 200.0 for i in range(N)]
    found = findings(noisy(levels, noise, rng, daily))
    starts = [index_of(s.start) for s in found["spike"]] + [index_of(c.at) for c in found["change"]]
    return any(abs(s - at) <= NEAR for s in starts)


def flat_alarm(noise: float, rng: random.Random, daily: bool) -> bool:
    found = findings(noisy([200.0] * N, noise, rng, daily))
    return any(found.values())


CASES: dict[str, tuple[Callable[[float, random.Random, bool], bool], bool]] = {
    "step 1.5x": (step_case(1.5), False),
    "step 2x": (step_case(2.0), False),
    "step 3x": (step_case(3.0), False),
    "step 2x +daily": (step_case(2.0), True),
    "trend 2x": (trend_case, False),
    "sawtooth": (sawtooth_case, False),
    "spike 3x": (spike_case, False),
    "FA flat": (flat_alarm, False),
    "FA +daily": (flat_alarm, True),
}


def detection_table() -> dict[str, dict[float, int]]:
    table: dict[str, dict[float, int]] = {}
    for name, (case, daily) in CASES.items():
        table[name] = {}
        for noise in NOISES:
            rng = random.Random(f"{name}/{noise}")
            table[name][noise] = sum(case(noise, rng, daily) for _ in range(RUNS))
    return table


def test_bench_detection_rates_and_false_alarms_by_noise():
    started = time.process_time()
    table = detection_table()
    cpu_s = time.process_time() - started
    width = max(len(name) for name in table)
    header = f"{'case (/100)':<{width}} | " + " | ".join(f"{n:>4.0%}" for n in NOISES)
    print("\n" + header + "\n" + "-" * len(header))
    for name, row in table.items():
        print(f"{name:<{width}} | " + " | ".join(f"{row[n]:>4}" for n in NOISES))
    series = len(CASES) * len(NOISES) * RUNS
    print(f"CPU: {cpu_s:.1f} s for {series} series, {cpu_s / series * 1000:.1f} ms per series (all detectors)")
    assert set(table) == set(CASES)
