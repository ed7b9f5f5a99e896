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

Two more tables (series from tests/bench/detection_series.py):
- lognormal noise (sigma 0.25 and 0.35 in log space) with 1 % outliers, a 2x step on a flat base and on a
  +-40 % daily curve (found as above), and false alarms on the same without a step;
- one pod at 0.1 / 0.5 / 2 requests a second: its p99 and its error ratio over 5-minute buckets, a step found
  (latency x3, errors 1 % -> 20 %) and false alarms over a day of noise, once on the values alone and once with
  the counts of requests behind each point (tools/analysis/pooling.py).
Prints the tables and the CPU they took; asserts nothing about the numbers (tests/tools/analysis/
test_detection_floor.py guards a floor).
"""

from __future__ import annotations

import inspect
import math
import random
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

import tests.bench.detection_series as series
import tools.analysis.changepoints as cp
from tools.analysis.pooling import Counts

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


def findings(values: list[float], times: list[datetime] = TIMES, counts: Counts | None = None) -> dict[str, list[Any]]:
    """Whatever the detectors offer: changes and spikes always, trends and sawtooth when
    tools.analysis.trends exists; `counts` (the requests behind each point) go to every detector that takes them."""
    found: dict[str, list[Any]] = {
        "change": list(call(cp.detect_changes, times, values, counts)),
        "spike": list(call(cp.detect_spikes, times, values, counts)),
    }
    for kind, name in (("trend", "detect_trends"), ("sawtooth", "detect_sawtooth")):
        detector: Callable[..., Any] | None = getattr(trends, name, None)
        result = call(detector, times, values, counts) if detector else None
        found[kind] = [] if result is None else list(result) if isinstance(result, list | tuple) else [result]
    return found


def call(detector: Callable[..., Any], times: list[datetime], values: list[float], counts: Counts | None) -> Any:
    """The detector on the series, with the counts when it takes them (older detectors do not)."""
    if counts is not None and "counts" in inspect.signature(detector).parameters:
        return detector(times, values, counts=counts)
    return detector(times, values)


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


SIGMAS = (0.25, 0.35)  # lognormal noise, in log space


def lognormal_step(amplitude: float) -> Callable[[float, np.random.Generator], bool]:
    def run(sigma: float, rng: np.random.Generator) -> bool:
        at = int(rng.integers(60, N - 60))
        levels = np.where(np.arange(N) >= at, 400.0, 200.0)
        found = findings(series.lognormal(levels, sigma, rng, amplitude))
        return any(abs(s - at) <= NEAR for s in upward_starts(found))

    return run


def lognormal_alarm(amplitude: float) -> Callable[[float, np.random.Generator], bool]:
    def run(sigma: float, rng: np.random.Generator) -> bool:
        return any(findings(series.lognormal(np.full(N, 200.0), sigma, rng, amplitude)).values())

    return run


def upward_starts(found: dict[str, list[Any]]) -> list[int]:
    starts = [index_of(c.at) for c in found["change"] if c.after > c.before]
    return starts + [index_of(t.start) for t in found["trend"]]


LOGNORMAL_CASES: dict[str, Callable[[float, np.random.Generator], bool]] = {
    "step 2x flat": lognormal_step(0.0),
    "step 2x daily+-40%": lognormal_step(series.DAILY_AMPLITUDE),
    "FA flat": lognormal_alarm(0.0),
    "FA daily+-40%": lognormal_alarm(series.DAILY_AMPLITUDE),
}

RATES = (0.1, 0.5, 2.0)  # requests a second per pod


def low_traffic_case(kind: str, factor: float, counted: bool) -> Callable[[float, np.random.Generator], bool]:
    """A step of `factor` (latency x, error chance x) at a random point found; with factor 1, any finding."""

    def run(rate: float, rng: np.random.Generator) -> bool:
        at = int(rng.integers(60, N - 60))
        factors = np.where(np.arange(N) >= at, factor, 1.0)
        times, values, counts = series.low_traffic(rate, rng, kind, factors)
        found = findings(values, times, Counts(counts, share=kind == "errors") if counted else None)
        if factor == 1.0:
            return any(found.values())
        return any(abs(s - at) <= NEAR for s in upward_starts(found))

    return run


LOW_TRAFFIC_CASES = {
    f"{what} {how}": low_traffic_case(kind, factor, how == "counts")
    for what, kind, factor in (
        ("p99 x3", "p99", 3.0),
        ("errors 1->20%", "errors", 20.0),
        ("FA p99", "p99", 1.0),
        ("FA errors", "errors", 1.0),
    )
    for how in ("values", "counts")
}


def cell(case: Callable[[float, np.random.Generator], bool], column: float, rng: np.random.Generator) -> int:
    return sum(case(column, rng) for _ in range(RUNS))


def run_table(cases: dict[str, Callable[[float, np.random.Generator], bool]], columns: tuple[float, ...]) -> None:
    started = time.process_time()
    table = {name: {c: cell(case, c, series.generator(f"{name}/{c}")) for c in columns} for name, case in cases.items()}
    cpu_s = time.process_time() - started
    width = max(len(name) for name in table)
    header = f"{'case (/100)':<{width}} | " + " | ".join(f"{c:>5}" for c in columns)
    print("\n" + header + "\n" + "-" * len(header))
    for name, row in table.items():
        print(f"{name:<{width}} | " + " | ".join(f"{row[c]:>5}" for c in columns))
    count = len(cases) * len(columns) * RUNS
    print(f"CPU: {cpu_s:.1f} s for {count} series, {cpu_s / count * 1000:.1f} ms per series (generation included)")


def test_bench_lognormal_noise_with_outliers_on_a_flat_base_and_a_daily_curve():
    print("\nlognormal noise (columns: sigma in log space), 1 % outliers 3-10x:")
    run_table(LOGNORMAL_CASES, SIGMAS)


def test_bench_low_traffic_series_with_and_without_counts():
    print("\none pod at a few requests a second (columns: requests/s), +-40 % daily traffic, 5-minute buckets:")
    run_table(LOW_TRAFFIC_CASES, RATES)
