"""Read-only Kubernetes tools: pod status with last termination reasons, recent events, rollout history.

Everything goes through the official `kubernetes` client, only in the namespaces of an allowlist (checked
before any request), and only with list/get verbs, which is all the chart's Role grants. Each tool reads the API
objects into the frozen values of tools/kubernetes/objects.py and renders the model's text from those.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from kubernetes.client import ApiClient, AppsV1Api, CoreV1Api

from tools.base import ToolError, ToolResult, ToolSpec, tool
from tools.choices import choice_or_error
from tools.kubernetes.api import CHANGE_CAUSE, kube_request, revision_of, rollout_revisions
from tools.kubernetes.objects import (
    ContainerState,
    EventList,
    KubeEvent,
    Pod,
    PodList,
    Revision,
    RolloutHistory,
    Termination,
    render_events,
    render_pods,
    render_rollouts,
)
from tools.timerange import Clock, utc_now, window_from_args
from tools.toolset import CheckWarning

NAME_RX = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$")  # DNS-1123, what Kubernetes accepts


class KubernetesTools:
    """query_pods, query_k8s_events and query_rollout_history over one ApiClient, in allowed namespaces only."""

    def __init__(
        self,
        api: ApiClient,
        namespaces: list[str],
        *,
        service_label: str = "app",
        timeout_s: float = 10.0,
        max_events: int = 30,
        max_pods: int = 40,
        clock: Clock = utc_now,
    ) -> None:
        self.core, self.apps = CoreV1Api(api), AppsV1Api(api)
        self.namespaces = list(namespaces)
        self.service_label = service_label
        self.timeout_s = timeout_s
        self.max_events, self.max_pods = max_events, max_pods
        self.clock = clock

    def specs(self) -> list[ToolSpec]:
        """The three read-only tools; their descriptions list the allowed namespaces."""
        allowed = ", ".join(self.namespaces)
        return [
            tool(self.query_pods, description=_PODS_DOC.format(namespaces=allowed, label=self.service_label)),
            tool(self.query_k8s_events, description=_EVENTS_DOC.format(namespaces=allowed, most=self.max_events)),
            tool(self.query_rollout_history, description=_ROLLOUT_DOC.format(namespaces=allowed)),
        ]

    def check(self) -> str:
        """One cheap list per allowed namespace (limit 1): proves the address, the credentials and the Role."""
        failed: list[str] = []
        for ns in self.namespaces:
            try:
                self._list_one_pod(ns)
            except ToolError as exc:
                failed.append(str(exc))
        readable = len(self.namespaces) - len(failed)
        if failed and not readable:
            raise ToolError("; ".join(failed))
        if failed:
            raise CheckWarning(f"pods readable in {readable} of {len(self.namespaces)} namespaces; {failed[0]}")
        return f"pods readable in {len(self.namespaces)} namespace(s): {', '.join(self.namespaces)}"

    def _list_one_pod(self, ns: str) -> None:
        kube_request(
            f"listing pods in {ns}", lambda: self.core.list_namespaced_pod(ns, limit=1, _request_timeout=self.timeout_s)
        )

    def query_pods(self, namespace: str, service: str = "") -> ToolResult:
        """Run query_pods (the description shown to the model is _PODS_DOC)."""
        ns = self._namespace(namespace)
        selector = f"{self.service_label}={_name(service, 'service')}" if service.strip() else None
        reply = kube_request(
            f"listing pods in {ns}",
            lambda: self.core.list_namespaced_pod(
                ns, label_selector=selector, limit=self.max_pods, _request_timeout=self.timeout_s
            ),
        )
        more = bool(reply.metadata and reply.metadata._continue)
        found = PodList(ns, service.strip(), selector, tuple(_pod(p) for p in reply.items or []), more)
        return ToolResult("ok" if found.pods else "no_data", render_pods(found), found)

    def query_k8s_events(
        self, namespace: str, service: str = "", range: str = "1h", start: str = "", end: str = ""
    ) -> ToolResult:
        """Run query_k8s_events (the description shown to the model is _EVENTS_DOC)."""
        ns = self._namespace(namespace)
        prefix = _name(service, "service") if service.strip() else ""
        window = window_from_args(range, start, end, self.clock())
        reply = kube_request(
            f"listing events in {ns}", lambda: self.core.list_namespaced_event(ns, _request_timeout=self.timeout_s)
        )
        events = [e for e in reply.items or [] if _event_matches(e, prefix, window.start, window.end)]
        events.sort(key=_event_time, reverse=True)
        warnings = sum(1 for e in events if e.type == "Warning")
        shown = tuple(_event(e) for e in events[: self.max_events])
        found = EventList(ns, prefix, window, shown, len(events), warnings)
        return ToolResult("ok" if events else "no_data", render_events(found), found)

    def query_rollout_history(self, namespace: str, deployment: str) -> ToolResult:
        """Run query_rollout_history (the description shown to the model is _ROLLOUT_DOC)."""
        ns = self._namespace(namespace)
        revisions = rollout_revisions(self.apps, ns, _name(deployment, "deployment"), self.timeout_s)
        found = RolloutHistory(ns, deployment, tuple(_revision(rs, current=i == 0) for i, rs in enumerate(revisions)))
        return ToolResult("ok" if revisions else "no_data", render_rollouts(found), found)

    def _namespace(self, namespace: str) -> str:
        return choice_or_error(
            namespace.strip() or self.namespaces[0], self.namespaces, "namespace", "the allowed namespaces"
        )


def _revision(rs: Any, *, current: bool) -> Revision:
    annotations = rs.metadata.annotations or {}
    known = bool(rs.status and rs.spec)
    containers = rs.spec.template.spec.containers if rs.spec and rs.spec.template else []
    return Revision(
        revision_of(rs),
        str(rs.metadata.name),
        rs.metadata.creation_timestamp,
        tuple((str(c.name), str(c.image)) for c in containers or []),
        (rs.status.ready_replicas or 0) if known else None,
        (rs.spec.replicas or 0) if known else None,
        str(annotations.get(CHANGE_CAUSE, "")),
        current,
    )


def _name(value: str, kind: str) -> str:
    name = value.strip()
    if not NAME_RX.match(name):
        raise ToolError(f"invalid {kind} name {value!r}; Kubernetes names are lowercase letters, digits, '-' and '.'.")
    return name


def _pod(pod: Any) -> Pod:
    statuses = pod.status.container_statuses or [] if pod.status else []
    node = pod.spec.node_name if pod.spec and pod.spec.node_name else ""
    phase = str(pod.status.phase or "?") if pod.status else "?"
    return Pod(str(pod.metadata.name), phase, tuple(map(_container, statuses)), node)


def _container(s: Any) -> ContainerState:
    state, last = s.state, s.last_state
    waiting = state.waiting if state else None
    return ContainerState(
        str(s.name),
        bool(s.ready),
        s.restart_count or 0,
        (waiting.reason or "") if waiting else None,
        (waiting.message or "")[:120] if waiting else "",
        _termination(state.terminated) if state and state.terminated else None,
        _termination(last.terminated) if last and last.terminated else None,
    )


def _termination(t: Any) -> Termination:
    return Termination(t.reason or "Terminated", t.exit_code, t.finished_at, " ".join((t.message or "").split())[:120])


def _event_time(event: Any) -> datetime:
    moment = event.last_timestamp or event.event_time or event.first_timestamp or event.metadata.creation_timestamp
    return moment if moment is not None else datetime(1970, 1, 1, tzinfo=UTC)


def _event_matches(event: Any, prefix: str, start: datetime, end: datetime) -> bool:
    obj = event.involved_object
    name = obj.name if obj is not None else ""
    return (not prefix or (name or "").startswith(prefix)) and start <= _event_time(event) < end


def _event(e: Any) -> KubeEvent:
    obj = e.involved_object
    message = " ".join((e.message or "").split())[:200]
    return KubeEvent(_event_time(e), e.type or "", e.reason or "", str(obj.kind), str(obj.name), e.count or 1, message)


_PODS_DOC = """\
List the pods of a service in one namespace: phase, readiness, restarts, and for each container its waiting \
reason (CrashLoopBackOff, ImagePullBackOff) and last termination (OOMKilled, Error, exit code, when).
Use it when a service restarts, errors at the edge of a deploy, or a memory or restart metric moved.
Legal values: namespace one of {namespaces}; service: the pod label {label}=<service>, empty = every pod.
Returns one line per pod (at most the configured maximum)."""

_EVENTS_DOC = """\
Recent Kubernetes events in one namespace (scheduling, probes failing, back-offs, OOM kills, image pulls), \
newest first.
Use it after query_pods, or to see what the cluster did around the time a symptom began.
Legal values: namespace one of {namespaces}; service: events of objects whose name starts with it, empty = all; \
range <n>m|h|d or start/end ISO 8601 UTC.
Returns at most {most} events: time, type, reason, object, count, message."""

_ROLLOUT_DOC = """\
The rollout history of one Deployment: its ReplicaSet revisions, newest first, with when each was created, its \
container images, readiness, and the kubernetes.io/change-cause annotation.
Use it to see what changed in the cluster (an image or a config rollout) just before a symptom began.
Legal values: namespace one of {namespaces}; deployment: the Deployment's name (usually the service).
Returns one line per revision."""
