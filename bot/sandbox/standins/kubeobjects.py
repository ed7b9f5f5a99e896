"""Kubernetes API objects as the API server returns them (JSON): pods with container statuses, events,
Deployments and their ReplicaSets, HorizontalPodAutoscalers and nodes. The tests build clusters with these;
bot/sandbox/cluster/objects.py builds a scenario's cluster with them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def status_object(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def container_status(
    name: str,
    *,
    ready: bool = True,
    restarts: int = 0,
    waiting: str = "",
    waiting_message: str = "",
    last_reason: str = "",
    last_exit: int = 0,
    last_finished: datetime | None = None,
    last_message: str = "",
    image: str = "app:1",
    started: datetime | None = None,
) -> dict[str, Any]:
    """A containerStatuses entry; `waiting="CrashLoopBackOff"`, `last_reason="OOMKilled"` as a kubelet reports."""
    state: dict[str, Any] = (
        {"waiting": {"reason": waiting, "message": waiting_message}}
        if waiting
        else {"running": {"startedAt": iso(started) if started else "2026-01-01T00:00:00Z"}}
    )
    last: dict[str, Any] = {}
    if last_reason:
        finished = iso(last_finished) if last_finished else "2026-01-01T00:00:00Z"
        last = {
            "terminated": {"reason": last_reason, "exitCode": last_exit, "startedAt": finished, "finishedAt": finished}
        }
        if last_message:
            last["terminated"]["message"] = last_message
    return {
        "name": name,
        "ready": ready,
        "restartCount": restarts,
        "image": image,
        "imageID": "",
        "state": state,
        "lastState": last,
    }


def pod(
    name: str,
    labels: dict[str, str],
    statuses: list[dict[str, Any]],
    *,
    phase: str = "Running",
    node: str = "node-1",
    namespace: str = "default",
    deleted: datetime | None = None,
) -> dict[str, Any]:
    """A pod; `deleted` marks one being deleted (Terminating) since then, e.g. evicted from an unreachable node."""
    containers = [{"name": s["name"], "image": s["image"]} for s in statuses]
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels, "uid": f"uid-{name}"}
    if deleted is not None:
        metadata["deletionTimestamp"] = iso(deleted)
    return {
        "metadata": metadata,
        "spec": {"containers": containers, "nodeName": node},
        "status": {"phase": phase, "containerStatuses": statuses},
    }


def event(
    name: str,
    obj_kind: str,
    obj_name: str,
    reason: str,
    message: str,
    at: datetime,
    *,
    type_: str = "Warning",
    count: int = 1,
    namespace: str = "default",
    first_at: datetime | None = None,
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": {"kind": obj_kind, "name": obj_name, "namespace": namespace},
        "reason": reason,
        "message": message,
        "type": type_,
        "count": count,
        "firstTimestamp": iso(first_at or at),
        "lastTimestamp": iso(at),
    }


def deployment(
    name: str,
    labels: dict[str, str],
    *,
    namespace: str = "default",
    revision: int = 1,
    replicas: int | None = None,
    ready: int | None = None,
    updated: int | None = None,
) -> dict[str, Any]:
    """A Deployment; with `replicas`, its spec (RollingUpdate 25 %/25 %, 600 s progress deadline) and status."""
    spec: dict[str, Any] = {
        "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}, "spec": {"containers": []}},
    }
    body: dict[str, Any] = {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": {"deployment.kubernetes.io/revision": str(revision)},
        },
        "spec": spec,
    }
    if replicas is not None:
        ready = replicas if ready is None else ready
        spec |= {
            "replicas": replicas,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "progressDeadlineSeconds": 600,
        }
        body["status"] = {
            "replicas": replicas,
            "readyReplicas": ready,
            "availableReplicas": ready,
            "updatedReplicas": replicas if updated is None else updated,
            "unavailableReplicas": replicas - ready,
        }
    return body


def hpa(name: str, *, namespace: str, low: int, high: int, current: int, desired: int, limited: bool) -> dict[str, Any]:
    """A HorizontalPodAutoscaler (autoscaling/v2) on the Deployment of the same name, scaling on CPU."""
    condition = {
        "type": "ScalingLimited",
        "status": "True" if limited else "False",
        "reason": "TooManyReplicas" if limited else "DesiredWithinRange",
        "message": "the desired replica count is more than the maximum replica count"
        if limited
        else "the desired count is within the acceptable range",
    }
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": low,
            "maxReplicas": high,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}},
                }
            ],
        },
        "status": {"currentReplicas": current, "desiredReplicas": desired, "conditions": [condition]},
    }


def node(name: str, zone: str, *, ready: bool = True, unschedulable: bool = False) -> dict[str, Any]:
    """A node with its zone label; a NotReady one has the unreachable taint and an Unknown Ready condition."""
    taints = [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}] if not ready else []
    if unschedulable:
        taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
    condition = (
        {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"}
        if ready
        else {
            "type": "Ready",
            "status": "Unknown",
            "reason": "NodeStatusUnknown",
            "message": "Kubelet stopped posting node status.",
        }
    )
    return {
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone},
        },
        "spec": {"unschedulable": unschedulable, "taints": taints},
        "status": {"conditions": [condition]},
    }


def replicaset_name(deployment_name: str, revision: int) -> str:
    """A ReplicaSet's name: the Deployment's and a pod-template hash (here stable per revision)."""
    return f"{deployment_name}-{revision:x}{'abcdef'[revision % 6]}5d9c"


def replicaset(
    deployment_name: str,
    revision: int,
    labels: dict[str, str],
    containers: list[dict[str, Any]],
    created: datetime,
    *,
    change_cause: str = "",
    replicas: int = 0,
    ready: int = 0,
    namespace: str = "default",
) -> dict[str, Any]:
    """A ReplicaSet owned by the Deployment; `containers` are pod-spec containers (name, image, env, args...)."""
    annotations = {"deployment.kubernetes.io/revision": str(revision)}
    if change_cause:
        annotations["kubernetes.io/change-cause"] = change_cause
    name = replicaset_name(deployment_name, revision)
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": annotations,
            "creationTimestamp": iso(created),
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": deployment_name,
                    "uid": f"uid-{deployment_name}",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": containers}},
        },
        "status": {"replicas": replicas, "readyReplicas": ready},
    }
