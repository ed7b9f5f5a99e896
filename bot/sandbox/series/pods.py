"""A per-pod service's values split over its pods (bot/sandbox/placement.py) and its nodes.

Traffic is shared by the pods that serve (reachable, not crash-looping), CPU by the pods that run; latency, error
and status shares, memory and the runtime's signals are each pod's own. An effect narrowed to a version, a node
or a zone (`on_version`, `on_node`, `on_zone`) then moves only the pods it names. With no such effect the pods
add up to the service: the same totals, ratios and quantiles as one service-wide series.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.sandbox.cluster import Node
from bot.sandbox.exporters.catalog import SIGNALS
from bot.sandbox.placement import Pod, pod_count
from bot.sandbox.scenario import METRICS, Effect, Scenario, Service
from bot.sandbox.series.shapes import apply_effect

_SHARED = {"qps", "cpu_cores"}  # split over the pods; every other pod-level value is each pod's own


@dataclass(frozen=True)
class PodSignals:
    """One pod's values for the minutes it lives ([pod.first, pod.end) of the service's index)."""

    pod: Pod
    values: dict[str, list[float]]
    restarts: list[int]  # its container's restarts since it started
    scraped: list[bool]  # its own endpoint answers (reachable, not crash-looping): app series and up=1

    def at(self, metric: str, index: int) -> float:
        series = self.values[metric]
        return series[max(0, min(len(series) - 1, index - self.pod.first))]

    def until(self, index: int) -> PodSignals | None:
        """The same pod with no minute from `index` on (None: it had not started then)."""
        n = max(0, min(self.pod.end, index) - self.pod.first)
        if n == 0:
            return None
        values = {k: v[:n] for k, v in self.values.items()}
        return PodSignals(self.pod, values, self.restarts[:n], self.scraped[:n])


def pod_signals(
    scenario: Scenario,
    svc: Service,
    values: dict[str, list[float]],
    restarts: list[int],
    rels: list[int],
    pods: list[Pod],
) -> tuple[PodSignals, ...]:
    """Every pod's values; `values` and `restarts` are the service's, `rels` the minutes (relative to the incident)."""
    hit, crash_from = _crashloop(scenario, svc.name)
    serving, running = [0] * len(rels), [0] * len(rels)
    for pod in pods:
        for i in range(pod.first, pod.end):
            running[i] += 1
            serving[i] += _scraped(pod, i, rels, hit, crash_from)
    keys = [*METRICS, *(k for k in scenario.carried(svc.name) if SIGNALS[k].scope == "pod")]
    out = []
    for pod in pods:
        span = range(pod.first, pod.end)
        scraped = [bool(_scraped(pod, i, rels, hit, crash_from)) for i in span]
        own = {key: _share(key, values[key], span, scraped, serving, running) for key in keys}
        for effect in _effects_on(scenario, svc.name, pod.version, pod.node, pod.zone):
            if effect.metric in own:
                _narrowed(scenario, effect, own[effect.metric], rels[pod.first : pod.end], svc)
        out.append(PodSignals(pod, own, _restarts(restarts, pod, _restart_spread(scenario, svc.name)), scraped))
    return tuple(out)


def node_values(
    scenario: Scenario, svc: Service, values: dict[str, list[float]], rels: list[int], pods: list[Pod]
) -> dict[str, dict[str, list[float]]]:
    """Node-level signals (disk, clock offset) for each node that ever ran one of the service's pods."""
    keys = [k for k in scenario.carried(svc.name) if SIGNALS[k].scope == "node"]
    hosts = {p.node for p in pods}
    out: dict[str, dict[str, list[float]]] = {}
    for node in (n for n in scenario.nodes if n.name in hosts and keys):
        own = {key: list(values[key]) for key in keys}
        for effect in _effects_on(scenario, svc.name, "", node.name, node.zone):
            if effect.metric in own and not effect.on_version:
                _narrowed(scenario, effect, own[effect.metric], rels, svc)
        if "disk_used_gb" in own:
            own["disk_used_gb"] = [min(u, c) for u, c in zip(own["disk_used_gb"], own["disk_capacity_gb"], strict=True)]
        out[node.name] = own
    return out


def zone_of(nodes: tuple[Node, ...], name: str) -> str:
    return next((n.zone for n in nodes if n.name == name), "")


def _crashloop(scenario: Scenario, service: str) -> tuple[int, int | None]:
    """(pods hit, minute the crash loop begins) of the service's [[kubernetes.pods]] group, if it crash-loops."""
    groups = scenario.kubernetes.pods if scenario.kubernetes else ()
    group = next((g for g in groups if g.service == service and g.crashloop_minutes is not None), None)
    return (group.hit(), group.crashloop_minutes) if group else (0, None)


def _scraped(pod: Pod, index: int, rels: list[int], hit: int, crash_from: int | None) -> int:
    looping = pod.slot < hit and crash_from is not None and rels[index] >= crash_from
    return int(pod.reachable(index) and not looping)


def _share(
    key: str, series: list[float], span: range, scraped: list[bool], serving: list[int], running: list[int]
) -> list[float]:
    if key == "qps":
        return [series[i] / serving[i] if ok else 0.0 for i, ok in zip(span, scraped, strict=True)]
    if key == "cpu_cores":
        return [series[i] / running[i] for i in span]
    return [series[i] for i in span]


def _effects_on(scenario: Scenario, service: str, version: str, node: str, zone: str) -> list[Effect]:
    """The narrowed effects of `service` that reach a pod of this version on this node and zone."""
    return [
        e
        for e in scenario.timeline
        if e.service == service
        and e.scoped
        and (not e.on_version or e.on_version == version)
        and (not e.on_node or e.on_node == node)
        and (not e.on_zone or e.on_zone == zone)
    ]


def _narrowed(scenario: Scenario, effect: Effect, series: list[float], rels: list[int], svc: Service) -> None:
    end = effect.end_minutes if effect.end_minutes is not None else scenario.resolved_minutes
    apply_effect(effect, series, rels, svc.baseline(effect.metric), end)
    if effect.metric == "error_ratio" or (effect.metric in SIGNALS and SIGNALS[effect.metric].unit == "ratio"):
        series[:] = [min(v, 1.0) for v in series]


def _restart_spread(scenario: Scenario, service: str) -> int:
    """How many pods share the service's restarts: its [[kubernetes.pods]] group's affected ones, else all."""
    if scenario.kubernetes is not None and scenario.kubernetes.has_group(service):
        return scenario.kubernetes.group(service).hit()
    return pod_count(scenario, service)


def _restarts(total: list[int], pod: Pod, spread: int) -> list[int]:
    """The pod's share of the service's restarts (spread over the first `spread` slots), since it started."""
    if pod.slot >= spread:
        return [0] * (pod.end - pod.first)

    def share(n: int) -> int:
        return n // spread + (1 if pod.slot < n % spread else 0)

    first = share(total[pod.first - 1]) if pod.first else 0
    return [share(total[i]) - first for i in range(pod.first, pod.end)]
