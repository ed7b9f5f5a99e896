"""Per-minute signals of every service (p99, qps, error ratio, cpu, memory, restarts) from a scenario.

The metrics and the log generators both read these, so a log line's latency agrees with the histogram.
Baselines get a daily traffic curve and small seeded noise; the scenario's effects then change the baseline
(bot/sandbox/series/shapes.py), so an effect keeps the daily shape (a surge at 15:00 still rises and falls with
the day). A service also carries the opt-in signals it sets (series/extras.py) and, when it is per-pod, the same
values split over its pods and nodes (series/pods.py). Every service's pods over time come from
bot/sandbox/placement.py, so the per-pod series, the pinned log lines and the Kubernetes stand-in agree.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime

from bot.sandbox.cluster import crashloop_restarts
from bot.sandbox.placement import Pod, pod_count, roster
from bot.sandbox.scenario import METRICS, Scenario, Service
from bot.sandbox.series.extras import extra_values
from bot.sandbox.series.pods import PodSignals, node_values, pod_signals
from bot.sandbox.series.shapes import apply_effect, baseline_series, seed_for, shape_of

__all__ = ["ServiceSignals", "seed_for", "signals_from_scenario"]


@dataclass(frozen=True)
class ServiceSignals:
    """One service's values, one per minute from `start`.

    `values` holds the golden signals and the opt-in ones it carries; `pods` and `nodes` their per-pod and per-node
    split when the service is per-pod; `roster` every pod it had (for the pinned logs and the Kubernetes stand-in).
    """

    service: str
    start: datetime
    values: dict[str, list[float]]
    restarts: list[int]  # cumulative container restarts at each minute
    up: list[int] = field(default_factory=list)  # Prometheus' `up` for its targets: 0 while none can be scraped
    pods: tuple[PodSignals, ...] = ()
    nodes: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    roster: tuple[Pod, ...] = ()

    def until(self, moment: datetime) -> ServiceSignals:
        """The same signals with no minute from `moment` on (Prometheus stopped collecting then)."""
        n = max(0, min(self.minutes, int((moment - self.start).total_seconds() // 60)))
        values = {metric: series[:n] for metric, series in self.values.items()}
        pods = tuple(kept for p in self.pods if (kept := p.until(n)) is not None)
        nodes = {name: {k: v[:n] for k, v in series.items()} for name, series in self.nodes.items()}
        return ServiceSignals(
            self.service, self.start, values, self.restarts[:n], self.up[:n], pods, nodes, self.roster
        )

    @property
    def minutes(self) -> int:
        return len(self.restarts)

    def index(self, when: datetime) -> int:
        """The minute containing `when`, clamped to the range."""
        return max(0, min(self.minutes - 1, int((when - self.start).total_seconds() // 60)))

    def at(self, metric: str, when: datetime) -> float:
        """The value of `metric` at the minute containing `when` (clamped to the range)."""
        return self.values[metric][self.index(when)]


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
        series = baseline_series(svc.baseline(metric), start, len(rels), rng, *shape_of(scenario, metric))
        for effect in (e for e in scenario.timeline if e.service == svc.name and e.metric == metric and not e.scoped):
            end = effect.end_minutes if effect.end_minutes is not None else scenario.resolved_minutes
            wraps = apply_effect(effect, series, rels, svc.baseline(metric), end)
            if effect.shape == "sawtooth":
                restarts = [r + w for r, w in zip(restarts, wraps, strict=True)]
        values[metric] = [min(v, 1.0) for v in series] if metric == "error_ratio" else series
    values |= extra_values(scenario, svc, start, rels, values["qps"])
    restarts = [r + c for r, c in zip(restarts, _crashloops(scenario, svc.name, rels), strict=True)]
    if svc.kind == "external":
        return ServiceSignals(svc.name, start, values, restarts, _up(scenario, svc.name, rels))
    counts = (
        [int(r) for r in values["replicas"]] if "replicas" in values else [pod_count(scenario, svc.name)] * len(rels)
    )
    pods = roster(scenario, svc.name, rels, counts)
    if not svc.per_pod:
        return ServiceSignals(svc.name, start, values, restarts, _up(scenario, svc.name, rels), roster=tuple(pods))
    split = pod_signals(scenario, svc, values, restarts, rels, pods)
    nodes = node_values(scenario, svc, values, rels, pods)
    return ServiceSignals(svc.name, start, values, restarts, [], split, nodes, tuple(pods))


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
