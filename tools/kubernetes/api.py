"""Reading the Kubernetes API: one call with its errors worded for the model, and a Deployment's revisions.

Shared by the Kubernetes tools (tools/kubernetes/query.py) and the deploy source over rollouts
(tools/deploys/kubernetes.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from kubernetes.client import AppsV1Api
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from tools.base import ToolError

REVISION = "deployment.kubernetes.io/revision"
CHANGE_CAUSE = "kubernetes.io/change-cause"
_T = TypeVar("_T")


def kube_request(what: str, call: Callable[[], _T]) -> _T:
    """Run one API call; the API's own status text (403 Forbidden, 404, 429) becomes a ToolError."""
    try:
        return call()
    except ApiException as exc:
        retry = (exc.headers or {}).get("Retry-After") if exc.status == 429 else None
        hint = f"; retry after {retry} s" if retry else ""
        raise ToolError(
            f"Kubernetes API error while {what}: {exc.status} {exc.reason}: {_status_message(exc)}{hint}"
        ) from exc
    except HTTPError as exc:
        raise ToolError(f"Kubernetes API unreachable while {what}: {type(exc).__name__}: {exc}") from exc


def _status_message(exc: ApiException) -> str:
    """The `message` of the API's Status object, or its body."""
    try:
        return str(json.loads(exc.body or "{}").get("message", ""))[:300]
    except ValueError:
        return str(exc.body or "")[:300]


def rollout_revisions(apps: AppsV1Api, ns: str, deployment: str, timeout_s: float) -> list[Any]:
    """The Deployment's ReplicaSets (owned by it), newest revision first."""
    dep = kube_request(
        f"reading deployment {deployment} in {ns}",
        lambda: apps.read_namespaced_deployment(deployment, ns, _request_timeout=timeout_s),
    )
    labels = (dep.spec.selector.match_labels or {}) if dep.spec and dep.spec.selector else {}
    selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or None
    reply = kube_request(
        f"listing replicasets in {ns}",
        lambda: apps.list_namespaced_replica_set(ns, label_selector=selector, _request_timeout=timeout_s),
    )
    owned = [
        rs
        for rs in reply.items or []
        if rs.metadata
        and any(o.kind == "Deployment" and o.name == deployment for o in rs.metadata.owner_references or [])
    ]
    return sorted(owned, key=revision_of, reverse=True)


def revision_of(rs: Any) -> int:
    value = (rs.metadata.annotations or {}).get(REVISION, "0")
    return int(value) if str(value).isdigit() else 0


def images_of(rs: Any) -> str:
    containers = rs.spec.template.spec.containers if rs.spec and rs.spec.template else []
    return ", ".join(f"{c.name}={c.image}" for c in containers or [])
