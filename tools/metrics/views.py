"""What query_metrics read beside or instead of one series, as plain data and the text the model reads.

- MetricBreakdown: a signal per pod, version or peer, the most moved first (tools/metrics/breakdown.py reads it);
- ResourceUse: beside cpu or memory, the pod closest to its limit, with its request (kube-state-metrics);
- RelatedRead: beside the 5xx errors, the 4xx and 429 shares (the catalogue's client_errors and rate_limited).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, ClassVar

from tools.base import ToolData
from tools.metrics.series import factor_text, value_text
from tools.timerange import TimeWindow, duration_to_text

if TYPE_CHECKING:
    from tools.analysis.changepoints import ChangePoint

MAX_SHOWN = 10  # parts listed; the rest are counted
ROLE_WORDS = {"client_errors": "4xx", "rate_limited": "429"}
KUBE_REQUESTS = "kube_pod_container_resource_requests"
KUBE_LIMITS = "kube_pod_container_resource_limits"


@dataclass(frozen=True)
class PartMove:
    """One part (a pod, a version, a peer): its baseline, its recent level and its first level shift."""

    value: str  # the label's value
    baseline: float  # median of the window's first half, in the display unit
    recent: float  # median of the window's last tenth
    change_at: datetime | None  # the first level shift the detector found, if any
    samples: int
    new: bool = False  # no samples in the window's first half (a canary's pod): its baseline is the other parts'

    @property
    def ratio(self) -> float | None:
        return self.recent / self.baseline if self.baseline else None


@dataclass(frozen=True)
class MetricBreakdown(ToolData):
    """What query_metrics(by=...) saw: every part of the service's series, the most moved first."""

    kind: ClassVar[str] = "metric_breakdown"
    service: str
    metric: str
    by: str  # pod, version or peer
    label: str  # the Prometheus label read for it
    promql: str
    unit: str
    window: TimeWindow
    step_s: int
    parts: tuple[PartMove, ...]  # ranked, every one


@dataclass(frozen=True)
class ResourceUse:
    """The pod closest to its limit (or the service, when the signal names no pod), in the signal's display unit."""

    resource: str  # cpu or memory
    pod: str  # "" when the signal has no pod label
    used: float
    request: float | None
    limit: float | None  # None: no limit found
    pods: int  # how many pods were compared

    @property
    def share(self) -> float | None:
        return self.used / self.limit if self.limit else None


@dataclass(frozen=True)
class RelatedRead:
    """A related signal read beside this one (the 4xx share beside the 5xx share): its level and first change."""

    metric: str
    role: str
    unit: str
    median: float
    last: float
    change: ChangePoint | None


def closest_to_limit(
    resource: str, used: Mapping[str, float], requests: Mapping[str, float], limits: Mapping[str, float]
) -> ResourceUse | None:
    """The pod with the highest share of its limit (the most used one when none has a limit); None: no usage."""
    if not used:
        return None
    limited = [pod for pod in used if limits.get(pod)]
    pick = max(limited, key=lambda p: used[p] / limits[p]) if limited else max(used, key=lambda p: used[p])
    return ResourceUse(resource, pick, used[pick], requests.get(pick), limits.get(pick), len(used))


def resource_line(use: ResourceUse, unit: str) -> str:
    """`limits: memory 1,840 MB of a 2,048 MB limit (90%) on pod x, the closest of 6; request 1,024 MB`."""
    where = f" on pod {use.pod}, the closest of {use.pods}" if use.pod else ""
    request = f"; request {value_text(use.request, unit)}" if use.request is not None else "; no request found"
    if use.limit is None:
        used = value_text(use.used, unit)
        return f"limits: no limits found for {use.resource} ({KUBE_LIMITS}); {used} in use{where}{request}"
    share = f"{use.share * 100:.0f}%" if use.share is not None else "?"
    limit = f"{value_text(use.used, unit)} of a {value_text(use.limit, unit)} limit ({share})"
    return f"limits: {use.resource} {limit}{where}{request}"


def related_line(reads: Sequence[RelatedRead], clock: str) -> str:
    """`beside: client_error_rate (4xx) median 0.50% · last 12% (change 14:02 0.50% -> 12%, x24); ...`."""
    return "beside: " + "; ".join(_related_text(read, clock) for read in reads)


def _related_text(read: RelatedRead, clock: str) -> str:
    levels = f"median {value_text(read.median, read.unit)} · last {value_text(read.last, read.unit)}"
    change = read.change
    moved = (
        f" (change {change.at:{clock}} {value_text(change.before, read.unit)} -> "
        f"{value_text(change.after, read.unit)}, {factor_text(change.ratio)})"
        if change
        else " (no change)"
    )
    return f"{read.metric} ({ROLE_WORDS.get(read.role, read.role)}) {levels}{moved}"


def render_breakdown(found: MetricBreakdown) -> str:
    """Heading, PromQL, then one line per part, the most moved first: `pod-a: 0.1% -> 24% (x240), change 14:03`."""
    plural = f"{len(found.parts)} {found.by}s" if len(found.parts) != 1 else f"1 {found.by}"
    heading = (
        f"{found.metric} of {found.service} by {found.by} (label {found.label!r}), {found.window.describe()}, "
        f"step {duration_to_text(found.step_s)}: {plural}, the most moved first (first half -> last tenth)"
    )
    if not found.parts:
        return "\n".join([heading, f"promql: {found.promql}", _NONE.format(label=found.label)])
    lines = [part_line(p, found.unit, found.window.clock_format) for p in found.parts[:MAX_SHOWN]]
    more = len(found.parts) - MAX_SHOWN
    return "\n".join([heading, f"promql: {found.promql}", *lines, *([f"… and {more} more"] if more > 0 else [])])


_NONE = "no data: no series with the label {label!r} in this window (the service may not carry it)."


def part_line(part: PartMove, unit: str, clock: str) -> str:
    """`inventory-svc-7d9-x2k: 0.10% -> 24% (x240), change at 14:03`."""
    levels = f"{value_text(part.baseline, unit)} -> {value_text(part.recent, unit)} ({factor_text(part.ratio)})"
    if part.new and part.change_at:
        return f"{part.value}: {levels}, new: first sample {part.change_at:{clock}}, measured from the others' level"
    change = f", change at {part.change_at:{clock}}" if part.change_at else ""
    return f"{part.value}: {levels}{change}"
