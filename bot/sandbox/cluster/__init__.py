"""A scenario's Kubernetes cluster: the `[kubernetes]` block read into dataclasses, and the API objects it gives.

Every service but the `external` ones runs as a Deployment in one namespace (or its own). Its rollout history is
its deploys (one ReplicaSet revision each, the image tagged with the version, the summary as change-cause), its pods
are healthy unless a `[[kubernetes.pods]]` entry says otherwise, and their restart counts agree with the restarts
series (OOM kills of a sawtooth effect, crash loops here). Pods sit on `[[kubernetes.nodes]]` (three in three zones
unless the block names its own), which may go NotReady or be drained. Events last from an hour before the incident
(or `event_ttl_minutes`) to now. scenarios/README.md describes the block for authors.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

EVENT_TTL = timedelta(hours=1)  # the API server's default --event-ttl
EVICTION_MINUTES = 5  # pods on a NotReady node are evicted after the default toleration (300 s)
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
    """An event about one of the service's pods (kind Pod), its Deployment, or a node (kind Node, `node`), first
    seen at `at_minutes` and, when it repeats (`count`), last seen a couple of minutes before now or at its end."""

    reason: str
    message: str  # $pod = the pod's name, $node = the node's
    at_minutes: int
    service: str = ""
    kind: str = "Pod"
    type: str = "Warning"
    count: int = 1
    red_herring: bool = False
    node: str = ""
    end_minutes: int | None = None


@dataclass(frozen=True)
class Node:
    """A node of the cluster and what happens to it (minutes relative to the incident)."""

    name: str
    zone: str = ""
    not_ready_minutes: int | None = None  # the kubelet stops reporting; its pods are evicted EVICTION_MINUTES later
    ready_minutes: int | None = None  # it reports again (evicted pods stay where they were rescheduled)
    drain_minutes: int | None = None  # cordoned and drained: its pods move to other nodes at once
    red_herring: bool = False

    def down_at(self, rel: int) -> bool:
        """At minute `rel` no pod may run here: drained, or NotReady past the eviction and not yet back."""
        if self.drain_minutes is not None and rel >= self.drain_minutes:
            return True
        evicted_at = None if self.not_ready_minutes is None else self.not_ready_minutes + EVICTION_MINUTES
        if evicted_at is None or rel < evicted_at:
            return False
        return self.ready_minutes is None or (evicted_at < self.ready_minutes and rel < self.ready_minutes)

    def unreachable_at(self, rel: int) -> bool:
        """Between NotReady and the eviction (or its return): its pods exist but cannot be reached or scraped."""
        if self.not_ready_minutes is None:
            return False
        end = self.not_ready_minutes + EVICTION_MINUTES
        if self.ready_minutes is not None:
            end = min(end, self.ready_minutes)
        return self.not_ready_minutes <= rel < end


DEFAULT_NODES = (Node("node-1", "eu-west-1a"), Node("node-2", "eu-west-1b"), Node("node-3", "eu-west-1c"))


@dataclass(frozen=True)
class Cluster:
    namespace: str = "default"
    replicas: int = 2  # pods per service without a [[kubernetes.pods]] entry
    pods: tuple[PodGroup, ...] = ()
    events: tuple[ClusterEvent, ...] = ()
    nodes: tuple[Node, ...] = DEFAULT_NODES
    event_ttl_minutes: int | None = None  # None: events from an hour before the incident stay

    def group(self, service: str) -> PodGroup:
        return next((g for g in self.pods if g.service == service), PodGroup(service, replicas=self.replicas))

    def has_group(self, service: str) -> bool:
        return any(g.service == service for g in self.pods)


def cluster_from_dict(data: dict[str, Any] | None) -> Cluster | None:
    if data is None:
        return None
    nodes = tuple(Node(**n) for n in data.get("nodes", ())) or DEFAULT_NODES
    return Cluster(
        namespace=data.get("namespace", "default"),
        replicas=data.get("replicas", 2),
        pods=tuple(PodGroup(**p) for p in data.get("pods", ())),
        events=tuple(ClusterEvent(**e) for e in data.get("events", ())),
        nodes=nodes,
        event_ttl_minutes=data.get("event_ttl_minutes"),
    )


def cluster_problems(cluster: Cluster, services: dict[str, str]) -> list[str]:
    """What is wrong with the block; `services` maps every service name to its kind."""
    items: tuple[PodGroup | ClusterEvent, ...] = (*cluster.pods, *(e for e in cluster.events if e.kind != "Node"))
    problems = [
        f"kubernetes {type(x).__name__} names unknown service {x.service!r}" for x in items if x.service not in services
    ]
    nodes = [n.name for n in cluster.nodes]
    problems += [f"kubernetes node {n!r} is listed twice" for n in set(nodes) if nodes.count(n) > 1]
    problems += [
        f"kubernetes Node event names unknown node {e.node!r}"
        for e in cluster.events
        if e.kind == "Node" and e.node not in nodes
    ]
    problems += [
        f"kubernetes events of kind {e.kind} take no node; node {e.node!r} given"
        for e in cluster.events
        if e.kind != "Node" and e.node
    ]
    problems += [
        f"kubernetes {e.reason} event: {e.reason} events come from the replicas and rollouts (set `replicas` or "
        "`hpa_max_replicas` on the service), so they always agree with the pods"
        for e in cluster.events
        if e.reason in ("ScalingReplicaSet", "SuccessfulRescale")
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
        f"kubernetes event kind {e.kind!r} is not Pod, Deployment or Node"
        for e in cluster.events
        if e.kind not in ("Pod", "Deployment", "Node")
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
