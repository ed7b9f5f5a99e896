"""A scenario's Kubernetes cluster: the `[kubernetes]` block read into dataclasses, and the API objects it gives.

Every service but the `external` ones runs as a Deployment in one namespace. Its rollout history is its deploys
(one ReplicaSet revision each, the image tagged with the version, the summary as change-cause), its pods are
healthy unless a `[[kubernetes.pods]]` entry says otherwise, and their restart counts agree with the restarts
series (OOM kills of a sawtooth effect, crash loops here). Events older than an hour are gone, as in a real
cluster. scenarios/README.md describes the block for authors.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

EVENT_TTL = timedelta(hours=1)  # the API server's default --event-ttl
RUN_BEFORE_CRASH_S = 8.0  # how long a crash-looping container runs before it exits
MAX_BACKOFF_S = 300.0  # the kubelet's back-off doubles from 10 s up to 5 minutes
IMAGE_REPO = "registry.example.internal"


@dataclass(frozen=True)
class PodGroup:
    """How one service's pods look at the run clock. Restarts come from the metrics unless `restarts` is set."""

    service: str
    replicas: int = 2
    affected: int | None = None  # pods the failure hits (None = all); the others are healthy
    waiting: str = ""  # the affected pods' waiting reason now, e.g. CrashLoopBackOff
    waiting_message: str = ""  # $pod = the pod's name
    last_reason: str = ""  # their last termination: OOMKilled, Error, Completed
    last_exit: int = 0
    last_message: str = ""
    last_minutes: int | None = None  # when that termination was (relative to the incident); None: the last restart
    restarts: int | None = None  # a fixed restart count (old restarts); None: from the restarts series
    crashloop_minutes: int | None = None  # from here the affected pods crash at start and back off
    on_new_version: bool = False  # only the affected pods run the newest revision (a stuck rolling update)
    red_herring: bool = False

    def hit(self) -> int:
        return self.replicas if self.affected is None else self.affected


@dataclass(frozen=True)
class ClusterEvent:
    """An event about one of the service's pods (kind Pod) or its Deployment, first seen at `at_minutes`."""

    service: str
    reason: str
    message: str  # $pod = the pod's name
    at_minutes: int
    kind: str = "Pod"
    type: str = "Warning"
    count: int = 1
    red_herring: bool = False


@dataclass(frozen=True)
class Cluster:
    namespace: str = "default"
    replicas: int = 2  # pods per service without a [[kubernetes.pods]] entry
    pods: tuple[PodGroup, ...] = ()
    events: tuple[ClusterEvent, ...] = ()

    def group(self, service: str) -> PodGroup:
        return next((g for g in self.pods if g.service == service), PodGroup(service, replicas=self.replicas))


def cluster_from_dict(data: dict[str, Any] | None) -> Cluster | None:
    if data is None:
        return None
    return Cluster(
        namespace=data.get("namespace", "default"),
        replicas=data.get("replicas", 2),
        pods=tuple(PodGroup(**p) for p in data.get("pods", ())),
        events=tuple(ClusterEvent(**e) for e in data.get("events", ())),
    )


def cluster_problems(cluster: Cluster, services: dict[str, str]) -> list[str]:
    """What is wrong with the block; `services` maps every service name to its kind."""
    items: tuple[PodGroup | ClusterEvent, ...] = (*cluster.pods, *cluster.events)
    problems = [
        f"kubernetes {type(x).__name__} names unknown service {x.service!r}" for x in items if x.service not in services
    ]
    problems += [
        f"kubernetes pods of external service {g.service!r}"
        for g in cluster.pods
        if services.get(g.service) == "external"
    ]
    problems += [
        f"kubernetes pods of {g.service}: affected {g.affected} not in 0..{g.replicas}"
        for g in cluster.pods
        if g.replicas < 1 or not 0 <= g.hit() <= g.replicas
    ]
    problems += [
        f"kubernetes event kind {e.kind!r} is not Pod or Deployment"
        for e in cluster.events
        if e.kind not in ("Pod", "Deployment")
    ]
    return problems


def crashloop_restarts(seconds: float) -> int:
    """Restarts of one container `seconds` after it began to crash at start (the kubelet's back-off)."""
    at, count, backoff = RUN_BEFORE_CRASH_S, 0, 10.0
    while at <= seconds:
        count += 1
        at += backoff + RUN_BEFORE_CRASH_S
        backoff = min(backoff * 2, MAX_BACKOFF_S)
    return count
