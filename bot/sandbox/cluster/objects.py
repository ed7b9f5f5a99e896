"""A scenario's cluster as the Kubernetes API returns it at the run clock: Deployments, ReplicaSets, pods,
HorizontalPodAutoscalers, nodes and events.

Built from the scenario (bot/sandbox/cluster/__init__.py reads its `[kubernetes]` block), its per-minute signals
(whose roster says which pods run where) and its deploy records, and written as the JSON that
FakeKubeAPI.from_file serves. The pods listed are the roster's at the run clock, so their names, versions and
nodes are those of the per-pod series and the pinned log lines, and every ReplicaSet holds the pods it says.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from string import Template
from typing import Any

from bot.sandbox.cluster import IMAGE_REPO, PodGroup
from bot.sandbox.cluster.events import NODE_EVENTS_NAMESPACE, cluster_events
from bot.sandbox.deployrepo import DeployRecord
from bot.sandbox.placement import Pod, pods_at
from bot.sandbox.scenario import Scenario
from bot.sandbox.signals import ServiceSignals
from bot.sandbox.standins.kubeobjects import container_status, deployment, hpa, node, pod, replicaset

_KINDS = ("pods", "events", "deployments", "replicasets", "horizontalpodautoscalers")


def write_cluster(
    scenario: Scenario, signals: list[ServiceSignals], records: list[DeployRecord], now: datetime, path: Path
) -> Path:
    """The cluster's API objects as of `now`, for FakeKubeAPI.from_file."""
    assert scenario.kubernetes is not None
    objects: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for sig in (s for s in signals if scenario.service(s.service).kind != "external"):
        ns = scenario.namespace_of(sig.service)
        for kind, items in _service_objects(scenario, sig, records, now).items():
            objects.setdefault((ns, kind), []).extend(items)
    for ns, items in cluster_events(scenario, signals, records, now).items():
        objects.setdefault((ns, "events"), []).extend(items)
    rel_now = int((now - scenario.incident_at(now)).total_seconds() // 60)
    objects[("", "nodes")] = [
        node(
            n.name,
            n.zone,
            ready=not _not_ready(n.not_ready_minutes, n.ready_minutes, rel_now),
            unschedulable=n.drain_minutes is not None and n.drain_minutes <= rel_now,
        )
        for n in scenario.nodes
    ]
    order = [*dict.fromkeys(ns for ns, _ in objects), NODE_EVENTS_NAMESPACE]
    rows = [[ns, kind, objects[(ns, kind)]] for ns in dict.fromkeys(order) for kind in _KINDS if (ns, kind) in objects]
    rows.append(["", "nodes", objects[("", "nodes")]])
    path.write_text(json.dumps({"objects": rows}))
    return path


def _not_ready(lost: int | None, back: int | None, rel: int) -> bool:
    return lost is not None and lost <= rel and (back is None or rel < back)


def _service_objects(
    scenario: Scenario, sig: ServiceSignals, records: list[DeployRecord], now: datetime
) -> dict[str, list[dict[str, Any]]]:
    assert scenario.kubernetes is not None
    ns, index = scenario.namespace_of(sig.service), sig.index(now)
    revisions = [r for r in records if r.service == sig.service and r.at <= now]
    group = scenario.kubernetes.group(sig.service)
    current = pods_at(list(sig.roster), index)
    pods = [_pod(scenario, sig, group, p, revisions, now, ns) for p in current]
    pods += [_terminating(sig, group, p, revisions, ns) for p in _evicted_but_listed(scenario, sig, index, now)]
    ready = {p.name: _is_ready(sig, group, p, now, index) for p in current}
    sets = _replicasets(sig.service, revisions, current, ready, ns)
    newest = len(revisions)
    out: dict[str, list[dict[str, Any]]] = {
        "pods": pods,
        "deployments": [
            deployment(
                sig.service,
                {"app": sig.service},
                namespace=ns,
                revision=newest,
                replicas=len(current),
                ready=sum(ready.values()),
                updated=sum(1 for p in current if p.revision == newest),
            )
        ],
        "replicasets": sets,
    }
    if "hpa_max_replicas" in sig.values:
        out["horizontalpodautoscalers"] = [_hpa(sig, index, ns)]
    return out


def _replicasets(
    service: str, revisions: list[DeployRecord], current: list[Pod], ready: dict[str, bool], ns: str
) -> list[dict[str, Any]]:
    """One ReplicaSet per revision, each holding the pods that run it now."""
    sets = []
    for number, record in enumerate(revisions, start=1):
        mine = [p for p in current if p.revision == number]
        image = {"name": service, "image": f"{IMAGE_REPO}/{service}:{record.image_version or record.version}"}
        sets.append(
            replicaset(
                service,
                number,
                {"app": service},
                [image],
                record.at,
                change_cause=record.summary,
                replicas=len(mine),
                ready=sum(ready[p.name] for p in mine),
                namespace=ns,
            )
        )
    return sets


def _affected(group: PodGroup, p: Pod) -> bool:
    return p.slot < group.hit()


def _troubled(sig: ServiceSignals, group: PodGroup, p: Pod, now: datetime) -> bool:
    return _affected(group, p) and (_restarts(sig, group, p, now) > 0 or group.waiting != "")


def _is_ready(sig: ServiceSignals, group: PodGroup, p: Pod, now: datetime, index: int) -> bool:
    return p.reachable(index) and not (_troubled(sig, group, p, now) and group.waiting)


def _restarts(sig: ServiceSignals, group: PodGroup, p: Pod, now: datetime) -> int:
    """The pod's restarts: a fixed count or the restarts series spread over the pods the failure hits; a per-pod
    service's from its own series (a pod created after some restarts has not had them)."""
    own = next((ps for ps in sig.pods if ps.pod == p), None)
    if own is not None and group.restarts is None:
        return own.restarts[sig.index(now) - p.first]
    hit = group.hit()
    total = group.restarts if group.restarts is not None else sig.restarts[sig.index(now)]
    return (total // hit + (1 if p.slot < total % hit else 0)) if _affected(group, p) and hit else 0


def _pod(
    scenario: Scenario,
    sig: ServiceSignals,
    group: PodGroup,
    p: Pod,
    revisions: list[DeployRecord],
    now: datetime,
    ns: str,
) -> dict[str, Any]:
    incident = scenario.incident_at(now)
    last_at = (
        incident + timedelta(minutes=group.last_minutes) if group.last_minutes is not None else _last_restart(sig, now)
    )
    troubled = _troubled(sig, group, p, now)
    finished = last_at - timedelta(minutes=2 * p.slot) if last_at and group.last_minutes is None else last_at
    record = revisions[p.revision - 1]
    created = (
        record.at if p.first == 0 else sig.start + timedelta(minutes=p.first)
    )  # older than the window: its rollout
    status = container_status(
        group.service,
        ready=_is_ready(sig, group, p, now, sig.index(now)),
        restarts=_restarts(sig, group, p, now),
        waiting=group.waiting if troubled else "",
        waiting_message=Template(group.waiting_message).safe_substitute(pod=p.name) if troubled else "",
        last_reason=group.last_reason if troubled else "",
        last_exit=group.last_exit,
        last_finished=finished,
        last_message=group.last_message,
        image=f"{IMAGE_REPO}/{group.service}:{record.image_version or record.version}",
        started=finished if troubled and finished else created,
    )
    labels = {"app": group.service, "pod-template-hash": p.name.rsplit("-", 2)[-2]}
    return pod(p.name, labels, [status], node=p.node, namespace=ns)


def _evicted_but_listed(scenario: Scenario, sig: ServiceSignals, index: int, now: datetime) -> list[Pod]:
    """Pods evicted from a node that is still NotReady: the API keeps them, Terminating, until the node answers."""
    rel_now = int((now - scenario.incident_at(now)).total_seconds() // 60)
    stuck = {n.name for n in scenario.nodes if _not_ready(n.not_ready_minutes, n.ready_minutes, rel_now)}
    return [p for p in sig.roster if p.end <= index and p.node in stuck and p.lost is not None and p.found is None]


def _terminating(
    sig: ServiceSignals, group: PodGroup, p: Pod, revisions: list[DeployRecord], ns: str
) -> dict[str, Any]:
    record = revisions[p.revision - 1] if p.revision <= len(revisions) else revisions[-1]
    status = container_status(
        group.service,
        ready=False,
        image=f"{IMAGE_REPO}/{group.service}:{record.image_version or record.version}",
        started=record.at if p.first == 0 else sig.start + timedelta(minutes=p.first),
    )
    labels = {"app": group.service, "pod-template-hash": p.name.rsplit("-", 2)[-2]}
    return pod(p.name, labels, [status], node=p.node, namespace=ns, deleted=sig.start + timedelta(minutes=p.end))


def _hpa(sig: ServiceSignals, index: int, ns: str) -> dict[str, Any]:
    high, wanted = int(sig.values["hpa_max_replicas"][index]), int(sig.values["hpa_wanted"][index])
    return hpa(
        sig.service,
        namespace=ns,
        low=int(sig.values["hpa_min_replicas"][index]),
        high=high,
        current=int(sig.values["replicas"][index]),
        desired=min(wanted, high),
        limited=wanted > high,
    )


def _last_restart(signals: ServiceSignals, now: datetime) -> datetime | None:
    """The minute of the newest restart up to `now` (None: it never restarted)."""
    index = signals.index(now)
    while index > 0 and signals.restarts[index] == signals.restarts[index - 1]:
        index -= 1
    return signals.start + timedelta(minutes=index) if index > 0 else None
