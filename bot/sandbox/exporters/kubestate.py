"""kube-state-metrics: a Deployment's replicas and its HPA's bounds, and each container's requests and limits.

Names and labels as kube-state-metrics exports them (namespace, deployment, horizontalpodautoscaler, pod,
container, resource, unit), plus the `service` label every sandbox series carries so one catalogue template
(`{$label="$service"}`) reads them all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from bot.sandbox.exporters.text import Family, Target, carrying, gauge, pod_targets
from bot.sandbox.scenario import Scenario
from bot.sandbox.signals import ServiceSignals

_RESOURCES = (
    ("cpu_request_cores", "requests", "cpu", "core", 1.0),
    ("cpu_limit_cores", "limits", "cpu", "core", 1.0),
    ("memory_request_mb", "requests", "memory", "byte", 2.0**20),
    ("memory_limit_mb", "limits", "memory", "byte", 2.0**20),
)
Values = Callable[[Scenario, ServiceSignals], list[float]]


def kubestate_families(scenario: Scenario, signals: list[ServiceSignals]) -> Iterator[Family]:
    scaled = carrying(scenario, signals, "replicas")
    deployment: dict[str, Values] = {
        "spec_replicas": lambda _, s: s.values["replicas"],
        "status_replicas_available": _available,
        "status_replicas_unavailable": _unavailable,
    }
    for suffix, values in deployment.items():
        name = f"kube_deployment_{suffix}"
        yield name, "gauge", (_object(scenario, s, name, "deployment", values(scenario, s)) for s in scaled)
    limited = carrying(scenario, signals, "hpa_max_replicas")
    hpa: dict[str, Values] = {
        "spec_max_replicas": lambda _, s: s.values["hpa_max_replicas"],
        "spec_min_replicas": lambda _, s: s.values["hpa_min_replicas"],
        "status_current_replicas": lambda _, s: s.values["replicas"],
        "status_desired_replicas": lambda _, s: [min(w, h) for w, h in _wanted_and_max(s)],
    }
    for suffix, values in hpa.items():
        name = f"kube_horizontalpodautoscaler_{suffix}"
        yield (
            name,
            "gauge",
            (_object(scenario, s, name, "horizontalpodautoscaler", values(scenario, s)) for s in limited),
        )
    name = "kube_horizontalpodautoscaler_status_condition"
    yield (
        name,
        "gauge",
        (
            _object(
                scenario,
                s,
                name,
                "horizontalpodautoscaler",
                [float(w > h) for w, h in _wanted_and_max(s)],
                condition="ScalingLimited",
                status="true",
            )
            for s in limited
        ),
    )
    yield from _resource_families(scenario, signals)


def _resource_families(scenario: Scenario, signals: list[ServiceSignals]) -> Iterator[Family]:
    """kube_pod_container_resource_requests and _limits: one family each, cpu and memory rows in it."""
    for kind in ("requests", "limits"):
        rows = [row for row in _RESOURCES if row[1] == kind]
        yield (
            f"kube_pod_container_resource_{kind}",
            "gauge",
            (
                _resource(scenario, sig, target, key, resource, unit, scale)
                for key, _, resource, unit, scale in rows
                for sig in carrying(scenario, signals, key)
                for target in pod_targets(sig)
            ),
        )


def _object(
    scenario: Scenario, sig: ServiceSignals, name: str, kind: str, values: list[float], **extra: str
) -> list[str]:
    """One series about the service's Deployment or HPA (named like the service, in its namespace)."""
    labels = {"service": sig.service, "namespace": scenario.namespace_of(sig.service), kind: sig.service, **extra}
    return Target(labels, sig.start, 0, {}).lines(name, gauge(values, digits=0))


def _wanted_and_max(sig: ServiceSignals) -> list[tuple[float, float]]:
    return list(zip(sig.values["hpa_wanted"], sig.values["hpa_max_replicas"], strict=True))


def _available(scenario: Scenario, sig: ServiceSignals) -> list[float]:
    """Ready replicas: the pods that answer (per pod when the service has them, else its reachable pods less the
    crash-looping ones)."""
    if sig.pods:
        counts = [0.0] * sig.minutes
        for p in sig.pods:
            for i, ok in enumerate(p.scraped):
                counts[p.pod.first + i] += ok
        return counts
    group = scenario.kubernetes.group(sig.service) if scenario.kubernetes else None
    looping = group.hit() if group is not None and group.crashloop_minutes is not None else 0
    out = []
    for i, replicas in enumerate(sig.values["replicas"]):
        reachable = sum(1 for p in sig.roster if p.reachable(i))
        down = looping if looping and sig.restarts[i] > 0 else 0
        out.append(float(max(0, min(replicas, reachable) - down)))
    return out


def _unavailable(scenario: Scenario, sig: ServiceSignals) -> list[float]:
    return [r - a for r, a in zip(sig.values["replicas"], _available(scenario, sig), strict=True)]


def _resource(
    scenario: Scenario, sig: ServiceSignals, target: Target, key: str, resource: str, unit: str, scale: float
) -> list[str]:
    """A container's request or limit: per pod for a per-pod service, else once for the service's containers."""
    extra = {"container": sig.service, "resource": resource, "unit": unit}
    if not sig.pods:
        extra = {"namespace": scenario.namespace_of(sig.service), **extra}
    name = "kube_pod_container_resource_" + ("limits" if "limit" in key else "requests")
    return target.lines(name, gauge(target.values[key], scale, digits=3), always=True, labels=extra)
