"""The cluster's events, made from what happened to its objects so they agree with the pods the API lists.

- Every rollout scales its new ReplicaSet up to the pods that run it and the old one down to the pods left on it
  (a canary or a stuck rollout says "to 1", not the Deployment's size).
- Every change of a Deployment's replicas (its HPA following the load, a manual scale) is a ScalingReplicaSet
  event, and with an HPA a SuccessfulRescale.
- Crash-looping pods get BackOff warnings (unless the scenario writes its own).
- A node going NotReady gets NodeNotReady on the node and on each of its pods, then TaintManagerEviction for the
  pods; NodeReady when it is back; a drained node NodeNotSchedulable and Killing for its pods.
- The scenario's own `[[kubernetes.events]]` follow.

Events last from an hour before the incident (or the block's `event_ttl_minutes`) to now, so the incident's
own events are never gone before the question is asked.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from datetime import datetime, timedelta
from string import Template
from typing import Any

from bot.sandbox.cluster import EVENT_TTL, EVICTION_MINUTES, ClusterEvent, Node
from bot.sandbox.deployrepo import DeployRecord
from bot.sandbox.placement import Pod, pods_at
from bot.sandbox.scenario import Scenario
from bot.sandbox.signals import ServiceSignals
from bot.sandbox.standins.kubeobjects import event, replicaset_name

NODE_EVENTS_NAMESPACE = "default"  # a node is cluster-scoped: its events are recorded in "default"
Events = dict[str, list[dict[str, Any]]]  # namespace -> events


def cluster_events(
    scenario: Scenario, signals: list[ServiceSignals], records: list[DeployRecord], now: datetime
) -> Events:
    """Every event the API lists at `now`, by namespace."""
    out: Events = {}
    incident = scenario.incident_at(now)
    authored_backoff = {e.service for e in _authored(scenario) if e.reason == "BackOff"}
    for sig in (s for s in signals if scenario.service(s.service).kind != "external"):
        ns = scenario.namespace_of(sig.service)
        mine = [r for r in records if r.service == sig.service and r.at <= now]
        items = [*_rollouts(sig, mine, ns), *_rescales(scenario, sig, mine, now, ns)]
        if sig.service not in authored_backoff:
            items += _backoffs(scenario, sig, incident, now, ns)
        out.setdefault(ns, []).extend(items)
    for node in scenario.nodes:
        for ns, item in _node_events(scenario, node, signals, incident, now):
            out.setdefault(ns, []).append(item)
    first_pods = {s.service: _first_pod(s, now) for s in signals if s.roster}
    for spec in _authored(scenario):
        ns = NODE_EVENTS_NAMESPACE if spec.kind == "Node" else scenario.namespace_of(spec.service)
        out.setdefault(ns, []).append(_authored_event(scenario, spec, first_pods, incident, now, ns))
    cutoff = _cutoff(scenario, incident, now)
    return {ns: [e for e in items if _last_seen(e) >= cutoff] for ns, items in out.items()}


def _authored(scenario: Scenario) -> tuple[ClusterEvent, ...]:
    return scenario.kubernetes.events if scenario.kubernetes else ()


def _cutoff(scenario: Scenario, incident: datetime, now: datetime) -> datetime:
    ttl = scenario.kubernetes.event_ttl_minutes if scenario.kubernetes else None
    if ttl is not None:
        return now - timedelta(minutes=ttl)
    return min(now - EVENT_TTL, incident - EVENT_TTL)


def _at(sig: ServiceSignals, moment: datetime) -> int:
    return sig.index(moment)


def _on(pods: list[Pod], revision: int) -> int:
    return sum(1 for p in pods if p.revision == revision)


def _rollouts(sig: ServiceSignals, revisions: list[DeployRecord], ns: str) -> Iterator[dict[str, Any]]:
    """Each rollout: its ReplicaSet scaled up to the pods that run it, the previous one down to those left."""
    for number, record in enumerate(revisions, start=1):
        after = pods_at(list(sig.roster), _at(sig, record.at))
        new, old = replicaset_name(sig.service, number), replicaset_name(sig.service, number - 1)
        message = f"Scaled up replica set {new} to {_on(after, number) or len(after)}"
        yield _deployment_event(sig.service, f"{number:x}e1", message, record.at, ns)
        if number > 1:
            left = _on(after, number - 1)
            yield _deployment_event(
                sig.service, f"{number:x}d1", f"Scaled down replica set {old} to {left}", record.at, ns
            )


def _rescales(
    scenario: Scenario, sig: ServiceSignals, revisions: list[DeployRecord], now: datetime, ns: str
) -> Iterator[dict[str, Any]]:
    """A Deployment whose replicas change (its HPA, a manual scale): ScalingReplicaSet and SuccessfulRescale."""
    replicas = sig.values.get("replicas")
    if not replicas:
        return
    hpa = "hpa_max_replicas" in sig.values
    for i in range(1, _at(sig, now) + 1):
        if replicas[i] == replicas[i - 1]:
            continue
        moment, size = sig.start + timedelta(minutes=i), int(replicas[i])
        current = sum(1 for r in revisions if r.at <= moment)
        way = "up" if replicas[i] > replicas[i - 1] else "down"
        text = f"Scaled {way} replica set {replicaset_name(sig.service, current)} to {size}"
        yield _deployment_event(sig.service, f"{i:x}r", text, moment, ns)
        if hpa:
            why = (
                "cpu resource utilization (percentage of request) above target"
                if way == "up"
                else ("All metrics below target")
            )
            yield event(
                f"{sig.service}.{i:x}h",
                "HorizontalPodAutoscaler",
                sig.service,
                "SuccessfulRescale",
                f"New size: {size}; reason: {why}",
                moment,
                type_="Normal",
                namespace=ns,
            )


def _backoffs(
    scenario: Scenario, sig: ServiceSignals, incident: datetime, now: datetime, ns: str
) -> Iterator[dict[str, Any]]:
    """BackOff warnings of the pods that crash-loop now, one per pod, repeated with each of its restarts."""
    group = scenario.kubernetes.group(sig.service) if scenario.kubernetes else None
    if group is None or not (group.crashloop_minutes is not None or group.waiting == "CrashLoopBackOff"):
        return
    began = incident + timedelta(minutes=group.crashloop_minutes or 0)
    for pod in pods_at(list(sig.roster), _at(sig, now)):
        if pod.slot >= group.hit():
            continue
        restarts = max(1, sig.restarts[_at(sig, now)] // max(1, group.hit()))
        first = max(began, sig.start + timedelta(minutes=pod.first))
        yield event(
            f"{pod.name}.{zlib.crc32(pod.name.encode()) % 0xFFFFFF:06x}",
            "Pod",
            pod.name,
            "BackOff",
            f"Back-off restarting failed container {sig.service} in pod {pod.name}_{ns}(uid-{pod.name})",
            max(first, now - timedelta(minutes=1)),
            count=restarts,
            namespace=ns,
            first_at=first,
        )


def _node_events(
    scenario: Scenario, node: Node, signals: list[ServiceSignals], incident: datetime, now: datetime
) -> Iterator[tuple[str, dict[str, Any]]]:
    """What the node lifecycle controller and a drain record: on the node, and on each pod it ran then."""
    said = {
        "NodeNotReady": node.not_ready_minutes,
        "NodeReady": node.ready_minutes,
        "NodeNotSchedulable": node.drain_minutes,
    }
    for reason, minutes in said.items():
        if minutes is not None and incident + timedelta(minutes=minutes) <= now:
            text = f"Node {node.name} status is now: {reason}"
            name = f"{node.name}.{reason.lower()}{minutes & 0xFFFF:x}"
            at = incident + timedelta(minutes=minutes)
            yield NODE_EVENTS_NAMESPACE, event(name, "Node", node.name, reason, text, at, type_="Normal")
    yield from _lost_pods(scenario, node, signals, incident, now)
    yield from _drained_pods(scenario, node, signals, incident, now)


def _lost_pods(
    scenario: Scenario, node: Node, signals: list[ServiceSignals], incident: datetime, now: datetime
) -> Iterator[tuple[str, dict[str, Any]]]:
    """NodeNotReady on each pod of a node that stopped answering, and its eviction once the toleration is over."""
    if node.not_ready_minutes is None or incident + timedelta(minutes=node.not_ready_minutes) > now:
        return
    lost = incident + timedelta(minutes=node.not_ready_minutes)
    evicted = lost + timedelta(minutes=EVICTION_MINUTES)
    back = node.ready_minutes is not None and node.ready_minutes <= node.not_ready_minutes + EVICTION_MINUTES
    for _, pod in _pods_on(scenario, node.name, signals, lost):
        ns = pod.namespace
        yield ns, event(f"{pod.name}.nr", "Pod", pod.name, "NodeNotReady", "Node is not ready", lost, namespace=ns)
        if not back and evicted <= now:
            text = f"Marking for deletion Pod {ns}/{pod.name}"
            yield (
                ns,
                event(
                    f"{pod.name}.te",
                    "Pod",
                    pod.name,
                    "TaintManagerEviction",
                    text,
                    evicted,
                    type_="Normal",
                    namespace=ns,
                ),
            )


def _drained_pods(
    scenario: Scenario, node: Node, signals: list[ServiceSignals], incident: datetime, now: datetime
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Killing for each pod a drain moved off the node."""
    if node.drain_minutes is None or incident + timedelta(minutes=node.drain_minutes) > now:
        return
    drained = incident + timedelta(minutes=node.drain_minutes)
    for sig, pod in _pods_on(scenario, node.name, signals, drained - timedelta(minutes=1)):
        text = f"Stopping container {sig.service}"
        yield (
            pod.namespace,
            event(f"{pod.name}.k", "Pod", pod.name, "Killing", text, drained, type_="Normal", namespace=pod.namespace),
        )


def _pods_on(
    scenario: Scenario, node: str, signals: list[ServiceSignals], moment: datetime
) -> Iterator[tuple[ServiceSignals, Pod]]:
    for sig in signals:
        if scenario.service(sig.service).kind == "external":
            continue
        yield from ((sig, p) for p in pods_at(list(sig.roster), _at(sig, moment)) if p.node == node)


def _first_pod(sig: ServiceSignals, now: datetime) -> str:
    pods = pods_at(list(sig.roster), _at(sig, now))
    return pods[0].name if pods else sig.service


def _authored_event(
    scenario: Scenario, spec: ClusterEvent, first_pod: dict[str, str], incident: datetime, now: datetime, ns: str
) -> dict[str, Any]:
    """A `[[kubernetes.events]]` entry: about the service's first pod, its Deployment, or a node."""
    first = incident + timedelta(minutes=spec.at_minutes)
    end_minutes = spec.end_minutes if spec.end_minutes is not None else scenario.resolved_minutes
    latest = now - timedelta(minutes=2)
    if end_minutes is not None:
        latest = min(latest, incident + timedelta(minutes=end_minutes))
    last = first if spec.count == 1 else max(first, latest)
    name = {"Pod": first_pod.get(spec.service, spec.service), "Node": spec.node}.get(spec.kind, spec.service)
    message = Template(spec.message).safe_substitute(pod=name, node=spec.node)
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


def _deployment_event(service: str, key: str, message: str, at: datetime, ns: str) -> dict[str, Any]:
    return event(
        f"{service}.{key}", "Deployment", service, "ScalingReplicaSet", message, at, type_="Normal", namespace=ns
    )


def _last_seen(item: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(item["lastTimestamp"].replace("Z", "+00:00"))
