"""A scenario's cluster as the Kubernetes API returns it at the run clock: Deployments, ReplicaSets, pods, events.

Built from the scenario (bot/sandbox/cluster.py reads its `[kubernetes]` block), its per-minute signals and its
deploy records, and written as the JSON that FakeKubeAPI.from_file serves.
"""

from __future__ import annotations

import json
import zlib
from datetime import datetime, timedelta
from pathlib import Path
from string import Template
from typing import Any

from bot.sandbox.cluster import EVENT_TTL, IMAGE_REPO, ClusterEvent, PodGroup
from bot.sandbox.deployrepo import DeployRecord
from bot.sandbox.scenario import Scenario
from bot.sandbox.signals import ServiceSignals
from bot.sandbox.standins.kubeobjects import container_status, deployment, event, pod, replicaset


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
        sets.append(
            replicaset(
                service,
                number,
                {"app": service},
                [image],
                record.at,
                change_cause=record.summary,
                replicas=replicas,
                ready=ready,
                namespace=ns,
            )
        )
    return sets


def _pods(
    group: PodGroup, sets: list[dict[str, Any]], signals: ServiceSignals, incident: datetime, now: datetime, ns: str
) -> list[dict[str, Any]]:
    holders = [rs for rs in sets if rs["spec"]["replicas"]] or sets[-1:]
    total = group.restarts if group.restarts is not None else _restarts_at(signals, now)
    last_at = (
        incident + timedelta(minutes=group.last_minutes)
        if group.last_minutes is not None
        else _last_restart(signals, now)
    )
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
            group.service,
            ready=not (troubled and group.waiting),
            restarts=restarts,
            waiting=group.waiting if troubled else "",
            waiting_message=Template(group.waiting_message).safe_substitute(pod=name) if troubled else "",
            last_reason=group.last_reason if troubled else "",
            last_exit=group.last_exit,
            last_finished=finished,
            last_message=group.last_message,
            image=image,
            started=finished if troubled and finished else _created(rs),
        )
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
    return [
        event(
            f"{service}.{i:x}e1",
            "Deployment",
            service,
            "ScalingReplicaSet",
            f"Scaled up replica set {rs['metadata']['name']} to {replicas}",
            _created(rs),
            type_="Normal",
            namespace=ns,
        )
        for i, rs in enumerate(sets)
    ]


def _event(spec: ClusterEvent, first_pod: dict[str, str], incident: datetime, now: datetime, ns: str) -> dict[str, Any]:
    first = incident + timedelta(minutes=spec.at_minutes)
    last = first if spec.count == 1 else max(first, now - timedelta(minutes=2))
    name = first_pod[spec.service] if spec.kind == "Pod" else spec.service
    message = Template(spec.message).safe_substitute(pod=name)
    suffix = zlib.crc32(f"{spec.reason}/{spec.at_minutes}".encode()) % 0xFFFFFF
    return event(
        f"{name}.{suffix:06x}",
        spec.kind,
        name,
        spec.reason,
        message,
        last,
        type_=spec.type,
        count=spec.count,
        namespace=ns,
        first_at=first,
    )


def _last_seen(item: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(item["lastTimestamp"].replace("Z", "+00:00"))
