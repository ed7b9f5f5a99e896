"""What query_metrics reads beside a signal, so the next question is answered in the same step:

- beside cpu and memory, the pods' requests and limits from kube-state-metrics
  (kube_pod_container_resource_requests / _limits{resource="cpu"|"memory"}): "memory 1,840 MB of a 2,048 MB limit
  (90%) on pod X", or "no limits found";
- beside the 5xx errors, the 4xx and 429 shares (the catalogue's client_errors and rate_limited roles), so a 429
  storm never reads as "errors flat".

The limits are compared pod by pod (an OOM kill is one container's), with the pods the signal itself names; a
signal without a pod label is compared with the limits summed over the service's series.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from tools.metrics.series import factor_text, value_text

if TYPE_CHECKING:
    from tools.analysis.changepoints import ChangePoint
    from tools.metrics.prometheus import PrometheusAPI

RESOURCE_OF_ROLE = {"cpu": "cpu", "memory": "memory"}
RELATED_ROLES = {"errors": ("client_errors", "rate_limited")}  # read beside a metric of this role
ROLE_WORDS = {"client_errors": "4xx", "rate_limited": "429"}
KUBE_REQUESTS = "kube_pod_container_resource_requests"
KUBE_LIMITS = "kube_pod_container_resource_limits"
LAST_MINUTES = 5  # the last value is read over this much of the window's end


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


def last_by(result: Sequence[Mapping[str, Any]], label: str) -> dict[str, float]:
    """Each series' last finite value, keyed by its `label` value ("" when it has none), summed per key."""
    found: dict[str, float] = {}
    for series in result:
        values = [float(v) for _, v in series.get("values", []) if float(v) == float(v)]
        if values:
            key = str(series.get("metric", {}).get(label, ""))
            found[key] = found.get(key, 0.0) + values[-1]
    return found


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


def read_resources(
    client: PrometheusAPI, promql: str, resource: str, pod_label: str, service_selector: str, end: datetime
) -> ResourceUse | None:
    """The signal's last value per pod beside each pod's request and limit (kube-state-metrics, in the signal's
    own unit: cores or bytes); `service_selector` (`service="x"`) selects the limits of a signal with no pods."""
    from tools.metrics.breakdown import grouped_by

    start = end - timedelta(minutes=LAST_MINUTES)
    used = last_by(client.query_range(grouped_by(promql, pod_label), start, end, "60s"), pod_label)
    pods = sorted(pod for pod in used if pod)
    if pods:
        selector = f"{pod_label}=~{json.dumps('|'.join(re.escape(p) for p in pods))}"
        used = {pod: used[pod] for pod in pods}
    else:
        selector = service_selector
    read = {
        kind: last_by(
            client.query_range(_kube(metric, resource, selector, pod_label, pods), start, end, "60s"), pod_label
        )
        for kind, metric in (("requests", KUBE_REQUESTS), ("limits", KUBE_LIMITS))
    }
    return closest_to_limit(resource, used, read["requests"], read["limits"])


def _kube(metric: str, resource: str, selector: str, pod_label: str, by_pod: Sequence[str]) -> str:
    grouping = f" by ({pod_label})" if by_pod else ""
    return f'sum{grouping} ({metric}{{resource="{resource}",{selector}}})'
