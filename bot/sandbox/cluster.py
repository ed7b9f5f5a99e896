"""A scenario's Kubernetes cluster: the `[kubernetes]` block read into dataclasses, and the API objects it gives.

Every service but the `external` ones runs as a Deployment in one namespace. Its rollout history is its deploys
(one ReplicaSet revision each, the image tagged with the version, the summary as change-cause), its pods are
healthy unless a `[[kubernetes.pods]]` entry says otherwise, and their restart counts agree with the restarts
series (OOM kills of a sawtooth effect, crash loops here). Events older than an hour are gone, as in a real
cluster. scenarios/README.md describes the block for authors.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING, Any

from bot.sandbox.kubeobjects import container_status, deployment, event, pod, replicaset

if TYPE_CHECKING:
    from bot.sandbox.deployrepo import DeployRecord
    from bot.sandbox.scenario import Scenario
    from bot.sandbox.signals import ServiceSignals

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
        namespace=data.get("namespace", "default"), replicas=data.get("replicas", 2),
        pods=tuple(PodGroup(**p) for p in data.get("pods", ())),
        events=tuple(ClusterEvent(**e) for e in data.get("events", ())),
    )


def cluster_problems(cluster: Cluster, services: dict[str, str]) -> list[str]:
    """What is wrong with the block; `services` maps every service name to its kind."""
    items: tuple[PodGroup | ClusterEvent, ...] = (*cluster.pods, *cluster.events)
    problems = [f"kubernetes {type(x).__name__} names unknown service {x.service!r}" for x in items
                if x.service not in services]
    problems += [f"kubernetes pods of external service {g.service!r}" for g in cluster.pods
                 if services.get(g.service) == "external"]
    problems += [f"kubernetes pods of {g.service}: affected {g.affected} not in 0..{g.replicas}" for g in cluster.pods
                 if g.replicas < 1 or not 0 <= g.hit() <= g.replicas]
    problems += [f"kubernetes event kind {e.kind!r} is not Pod or Deployment" for e in cluster.events
                 if e.kind not in ("Pod", "Deployment")]
    return problems


def crashloop_restarts(seconds: float) -> int:
    """Restarts of one container `seconds` after it began to crash at start (the kubelet's back-off)."""
    at, count, backoff = RUN_BEFORE_CRASH_S, 0, 10.0
    while at <= seconds:
        count += 1
        at += backoff + RUN_BEFORE_CRASH_S
        backoff = min(backoff * 2, MAX_BACKOFF_S)
    return count


def write_cluster(
    scenario: Scenario, signals: list[ServiceSignals], records: list[DeployRecord], now: datetime, path: Path
) -> Path:
    """The cluster's API objects as of `now`, for FakeKubeAPI.from_file."""
    assert scenario.kubernetes is not None
    cluster, ns = scenario.kubernetes, scenario.kubernetes.namespace
    by_service = {s.service: s for s in signals}
    objects: dict[str, list[dict[str, Any]]] = {"pods": [], "events": [], "deployments": [], "replicasets": []}
    first_pod: dict[str, str] = {}
    for svc in (s for s in scenario.services if s.kind != "external"):
        revisions = [r for r in records if r.service == svc.name and r.at <= now]
        group = cluster.group(svc.name)
        sets = _replicasets(svc.name, revisions, group, ns)
        pods = _pods(group, sets, by_service[svc.name], scenario.incident_at(now), now, ns)
        first_pod[svc.name] = pods[0]["metadata"]["name"]
        objects["deployments"].append(deployment(svc.name, {"app": svc.name}, namespace=ns, revision=len(revisions)))
        objects["replicasets"] += sets
        objects["pods"] += pods
        objects["events"] += _rollout_events(svc.name, sets, group.replicas, ns)
    objects["events"] += [_event(e, first_pod, scenario.incident_at(now), now, ns) for e in cluster.events]
    objects["events"] = [e for e in objects["events"] if _last_seen(e) >= now - EVENT_TTL]
    path.write_text(json.dumps({"objects": [[ns, kind, items] for kind, items in objects.items()]}))
    return path


def _replicasets(service: str, revisions: list[DeployRecord], group: PodGroup, ns: str) -> list[dict[str, Any]]:
    """One ReplicaSet per revision; the newest holds the pods (the two newest share them in a stuck rollout)."""
    sets = []
    stuck = group.on_new_version and 0 < group.hit() < group.replicas
    healthy = group.replicas - (group.hit() if group.waiting else 0)
    for number, record in enumerate(revisions, start=1):
        newest, previous = number == len(revisions), number == len(revisions) - 1
        replicas = group.replicas if newest else 0
        ready = healthy if newest else 0
        if stuck and newest:
            replicas, ready = group.hit(), 0 if group.waiting else group.hit()
        elif stuck and previous:
            replicas = ready = group.replicas - group.hit()
        image = {"name": service, "image": f"{IMAGE_REPO}/{service}:{record.version}"}
        sets.append(replicaset(service, number, {"app": service}, [image], record.at, change_cause=record.summary,
                               replicas=replicas, ready=ready, namespace=ns))
    return sets


def _pods(group: PodGroup, sets: list[dict[str, Any]], signals: ServiceSignals, incident: datetime, now: datetime,
          ns: str) -> list[dict[str, Any]]:
    holders = [rs for rs in sets if rs["spec"]["replicas"]] or sets[-1:]
    total = group.restarts if group.restarts is not None else _restarts_at(signals, now)
    last_at = incident + timedelta(minutes=group.last_minutes) if group.last_minutes is not None else \
        _last_restart(signals, now)
    pods = []
    for i in range(group.replicas):
        affected = i < group.hit()
        rs = holders[-1] if affected else holders[0]  # in a stuck rollout only the affected pods run the new one
        name = f"{rs['metadata']['name']}-{_suffix(group.service, i)}"
        image = rs["spec"]["template"]["spec"]["containers"][0]["image"]
        restarts = (total // group.hit() + (1 if i < total % group.hit() else 0)) if affected and group.hit() else 0
        troubled = affected and (restarts > 0 or group.waiting != "")
        finished = last_at - timedelta(minutes=2 * i) if last_at and group.last_minutes is None else last_at
        status = container_status(
            group.service, ready=not (troubled and group.waiting), restarts=restarts,
            waiting=group.waiting if troubled else "",
            waiting_message=Template(group.waiting_message).safe_substitute(pod=name) if troubled else "",
            last_reason=group.last_reason if troubled else "", last_exit=group.last_exit,
            last_finished=finished, last_message=group.last_message, image=image,
            started=finished if troubled and finished else _created(rs))
        labels = {"app": group.service, "pod-template-hash": rs["metadata"]["name"].rsplit("-", 1)[-1]}
        pods.append(pod(name, labels, [status], node=f"node-{i % 3 + 1}", namespace=ns))
    return pods


def _suffix(service: str, index: int) -> str:
    """A pod name's random-looking 5-character suffix, stable per service and replica."""
    number, letters = zlib.crc32(f"{service}/{index}".encode()), "bcdfghjklmnpqrstvwxz2456789"
    return "".join(letters[(number >> (5 * k)) % len(letters)] for k in range(5))


def _restarts_at(signals: ServiceSignals, now: datetime) -> int:
    return signals.restarts[_index(signals, now)] if signals.restarts else 0


def _last_restart(signals: ServiceSignals, now: datetime) -> datetime | None:
    """The minute of the newest restart up to `now` (None: it never restarted)."""
    index = _index(signals, now)
    while index > 0 and signals.restarts[index] == signals.restarts[index - 1]:
        index -= 1
    return signals.start + timedelta(minutes=index) if index > 0 else None


def _index(signals: ServiceSignals, now: datetime) -> int:
    return max(0, min(signals.minutes - 1, int((now - signals.start).total_seconds() // 60)))


def _created(rs: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(rs["metadata"]["creationTimestamp"].replace("Z", "+00:00"))


def _rollout_events(service: str, sets: list[dict[str, Any]], replicas: int, ns: str) -> list[dict[str, Any]]:
    """ScalingReplicaSet events of each rollout (old ones fall out with the event TTL)."""
    return [event(f"{service}.{i:x}e1", "Deployment", service, "ScalingReplicaSet",
                  f"Scaled up replica set {rs['metadata']['name']} to {replicas}",
                  _created(rs), type_="Normal", namespace=ns) for i, rs in enumerate(sets)]


def _event(spec: ClusterEvent, first_pod: dict[str, str], incident: datetime, now: datetime,
           ns: str) -> dict[str, Any]:
    first = incident + timedelta(minutes=spec.at_minutes)
    last = first if spec.count == 1 else max(first, now - timedelta(minutes=2))
    name = first_pod[spec.service] if spec.kind == "Pod" else spec.service
    message = Template(spec.message).safe_substitute(pod=name)
    suffix = zlib.crc32(f"{spec.reason}/{spec.at_minutes}".encode()) % 0xFFFFFF
    return event(f"{name}.{suffix:06x}", spec.kind, name, spec.reason,
                 message, last, type_=spec.type, count=spec.count, namespace=ns, first_at=first)


def _last_seen(item: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(item["lastTimestamp"].replace("Z", "+00:00"))
