"""One catalogued signal broken down by a label (pod, version, peer) and ranked by how far each part moved; and
read per pod beside each pod's request and limit.

A canary on 1 of 8 pods moves the service-wide error ratio by an eighth of its own: "errors x1.4" reads as noise,
while the pod went from 0.1 % to 25 %. The breakdown reads the same template with the label added to each of its
aggregations (`sum by (le)` -> `sum by (le, pod)`, `sum(` -> `sum by (pod) (`), so a ratio of two sums stays a ratio
per pod, and ranks the parts by how far each one's recent level stands from its own baseline (the median of the
window's first half): a move of x10 ranks above one of x0.5, a rise from nothing above both.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from statistics import median
from typing import TYPE_CHECKING, Any

from tools.metrics.catalogue import segments
from tools.metrics.reading import Points, points_of
from tools.metrics.views import KUBE_LIMITS, KUBE_REQUESTS, PartMove, ResourceUse, closest_to_limit
from tools.timerange import TimeWindow

if TYPE_CHECKING:
    from tools.metrics.prometheus import PrometheusAPI

LAST_MINUTES = 5  # beside cpu or memory, the last value is read over this much of the window's end
RECENT_SHARE = 0.1  # the recent level: the median of the window's last tenth (at least RECENT_MIN points)
RECENT_MIN = 3
_AGGREGATION = re.compile(r"\b(sum|avg|min|max|count|group|stddev|stdvar)\s*(?:(by|without)\s*\(([^)]*)\)\s*)?\(")
_POSTFIX = re.compile(r"\s*(by|without)\s*\(([^)]*)\)")


def grouped_by(promql: str, label: str) -> str:
    """The template with `label` added to each aggregation's grouping (`without` groupings keep it already)."""
    quoted = [(a, b) for a, b, is_string, _ in segments(promql) if is_string]
    edits: list[tuple[int, int, str]] = []
    for match in _AGGREGATION.finditer(promql):
        if any(a <= match.start() < b for a, b in quoted):
            continue
        if match.group(2) == "without":
            continue
        if match.group(2) == "by":
            edits.append((match.start(3), match.end(3), _with_label(match.group(3), label)))
            continue
        close = _closing(promql, match.end() - 1, quoted)
        postfix = _POSTFIX.match(promql, close + 1)
        if postfix and postfix.group(1) == "by":
            edits.append((postfix.start(2), postfix.end(2), _with_label(postfix.group(2), label)))
        elif not postfix:
            edits.append((match.end(1), match.end(1), f" by ({label}) "))
    for start, end, text in sorted(edits, reverse=True):
        promql = promql[:start] + text + promql[end:]
    return promql


def _with_label(grouping: str, label: str) -> str:
    names = [name.strip() for name in grouping.split(",") if name.strip()]
    return ", ".join(names if label in names else [*names, label])


def _closing(promql: str, opening: int, quoted: Sequence[tuple[int, int]]) -> int:
    """The index of the bracket that closes the one at `opening` (strings skipped); the text's end when none."""
    depth = 0
    for index in range(opening, len(promql)):
        if any(a <= index < b for a, b in quoted):
            continue
        depth += {"(": 1, ")": -1}.get(promql[index], 0)
        if depth == 0:
            return index
    return len(promql) - 1


def parts_from_result(
    result: Sequence[Mapping[str, Any]], label: str, factor: float, window: TimeWindow
) -> tuple[PartMove, ...]:
    """Each series of the answer as a part (named by its `label` value), ranked by how far it moved. A part that
    began in the window's second half (a canary's new pod) is measured from the older parts' baseline."""
    middle = window.start + (window.end - window.start) / 2
    labelled = [series for series in result if series.get("metric", {}).get(label)]  # a series without it is no part
    points = {_name(series, label): points_of(series, factor) for series in labelled}
    early = [v for found in points.values() for t, v in found if t < middle]
    shared = median(early) if early else 0.0
    parts = [_part(name, found, middle, shared) for name, found in points.items() if found]
    top = max((max(abs(p.baseline), abs(p.recent)) for p in parts), default=0.0)
    floor = top * 0.01 or 1e-12  # a part at zero moves from a hundredth of the largest level, not from nothing
    return tuple(sorted(parts, key=lambda p: (-_moved(p, floor), p.value)))


def _name(series: Mapping[str, Any], label: str) -> str:
    return str(series.get("metric", {}).get(label, "")) or f"(no {label})"


def _part(name: str, points: Points, middle: datetime, shared: float) -> PartMove:
    from tools.analysis.changepoints import detect_changes

    values = [v for _, v in points]
    recent = max(RECENT_MIN, math.ceil(len(values) * RECENT_SHARE))
    early = [v for t, v in points if t < middle]
    if not early:  # its first sample is where it starts
        return PartMove(name, shared, median(values[-recent:]), points[0][0], len(values), new=True)
    changes = detect_changes([t for t, _ in points], values)
    return PartMove(name, median(early), median(values[-recent:]), _first(changes), len(values))


def _first(changes: Sequence[Any]) -> datetime | None:
    return changes[0].at if changes else None


def _moved(part: PartMove, floor: float) -> float:
    return abs(math.log((part.recent + floor) / (part.baseline + floor)))


def last_by(result: Sequence[Mapping[str, Any]], label: str) -> dict[str, float]:
    """Each series' last finite value, keyed by its `label` value ("" when it has none), summed per key."""
    found: dict[str, float] = {}
    for series in result:
        values = [float(v) for _, v in series.get("values", []) if float(v) == float(v)]
        if values:
            key = str(series.get("metric", {}).get(label, ""))
            found[key] = found.get(key, 0.0) + values[-1]
    return found


def read_resources(
    client: PrometheusAPI,
    promql: str,
    resource: str,
    pod_label: str,
    service_selector: str,
    end: datetime,
    factor: float = 1.0,
) -> ResourceUse | None:
    """The signal's last value per pod beside each pod's request and limit (kube-state-metrics, in the signal's
    own unit: cores or bytes); `service_selector` (`service="x"`) selects the limits of a signal with no pods."""
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
    scaled = [{key: value * factor for key, value in found.items()} for found in (used, *read.values())]
    return closest_to_limit(resource, *scaled)


def _kube(metric: str, resource: str, selector: str, pod_label: str, by_pod: Sequence[str]) -> str:
    grouping = f" by ({pod_label})" if by_pod else ""
    return f'sum{grouping} ({metric}{{resource="{resource}",{selector}}})'


RESOURCE_OF_ROLE = {"cpu": "cpu", "memory": "memory"}
RELATED_ROLES = {"errors": ("client_errors", "rate_limited")}  # read beside a metric of this role
