"""A healthy series (a level, the day's curve and seeded noise) and the shapes an effect gives it.

An effect multiplies the series by the ratio of its target to the baseline, so the daily curve and the noise stay
under it (a surge at 15:00 still rises and falls with the day). The exception is `plateau`, a cap: the series keeps
its course and is cut flat at the target.
"""

from __future__ import annotations

import math
import random
import zlib
from datetime import datetime, timedelta

from bot.sandbox.scenario import Effect, Scenario

# Relative noise per metric: small enough that no change-point detector mistakes it for an incident.
NOISE = {"p99_ms": 0.04, "qps": 0.03, "error_ratio": 0.15, "cpu_cores": 0.04, "memory_mb": 0.005}
_DAILY = {"qps", "cpu_cores"}  # these follow the day's traffic curve (peak 15:00 UTC)
_DAILY_AMPLITUDE = 0.25
# With a scenario's own `noise`, these metrics get it (real latency, traffic and CPU series are that noisy);
# error ratios keep at least their own, memory stays smooth. With `daily_amplitude`, latency follows the day
# at a third of traffic's amplitude (queues grow with load).
_NOISY = {"p99_ms", "qps", "cpu_cores"}
_LATENCY_DAILY_SHARE = 1 / 3


def seed_for(*parts: str) -> int:
    """A stable seed (str hashes vary per process; crc32 does not)."""
    return zlib.crc32("/".join(parts).encode())


def shape_of(scenario: Scenario, metric: str) -> tuple[float, float]:
    """(relative noise, daily amplitude) of one golden metric: the defaults unless the scenario sets its own."""
    noise = NOISE[metric]
    if scenario.noise is not None and metric in _NOISY:
        noise = scenario.noise
    elif scenario.noise is not None and metric == "error_ratio":
        noise = max(noise, scenario.noise)
    amplitude = _DAILY_AMPLITUDE if metric in _DAILY else 0.0
    if scenario.daily_amplitude is not None:
        share = 1.0 if metric in _DAILY else _LATENCY_DAILY_SHARE if metric == "p99_ms" else 0.0
        amplitude = scenario.daily_amplitude * share
    return noise, amplitude


def baseline_series(
    base: float, start: datetime, minutes: int, rng: random.Random, noise: float, amplitude: float
) -> list[float]:
    """`base` for each minute from `start`, on the day's curve (peak 15:00 UTC) and with relative noise."""
    out = []
    for i in range(minutes):
        level = base
        if amplitude:
            level *= daily_factor(start + timedelta(minutes=i), amplitude)
        out.append(max(0.0, level * (1 + rng.gauss(0, noise))))
    return out


def daily_factor(moment: datetime, amplitude: float) -> float:
    hour = moment.hour + moment.minute / 60
    return 1 + amplitude * math.sin(2 * math.pi * (hour - 9) / 24)


def apply_effect(effect: Effect, series: list[float], rels: list[int], base: float, end: int | None) -> list[int]:
    """Change `series` in place by the effect over the minutes `rels`; return the cumulative sawtooth wraps."""
    ratio = effect.to / base if base else effect.to
    wraps, count = [], 0
    for i, rel in enumerate(rels):
        since = rel - effect.at_minutes
        if since >= 0 and (end is None or rel < end):
            if effect.shape == "plateau":
                series[i] = min(series[i], effect.to)
                wraps.append(count)
                continue
            if effect.shape == "sawtooth":
                period = max(1, effect.ramp_minutes)
                count += 1 if since and since % period == 0 else 0
                frac = (since % period) / period
            else:
                frac = _fraction(effect, since)
            factor = 1 + (ratio - 1) * frac
            series[i] = series[i] * factor if base else effect.to * frac
        wraps.append(count)
    return wraps


def _fraction(effect: Effect, since: int) -> float:
    """How far (0..1) the effect has moved the metric from its baseline towards `to`, `since` minutes in."""
    span = max(1, effect.ramp_minutes)
    if effect.shape == "ramp":
        return min(1.0, (since + 1) / span)
    if effect.shape == "recover":
        return max(0.0, 1 - since / span)
    if effect.shape == "periodic":
        return 1.0 if since % effect.every_minutes < effect.for_minutes else 0.0
    return 1.0
