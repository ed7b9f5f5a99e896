"""What the Kubernetes tools read, as frozen values (pods with their containers' states, events, a Deployment's
revisions), and the text the model reads, rendered from them.

Plain data, no client: tools/kubernetes/query.py reads the API and builds these.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar

from tools.base import ToolData
from tools.timerange import TimeWindow, iso_z


@dataclass(frozen=True)
class Termination:
    """How a container last ended: `OOMKilled` exit 137 at a time, with the runtime's message."""

    reason: str  # "Terminated" when the API gave none
    exit_code: int | None
    finished_at: datetime | None = None
    message: str = ""  # whitespace collapsed, at most 120 characters


@dataclass(frozen=True)
class ContainerState:
    name: str
    ready: bool
    restarts: int
    waiting: str | None = None  # the waiting reason (CrashLoopBackOff, ImagePullBackOff); None: not waiting
    waiting_message: str = ""  # at most 120 characters
    terminated: Termination | None = None  # its current state, when terminated
    last_terminated: Termination | None = None  # its previous run


@dataclass(frozen=True)
class Pod:
    name: str
    phase: str  # "?" when the API gave no status
    containers: tuple[ContainerState, ...] = ()
    node: str = ""

    @property
    def ready(self) -> bool:
        return bool(self.containers) and all(c.ready for c in self.containers)

    @property
    def restarts(self) -> int:
        return sum(c.restarts for c in self.containers)


@dataclass(frozen=True)
class PodList(ToolData):
    """The pods of one service (or every pod) in one namespace."""

    kind: ClassVar[str] = "pod_list"
    namespace: str
    service: str  # "" for every pod
    selector: str | None  # the label selector used ("app=order")
    pods: tuple[Pod, ...]
    more: bool = False  # the API had more than the tool's maximum

    @property
    def states(self) -> dict[str, int]:
        """How many containers are in each telling state: waiting reasons and `last OOMKilled exit 137`."""
        counts: dict[str, int] = {}
        for c in (c for p in self.pods for c in p.containers):
            if c.waiting:
                counts[c.waiting] = counts.get(c.waiting, 0) + 1
            if c.last_terminated is not None:
                key = f"last {c.last_terminated.reason} exit {c.last_terminated.exit_code}"
                counts[key] = counts.get(key, 0) + 1
        return counts


@dataclass(frozen=True)
class KubeEvent:
    at: datetime
    type: str  # Normal | Warning
    reason: str
    object_kind: str
    object_name: str
    count: int = 1
    message: str = ""  # whitespace collapsed, at most 200 characters


@dataclass(frozen=True)
class EventList(ToolData):
    """Events in one namespace (of objects whose name starts with `prefix`) in a window, newest first."""

    kind: ClassVar[str] = "event_list"
    namespace: str
    prefix: str
    window: TimeWindow
    events: tuple[KubeEvent, ...]  # the newest, at most the tool's maximum
    total: int
    warnings: int  # of the total, type Warning


@dataclass(frozen=True)
class Revision:
    number: int
    name: str  # the ReplicaSet
    created_at: datetime | None
    images: tuple[tuple[str, str], ...]  # (container, image)
    ready_replicas: int | None  # None: the API gave no status or spec
    replicas: int | None
    change_cause: str = ""
    current: bool = False


@dataclass(frozen=True)
class RolloutHistory(ToolData):
    kind: ClassVar[str] = "rollout_history"
    namespace: str
    deployment: str
    revisions: tuple[Revision, ...]  # newest first


def render_pods(found: PodList) -> str:
    """`pods of order (app=order) in namespace shop: 2, 1 not ready, 7 restarts in total; states: ...`, a line a pod."""
    scope = f"pods of {found.service} ({found.selector})" if found.selector else "pods"
    if not found.pods:
        return f"{scope} in namespace {found.namespace}: none."
    head = f"{scope} in namespace {found.namespace}: {pods_summary(found)}"
    states = found.states
    head += "; states: " + ", ".join(f"{k} x{n}" for k, n in states.items()) if states else ""
    more = " (more exist; ask for one service)" if found.more else ""
    return "\n".join([head + more, *(pod_line(p) for p in found.pods)])


def pods_summary(found: PodList) -> str:
    """`2, 1 not ready, 7 restarts in total` (`none` without pods): the counts the text's first line shows."""
    if not found.pods:
        return "none"
    restarts, unready = sum(p.restarts for p in found.pods), sum(1 for p in found.pods if not p.ready)
    return f"{len(found.pods)}, {unready} not ready, {restarts} restarts in total"


def render_events(found: EventList) -> str:
    """A header with the counts, then `  <time> <type> <reason> <kind>/<name> xN: <message>` per event."""
    head = f"events in namespace {found.namespace}{f' for {found.prefix}*' if found.prefix else ''}"
    head += f", {found.window.describe()}"
    if not found.events:
        return f"{head}: none."
    lines = [f"{head}: {found.total} ({found.warnings} Warning), newest first, showing {len(found.events)}"]
    return "\n".join(lines + [event_line(e) for e in found.events])


def render_rollouts(found: RolloutHistory) -> str:
    """One line per revision, newest (current) first."""
    if not found.revisions:
        return f"deployment {found.deployment} in {found.namespace} has no ReplicaSet revisions."
    lines = [f"rollout history of deployment {found.deployment} in {found.namespace}, newest first:"]
    return "\n".join(lines + [_revision_line(r) for r in found.revisions])


def pod_line(pod: Pod) -> str:
    ready = sum(1 for c in pod.containers if c.ready)
    parts = [f"{pod.name} {pod.phase} ready {ready}/{len(pod.containers)} restarts {pod.restarts}"]
    for c in pod.containers:
        if c.waiting is not None:
            parts.append(f"{c.name} waiting: {c.waiting} ({c.waiting_message})")
        elif c.terminated is not None:
            parts.append(f"{c.name} terminated: {_terminated(c.terminated)}")
        if c.last_terminated is not None:
            parts.append(f"{c.name} last terminated: {_terminated(c.last_terminated)}")
    node = f"; node {pod.node}" if pod.node else ""
    return "  " + "; ".join(parts) + node


def _terminated(t: Termination) -> str:
    at = f" at {iso_z(t.finished_at)}" if t.finished_at else ""
    message = f" ({t.message})" if t.message else ""
    return f"{t.reason} exit {t.exit_code}{at}{message}"


def event_line(e: KubeEvent) -> str:
    count = f" x{e.count}" if e.count > 1 else ""
    return f"  {iso_z(e.at)} {e.type} {e.reason} {e.object_kind}/{e.object_name}{count}: {e.message}"


def _revision_line(r: Revision) -> str:
    ready = f"{r.ready_replicas}/{r.replicas}" if r.ready_replicas is not None and r.replicas is not None else "?"
    mark = " (current)" if r.current else ""
    created = iso_z(r.created_at) if r.created_at else "?"
    images = ", ".join(f"{name}={image}" for name, image in r.images)
    return (
        f"rev {r.number}{mark} {created} {r.name} images {images}; ready {ready}; "
        f"change-cause: {r.change_cause or '(none recorded)'}"
    )
