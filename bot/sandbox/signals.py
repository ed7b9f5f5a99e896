"""Per-minute signals of every service (p99, qps, error ratio, cpu, memory, restarts) from a scenario.

The metrics and the log generators both read these, so a log line's latency agrees with the histogram.
Baselines get a daily traffic curve and small seeded noise; the scenario's effects then multiply the
baseline, so an effect keeps the daily shape (a surge at 15:00 still rises and falls with the day).
"""

from __future__ import annotations

import math
import random
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.sandbox.cluster import crashloop_restarts
from bot.sandbox.scenario import METRICS, Effect, Scenario, Service

# Relative noise per metric: small enough that no change-point detector mistakes it for an incident.
_NOISE = {"p99_ms": 0.04, "qps": 0.03, "error_ratio": 0.15, "cpu_cores": 0.04, "memory_mb": 0.005}
_DAILY = {"qps", "cpu_cores"}  # these follow the day's traffic curve (peak 15:00 UTC)
_DAILY_AMPLITUDE = 0.25
# With a scenario's own `noise`, these metrics get it (real latency, traffic and CPU series are that noisy);
# error ratios keep at least their own, memory stays smooth. With `daily_amplitude`, latency follows the day
# at a third of traffic's amplitude (queues grow with load).
_NOISY = {"p99_ms", "qps", "cpu_cores"}
_LATENCY_DAILY_SHARE = 1 / 3


@dataclass(frozen=True)
class ServiceSignals:
    """One service's values, one per minute from `start`."""

    service: str
    start: datetime
    values: dict[str, list[float]]
    restarts: list[int]  # cumulative container restarts at each minute
    up: list[int] = field(default_factory=list)  # Prometheus' `up` for its targets: 0 while none can be scraped

    def until(self, moment: datetime) -> ServiceSignals:
        """The same signals with no minute from `moment` on (Prometheus stopped collecting then)."""
        n = max(0, min(self.minutes, int((moment - self.start).total_seconds() // 60)))
        values = {metric: series[:n] for metric, series in self.values.items()}
        return ServiceSignals(self.service, self.start, values, self.restarts[:n], self.up[:n])

    @property
    def minutes(self) -> int:
        return len(self.restarts)

    def at(self, metric: str, when: datetime) -> float:
        """The value of `metric` at the minute containing `when` (clamped to the range)."""
        index = int((when - self.start).total_seconds() // 60)
        return self.values[metric][max(0, min(self.minutes - 1, index))]


def seed_for(*parts: str) -> int:
    """A stable seed (str hashes vary per process; crc32 does not)."""
    return zlib.crc32("/".join(parts).encode())


def signals_from_scenario(scenario: Scenario, start: datetime, minutes: int, now: datetime) -> list[ServiceSignals]:
    """Every service's signals over [start, start + minutes) for a run whose clock reads `now`."""
    incident = scenario.incident_at(now)
    first_rel = int((start - incident).total_seconds() // 60)
    rels = list(range(first_rel, first_rel + minutes))
    return [_service_signals(scenario, svc, start, rels) for svc in scenario.services]


def _service_signals(scenario: Scenario, svc: Service, start: datetime, rels: list[int]) -> ServiceSignals:
    rng = random.Random(seed_for(scenario.name, svc.name))
    values: dict[str, list[float]] = {}
    restarts = [0] * len(rels)
    for metric in METRICS:
        series = _baseline(svc, metric, start, len(rels), rng, _shape_of(scenario, metric))
        for effect in (e for e in scenario.timeline if e.service == svc.name and e.metric == metric):
            end = effect.end_minutes if effect.end_minutes is not None else scenario.resolved_minutes
            wraps = _apply(effect, series, rels, svc.baseline(metric), end)
            if effect.shape == "sawtooth":
                restarts = [r + w for r, w in zip(restarts, wraps, strict=True)]
        values[metric] = [min(v, 1.0) for v in series] if metric == "error_ratio" else series
    restarts = [r + c for r, c in zip(restarts, _crashloops(scenario, svc.name, rels), strict=True)]
    return ServiceSignals(svc.name, start, values, restarts, _up(scenario, svc.name, rels))


def _up(scenario: Scenario, service: str, rels: list[int]) -> list[int]:
    """1 while Prometheus can scrape the service; 0 once every one of its pods crashloops (nothing answers)."""
    groups = scenario.kubernetes.pods if scenario.kubernetes else ()
    down = [
        g.crashloop_minutes
        for g in groups
        if g.service == service and g.crashloop_minutes is not None and g.hit() == g.replicas
    ]
    return [0 if down and rel >= down[0] else 1 for rel in rels]


def _crashloops(scenario: Scenario, service: str, rels: list[int]) -> list[int]:
    """Cumulative restarts of the service's crash-looping pods (the [kubernetes] block's crashloop_minutes)."""
    groups = scenario.kubernetes.pods if scenario.kubernetes else ()
    group = next((g for g in groups if g.service == service and g.crashloop_minutes is not None), None)
    if group is None or group.crashloop_minutes is None:
        return [0] * len(rels)
    began = group.crashloop_minutes
    return [group.hit() * crashloop_restarts((rel - began) * 60.0) if rel >= began else 0 for rel in rels]


def _shape_of(scenario: Scenario, metric: str) -> tuple[float, float]:
    """(relative noise, daily amplitude) of one metric: the defaults unless the scenario sets its own."""
    noise = _NOISE[metric]
    if scenario.noise is not None and metric in _NOISY:
        noise = scenario.noise
    elif scenario.noise is not None and metric == "error_ratio":
        noise = max(noise, scenario.noise)
    amplitude = _DAILY_AMPLITUDE if metric in _DAILY else 0.0
    if scenario.daily_amplitude is not None:
        share = 1.0 if metric in _DAILY else _LATENCY_DAILY_SHARE if metric == "p99_ms" else 0.0
        amplitude = scenario.daily_amplitude * share
    return noise, amplitude


def _baseline(
    svc: Service, metric: str, start: datetime, minutes: int, rng: random.Random, shape: tuple[float, float]
) -> list[float]:
    base, (noise, amplitude) = svc.baseline(metric), shape
    out = []
    for i in range(minutes):
        level = base
        if amplitude:
            hour = (start + timedelta(minutes=i)).hour + (start.minute + i) % 60 / 60
            level *= 1 + amplitude * math.sin(2 * math.pi * (hour - 9) / 24)
        out.append(max(0.0, level * (1 + rng.gauss(0, noise))))
    return out


def _apply(effect: Effect, series: list[float], rels: list[int], base: float, end: int | None) -> list[int]:
    """Multiply `series` in place by the effect; return the cumulative count of sawtooth wraps."""
    ratio = effect.to / base if base else effect.to
    wraps, count = [], 0
    for i, rel in enumerate(rels):
        since = rel - effect.at_minutes
        if since >= 0 and (end is None or rel < end):
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
    return 1.0
