"""Read-only Kubernetes tools: pod status with last termination reasons, recent events, rollout history.

Everything goes through the official `kubernetes` client, only in the namespaces of an allowlist (checked
before any request), and only with list/get verbs, which is all the chart's Role grants.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from kubernetes.client import ApiClient, AppsV1Api, CoreV1Api

from tools.base import ToolError, ToolResult, ToolSpec, tool
from tools.choices import choice_or_error
from tools.kubernetes.api import CHANGE_CAUSE, images_of, kube_request, revision_of, rollout_revisions
from tools.timerange import Clock, iso_z, utc_now, window_from_args
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

    def query_pods(self, namespace: str, service: str = "") -> ToolResult | str:
        """Run query_pods (the description shown to the model is _PODS_DOC)."""
        ns = self._namespace(namespace)
        selector = f"{self.service_label}={_name(service, 'service')}" if service.strip() else None
        reply = kube_request(
            f"listing pods in {ns}",
            lambda: self.core.list_namespaced_pod(
                ns, label_selector=selector, limit=self.max_pods, _request_timeout=self.timeout_s
            ),
        )
        pods = list(reply.items or [])
        scope = f"pods of {service.strip()} ({selector})" if selector else "pods"
        if not pods:
            return ToolResult("no_data", f"{scope} in namespace {ns}: none.")
        restarts = sum(_restarts(p) for p in pods)
        unready = sum(1 for p in pods if not _ready(p))
        head = f"{scope} in namespace {ns}: {len(pods)}, {unready} not ready, {restarts} restarts in total"
        head += _states_summary(pods)
        more = " (more exist; ask for one service)" if reply.metadata and reply.metadata._continue else ""
        return "\n".join([head + more, *(_pod_line(p) for p in pods)])

    def query_k8s_events(
        self, namespace: str, service: str = "", range: str = "1h", start: str = "", end: str = ""
    ) -> ToolResult | str:
        """Run query_k8s_events (the description shown to the model is _EVENTS_DOC)."""
        ns = self._namespace(namespace)
        prefix = _name(service, "service") if service.strip() else ""
        window = window_from_args(range, start, end, self.clock())
        reply = kube_request(
            f"listing events in {ns}", lambda: self.core.list_namespaced_event(ns, _request_timeout=self.timeout_s)
        )
        events = [e for e in reply.items or [] if _event_matches(e, prefix, window.start, window.end)]
        events.sort(key=_event_time, reverse=True)
        head = f"events in namespace {ns}{f' for {prefix}*' if prefix else ''}, {window.describe()}"
        if not events:
            return ToolResult("no_data", f"{head}: none.")
        warnings = sum(1 for e in events if e.type == "Warning")
        shown = events[: self.max_events]
        lines = [f"{head}: {len(events)} ({warnings} Warning), newest first, showing {len(shown)}"]
        return "\n".join(lines + [_event_line(e) for e in shown])

    def query_rollout_history(self, namespace: str, deployment: str) -> ToolResult | str:
        """Run query_rollout_history (the description shown to the model is _ROLLOUT_DOC)."""
        ns = self._namespace(namespace)
        revisions = rollout_revisions(self.apps, ns, _name(deployment, "deployment"), self.timeout_s)
        if not revisions:
            return ToolResult("no_data", f"deployment {deployment} in {ns} has no ReplicaSet revisions.")
        lines = [f"rollout history of deployment {deployment} in {ns}, newest first:"]
        for i, rs in enumerate(revisions):
            lines.append(_revision_line(rs, current=i == 0))
        return "\n".join(lines)

    def _namespace(self, namespace: str) -> str:
        return choice_or_error(
            namespace.strip() or self.namespaces[0], self.namespaces, "namespace", "the allowed namespaces"
        )


def _revision_line(rs: Any, *, current: bool) -> str:
    annotations = rs.metadata.annotations or {}
    cause = annotations.get(CHANGE_CAUSE, "")
    ready = f"{rs.status.ready_replicas or 0}/{rs.spec.replicas or 0}" if rs.status and rs.spec else "?"
    mark = " (current)" if current else ""
    created = iso_z(rs.metadata.creation_timestamp) if rs.metadata.creation_timestamp else "?"
    return (
        f"rev {revision_of(rs)}{mark} {created} {rs.metadata.name} images {images_of(rs)}; ready {ready}; "
        f"change-cause: {cause or '(none recorded)'}"
    )


def _name(value: str, kind: str) -> str:
    name = value.strip()
    if not NAME_RX.match(name):
        raise ToolError(f"invalid {kind} name {value!r}; Kubernetes names are lowercase letters, digits, '-' and '.'.")
    return name


def _restarts(pod: Any) -> int:
    return sum(s.restart_count or 0 for s in (pod.status.container_statuses or [])) if pod.status else 0


def _ready(pod: Any) -> bool:
    statuses = pod.status.container_statuses or [] if pod.status else []
    return bool(statuses) and all(s.ready for s in statuses)


def _states_summary(pods: list[Any]) -> str:
    """ "; states: CrashLoopBackOff x1, last OOMKilled exit 137 x4": the first line alone names what went wrong."""
    counts: dict[str, int] = {}
    for pod in pods:
        for s in pod.status.container_statuses or [] if pod.status else []:
            if s.state and s.state.waiting and s.state.waiting.reason:
                counts[s.state.waiting.reason] = counts.get(s.state.waiting.reason, 0) + 1
            if s.last_state and s.last_state.terminated:
                t = s.last_state.terminated
                key = f"last {t.reason or 'Terminated'} exit {t.exit_code}"
                counts[key] = counts.get(key, 0) + 1
    return "; states: " + ", ".join(f"{k} x{n}" for k, n in counts.items()) if counts else ""


def _pod_line(pod: Any) -> str:
    statuses = pod.status.container_statuses or [] if pod.status else []
    ready = sum(1 for s in statuses if s.ready)
    parts = [
        f"{pod.metadata.name} {pod.status.phase if pod.status else '?'} ready {ready}/{len(statuses)} "
        f"restarts {_restarts(pod)}"
    ]
    for s in statuses:
        state, last = s.state, s.last_state
        if state and state.waiting:
            parts.append(f"{s.name} waiting: {state.waiting.reason} ({(state.waiting.message or '')[:120]})")
        elif state and state.terminated:
            parts.append(f"{s.name} terminated: {_terminated(state.terminated)}")
        if last and last.terminated:
            parts.append(f"{s.name} last terminated: {_terminated(last.terminated)}")
    node = f"; node {pod.spec.node_name}" if pod.spec and pod.spec.node_name else ""
    return "  " + "; ".join(parts) + node


def _terminated(t: Any) -> str:
    at = f" at {iso_z(t.finished_at)}" if t.finished_at else ""
    message = f" ({' '.join((t.message or '').split())[:120]})" if t.message else ""
    return f"{t.reason or 'Terminated'} exit {t.exit_code}{at}{message}"


def _event_time(event: Any) -> datetime:
    moment = event.last_timestamp or event.event_time or event.first_timestamp or event.metadata.creation_timestamp
    return moment if moment is not None else datetime(1970, 1, 1, tzinfo=UTC)


def _event_matches(event: Any, prefix: str, start: datetime, end: datetime) -> bool:
    obj = event.involved_object
    name = obj.name if obj is not None else ""
    return (not prefix or (name or "").startswith(prefix)) and start <= _event_time(event) < end


def _event_line(e: Any) -> str:
    obj = e.involved_object
    count = f" x{e.count}" if e.count and e.count > 1 else ""
    message = " ".join((e.message or "").split())[:200]
    return f"  {iso_z(_event_time(e))} {e.type} {e.reason} {obj.kind}/{obj.name}{count}: {message}"


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
