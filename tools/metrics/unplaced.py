"""Series `opsbot init` saw that look like a service's metrics but that it did not write: "seen, not used".

A team's own request counter under its own prefix, a consumer-group lag from an exporter, a pool gauge under a
name no known signal has: init cannot know what each means, but leaving them out without a word hides the very
signal a diagnosis may need. So each family that looks like a request counter, a histogram, a pool, a queue or a
lag, and that no convention or signal reads, is listed with how to add it as a catalogue entry (and its role),
and whether its series carry the service label (if not, the entry belongs to one service, with its own selector).
Prometheus' and Alertmanager's own metrics are left out: they are the monitoring, not the services.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from tools.discovery import Finding
from tools.metrics.conventions import CONVENTIONS

if TYPE_CHECKING:
    from tools.metrics.prometheus import PrometheusAPI

MAX_LISTED = 12
STATUS_LABELS = ("code", "status", "status_code", "response_code", "http_status", "outcome")
_OWN = ("prometheus_", "alertmanager_", "promhttp_", "scrape_", "go_", "process_", "net_conntrack_")
_METRIC_RX = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*\{")
_SATURATION_RX = re.compile(r"(^|_)(pool|pools|connections|queue|queued|lag)(_|$)")
_SEL = '{$label="$service"}'


@dataclass(frozen=True)
class Kind:
    """What a family looks like, and the catalogue entry that would read it."""

    what: str
    promql: str  # with {name} for the family and {sel} for the service selector
    unit: str
    role: str


HISTOGRAM = Kind(
    "a latency histogram", "histogram_quantile(0.99, sum by (le) (rate({name}_bucket{sel}[5m])))", "s", "latency"
)
COUNTER = Kind("a request counter with a status label", "sum(rate({name}{sel}[5m]))", "rps", "traffic")
GAUGE = Kind("a pool, queue or lag gauge", "max({name}{sel})", "count", "saturation")


def used_metrics(templates: Iterable[str]) -> set[str]:
    """Every metric name the request conventions name, and those the written templates read (a template may read
    several: active / max). A known signal no service's series carry is not among them: it was seen, not used."""
    known = {c.requests for c in CONVENTIONS} | {c.duration for c in CONVENTIONS}
    known |= {f"{c.duration}_{part}" for c in CONVENTIONS for part in ("bucket", "count", "sum", "max")}
    return known | {name for promql in templates for name in _METRIC_RX.findall(promql)}


def seen_not_used(
    client: PrometheusAPI, names: Iterable[str], templates: Iterable[str], label: str, since: datetime
) -> Finding | None:
    """One finding whose warnings list each family seen and not used, with the entry that would read it."""
    candidates = sorted(_candidates(set(names), used_metrics(templates)).items())
    if not candidates:
        return None
    lines = [_line(client, name, kind, label, since) for name, kind in candidates[:MAX_LISTED]]
    if len(candidates) > MAX_LISTED:
        lines.append(f"… and {len(candidates) - MAX_LISTED} more: {', '.join(n for n, _ in candidates[MAX_LISTED:])}")
    return Finding("prometheus.metrics", None, "seen, not used", (), tuple(lines))


def _candidates(names: set[str], known: set[str]) -> dict[str, Kind]:
    found: dict[str, Kind] = {}
    for name in names:
        if name in known or name.startswith(_OWN):
            continue
        family = name.removesuffix("_bucket")
        if family != name:  # a histogram read by its sum (GC pauses) is used
            if not {family, f"{family}_sum", f"{family}_count"} & known:
                found[family] = HISTOGRAM
        elif name.endswith(("_requests_total", "_requests")):
            found.setdefault(name, COUNTER)
        elif _SATURATION_RX.search(name) and not name.endswith(("_created", "_sum", "_count", "_max")):
            found.setdefault(name, GAUGE)
    return found


def _line(client: PrometheusAPI, name: str, kind: Kind, label: str, since: datetime) -> str:
    """`shopfront_http_requests_total: a request counter ...; add [prometheus.metrics.<name>] promql = ...`."""
    probe = f"{name}_bucket" if kind is HISTOGRAM else name
    labels = set(client.label_names(match=probe, since=since)) - {"__name__"}
    if kind is COUNTER and not labels & set(STATUS_LABELS):
        kind = Kind("a request counter (no status label)", kind.promql, kind.unit, kind.role)
    promql = kind.promql.format(name=name, sel=_SEL)
    unit = "ms" if kind is HISTOGRAM and name.endswith(("_milliseconds", "_ms")) else kind.unit
    entry = f"promql = '{promql}', unit = '{unit}', role = '{kind.role}'"
    status = next((s for s in STATUS_LABELS if s in labels), "")
    errors = f"; its {status}=~\"5..\" share as role 'errors'" if kind.role == "traffic" and status else ""
    if label in labels:
        return f"{name}: {kind.what}; to read it add [prometheus.metrics.<name>] {entry}{errors}"
    shown = ", ".join(sorted(labels)[:6]) or "none"
    return (
        f"{name}: {kind.what}, its series carry no {label!r} label (labels: {shown}); to read it for one service add "
        f"[prometheus.services.<service>.metrics.<name>] with a selector for its series, role = '{kind.role}'"
    )
