"""Operational events in the Kubernetes API: drains, evictions, nodes going NotReady, restarts, HPA rescales.

Read with the same client and allowlist as the Kubernetes tools (list verbs only). A pod's or Deployment's event
counts for the service its name starts with; a Node's event counts for the node. Rollout scaling
(ScalingReplicaSet) is left out: a rollout is a deploy, and the deploy source ranks it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from kubernetes.client import ApiClient, CoreV1Api

from tools.analysis.events import OpsEvent
from tools.kubernetes.api import kube_request

# Event reason -> the kind of operational event it is.
KINDS = {
    "NodeNotSchedulable": "drain",
    "Evicted": "eviction",
    "TaintManagerEviction": "eviction",
    "Preempted": "eviction",
    "NodeNotReady": "node",
    "BackOff": "restart",
    "OOMKilling": "restart",
    "SuccessfulRescale": "scaling",
}


class KubeEvents:
    """The operational events of the allowed namespaces."""

    def __init__(
        self, api: ApiClient | Callable[[], ApiClient], namespaces: Sequence[str], *, timeout_s: float = 10.0
    ) -> None:
        # A callable connects on first use: a kubeconfig that cannot load is then a check not run, not a failed start.
        self._api, self._core = api, None if callable(api) else CoreV1Api(api)
        self.namespaces, self.timeout_s = list(namespaces), timeout_s

    @property
    def core(self) -> CoreV1Api:
        if self._core is None:
            connect = self._api
            self._core = CoreV1Api(connect() if callable(connect) else connect)
        return self._core

    def events(self, services: Sequence[str], start: datetime, end: datetime) -> list[OpsEvent]:
        """The events of `services` (and every Node's) first seen between start and end, one per kind and object."""
        found: dict[tuple[str, str], OpsEvent] = {}
        for ns in self.namespaces:
            for item in self._listed(ns):
                event = _event(item, services)
                if event is None or not start <= event.at <= end:
                    continue
                first = found.get((event.kind, event.service))
                if first is None or event.at < first.at:
                    found[(event.kind, event.service)] = event
        return sorted(found.values(), key=lambda e: e.at)

    def _listed(self, ns: str) -> list[Any]:
        reply = kube_request(
            f"listing events in {ns}", lambda: self.core.list_namespaced_event(ns, _request_timeout=self.timeout_s)
        )
        return list(reply.items or [])


def _event(item: Any, services: Sequence[str]) -> OpsEvent | None:
    kind, obj = KINDS.get(item.reason or ""), item.involved_object
    if kind is None or obj is None:
        return None
    name = str(obj.name or "")
    owner = name if obj.kind == "Node" else _service_of(name, services)
    if not owner:
        return None
    message = " ".join((item.message or "").split())[:140]
    what = f"{item.reason} {obj.kind} {name}: {message}"[:160]
    actor = str(item.source.component or "") if item.source is not None else ""
    return OpsEvent(_first_seen(item), kind, owner, what, actor, "kubernetes", item.count or 1)


def _service_of(name: str, services: Sequence[str]) -> str:
    """The longest service whose name the object's name is or starts with (`order-7d9f-x2k4p` -> order)."""
    owners = [s for s in services if name == s or name.startswith(f"{s}-")]
    return max(owners, key=len, default="")


def _first_seen(item: Any) -> datetime:
    moment = item.first_timestamp or item.event_time or item.last_timestamp or item.metadata.creation_timestamp
    return moment if moment is not None else datetime(1970, 1, 1, tzinfo=UTC)
