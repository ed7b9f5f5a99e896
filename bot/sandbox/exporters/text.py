"""OpenMetrics sample lines, and the targets a service's series come from (the service, each pod, each node).

Timestamps are seconds, one sample a minute from the signals' start. A target that lives for part of the window
(a pod between two rollouts) has samples only then; one that cannot be scraped for some minutes (its node is
NotReady, its container crash-loops) has none for those minutes, as Prometheus would record.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from bot.sandbox.scenario import Scenario
from bot.sandbox.signals import ServiceSignals

Family = tuple[str, str, Iterator[list[str]]]  # (name, type, each series' sample lines)


@dataclass(frozen=True)
class Target:
    """Where one set of series comes from: its labels, the first minute it reports and its values from there."""

    labels: Mapping[str, str]
    start: datetime
    first: int
    values: Mapping[str, Sequence[float]]
    scraped: Sequence[bool] | None = None  # minutes its own endpoint answered (None: all of them)
    restarts: Sequence[int] = field(default_factory=list)

    def lines(
        self,
        name: str,
        values: Sequence[float],
        *,
        always: bool = False,
        labels: Mapping[str, str] | None = None,
        **extra: str,
    ) -> list[str]:
        """Sample lines of one series with the target's labels, then `labels` and `extra`; `always` also writes the
        minutes it was not scraped (kube-state-metrics reports a pod whatever its container does)."""
        mask = None if always else self.scraped
        text = label_text({**self.labels, **(labels or {}), **extra})
        return sample_lines(name, text, self.start, values, self.first, mask)


def label_text(pairs: Mapping[str, str]) -> str:
    return ",".join(f'{k}="{v}"' for k, v in pairs.items())


def sample_lines(
    name: str,
    labels: str,
    start: datetime,
    values: Sequence[float] | Sequence[int],
    first: int = 0,
    mask: Sequence[bool] | None = None,
) -> list[str]:
    t0 = int(start.timestamp()) + 60 * first
    return [f"{name}{{{labels}}} {v} {t0 + 60 * i}\n" for i, v in enumerate(values) if mask is None or mask[i]]


def cumulative(per_minute: Sequence[float], digits: int = 0) -> list[float] | list[int]:
    """A counter from per-minute increments, rounded once (so it never decreases)."""
    total, out = 0.0, []
    for x in per_minute:
        total += x
        out.append(total)
    return [round(x, digits) for x in out] if digits else [round(x) for x in out]


def gauge(values: Sequence[float], scale: float = 1.0, digits: int = 6) -> list[float]:
    return [round(v * scale, digits) for v in values]


def service_target(sig: ServiceSignals, **extra: str) -> Target:
    return Target({"service": sig.service, **extra}, sig.start, 0, sig.values, None, sig.restarts)


def pod_targets(sig: ServiceSignals) -> list[Target]:
    """One target per pod of a per-pod service (labels pod, version, node, zone, namespace), else the service."""
    if not sig.pods:
        return [service_target(sig)]
    return [
        Target(
            {
                "service": sig.service,
                "namespace": p.pod.namespace,
                "pod": p.pod.name,
                "version": p.pod.version,
                "node": p.pod.node,
                "zone": p.pod.zone,
            },
            sig.start,
            p.pod.first,
            p.values,
            p.scraped,
            p.restarts,
        )
        for p in sig.pods
    ]


def node_targets(scenario: Scenario, sig: ServiceSignals) -> list[Target]:
    """One target per node a per-pod service ran on (labels node, zone), else the service."""
    if not sig.nodes:
        return [service_target(sig)]
    zones = {n.name: n.zone for n in scenario.nodes}
    return [
        Target({"service": sig.service, "node": node, "zone": zones[node]}, sig.start, 0, values)
        for node, values in sig.nodes.items()
    ]


def carrying(scenario: Scenario, signals: Sequence[ServiceSignals], *keys: str) -> list[ServiceSignals]:
    """The services that carry every one of `keys`."""
    return [sig for sig in signals if all(k in scenario.carried(sig.service) for k in keys)]
