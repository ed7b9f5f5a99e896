"""Series `opsbot init` saw that look like a service's metrics but that it did not write: "seen, not used".

A team's own request counter under its own prefix, a consumer-group lag from an exporter, a pool gauge under a
name no known signal has, an ingress in front of services their own clients already measure: init cannot know
what each means, but leaving them out without a word hides the very signal a diagnosis may need. So each family
that looks like a request counter, a latency histogram, a pool, a queue or a lag, and that no written template
reads, is listed with the catalogue entry that would read it (and its role):
- the entry follows the family's type: Prometheus' metadata when a scrape declared one (/api/v1/metadata), else
  the name (`_total`, `_count`, `_sum` count, `_bucket` is a histogram, anything else is a gauge): a counter is
  read with rate(), a gauge as it is;
- an error share is suggested only from the status label's values: `=~"5.."` where they are status codes
  ("500", "5xx"), `="error"` where they are outcomes (success/error/timeout);
- a family only one service's series carry goes in that service's own table, one no series of the service label
  carries goes there too, with its own selector; only a family several services carry goes in the shared one.
Prometheus' and Alertmanager's own metrics are left out: they are the monitoring, not the services.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING

from tools.base import ToolError
from tools.discovery import Finding, setting_key
from tools.metrics.conventions import CONVENTIONS

if TYPE_CHECKING:
    from tools.metrics.prometheus import PrometheusAPI

MAX_LISTED = 12
STATUS_LABELS = ("code", "status", "status_code", "response_code", "http_status", "outcome")
_OWN = ("prometheus_", "alertmanager_", "promhttp_", "scrape_", "go_", "process_", "net_conntrack_")
_METRIC_RX = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*\{")
_SATURATION_RX = re.compile(r"(^|_)(pool|pools|connections|queue|queued|lag)(_|$)")
_LATENCY_RX = re.compile(r"(duration|latency|seconds|milliseconds|_ms$|_time$)")
_STATUS_CODE_RX = re.compile(r"^[1-5](\d\d|xx)$", re.IGNORECASE)
_FAILED_VALUES = ("error", "server_error", "failure", "failed", "fail", "exception", "timeout")
_COUNTED = ("_total", "_count", "_sum")
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
SATURATION_COUNTER = Kind("a pool, queue or lag counter", "sum(rate({name}{sel}[5m]))", "per s", "saturation")
REQUEST_GAUGE = Kind("a request gauge (not a counter)", "max({name}{sel})", "count", "traffic")


def used_metrics(templates: Iterable[str]) -> set[str]:
    """The names the written templates read (a template may read several: active / max), and the sibling series of
    each request convention a template reads. A convention no template reads (an ingress in front of services
    their own clients measure) is not among them: it was seen, not used."""
    read = {name for promql in templates for name in _METRIC_RX.findall(promql)}
    for convention in CONVENTIONS:
        family = {convention.requests, convention.duration}
        family |= {f"{convention.duration}_{part}" for part in ("bucket", "count", "sum", "max")}
        if family & read:
            read |= family
    return read


def metric_type(name: str, types: dict[str, str]) -> str:
    """counter, gauge, histogram or summary: as a scrape declared it, else from the name's suffix. A request
    convention's counter is a counter whatever its name (ingress-nginx's has no _total)."""
    declared = types.get(name) or types.get(name.removesuffix("_total"))
    if declared:
        return declared
    if name.endswith("_bucket"):
        return "histogram"
    if name.endswith(_COUNTED) or name in {c.requests for c in CONVENTIONS}:
        return "counter"
    return "gauge"


def seen_not_used(
    client: PrometheusAPI, names: Iterable[str], templates: Iterable[str], label: str, since: datetime
) -> Finding | None:
    """One finding whose warnings list each family seen and not used, with the entry that would read it."""
    types = _declared_types(client)
    candidates = sorted(_candidates(set(names), used_metrics(templates), types).items())
    if not candidates:
        return None
    lines = [_line(client, name, kind, label, since) for name, kind in candidates[:MAX_LISTED]]
    if len(candidates) > MAX_LISTED:
        lines.append(f"… and {len(candidates) - MAX_LISTED} more: {', '.join(n for n, _ in candidates[MAX_LISTED:])}")
    return Finding("prometheus.metrics", None, "seen, not used", (), tuple(lines))


def _declared_types(client: PrometheusAPI) -> dict[str, str]:
    """The metadata's types; a Prometheus that keeps none (or an older one) leaves the names to tell."""
    try:
        return client.metric_types()
    except ToolError:
        return {}


def _candidates(names: set[str], known: set[str], types: dict[str, str]) -> dict[str, Kind]:
    found: dict[str, Kind] = {}
    for name in names:
        if name in known or name.startswith(_OWN):
            continue
        family = name.removesuffix("_bucket")
        if family != name:  # a histogram read by its sum (GC pauses) is used; a size histogram is no latency
            if not {family, f"{family}_sum", f"{family}_count"} & known and _LATENCY_RX.search(family):
                found[family] = HISTOGRAM
            continue
        kind = _kind(name, metric_type(name, types))
        if kind is not None:
            found.setdefault(name, kind)
    return found


def _kind(name: str, declared: str) -> Kind | None:
    counter = declared == "counter"
    if name.endswith(("_requests_total", "_requests")):
        return COUNTER if counter else REQUEST_GAUGE
    if _SATURATION_RX.search(name) and not name.endswith(("_created", "_sum", "_count", "_max", "_bucket")):
        return SATURATION_COUNTER if counter else GAUGE
    return None


def _line(client: PrometheusAPI, name: str, kind: Kind, label: str, since: datetime) -> str:
    """`shopfront_http_requests_total: a request counter ...; add [prometheus.metrics.<name>] promql = ...`."""
    probe = f"{name}_bucket" if kind is HISTOGRAM else name
    labels = set(client.label_names(match=probe, since=since)) - {"__name__"}
    status = next((s for s in STATUS_LABELS if s in labels), "")
    if kind is COUNTER and not status:
        kind = replace(kind, what="a request counter (no status label)")
    unit = "ms" if kind is HISTOGRAM and name.endswith(("_milliseconds", "_ms")) else kind.unit
    entry = f"promql = '{kind.promql.format(name=name, sel=_SEL)}', unit = '{unit}', role = '{kind.role}'"
    errors = _errors_advice(client, probe, status, since) if kind.role == "traffic" and status else ""
    if label not in labels:
        shown = ", ".join(sorted(labels)[:6]) or "none"
        return (
            f"{name}: {kind.what}, its series carry no {label!r} label (labels: {shown}); to read it for one service "
            f"add [prometheus.services.<service>.metrics.<name>] with a selector for its series, role = '{kind.role}'"
        )
    services = sorted(client.label_values(label, match=probe, since=since))
    if len(services) == 1:  # the shared catalogue would query it, and find nothing, for every other service
        table = f"[prometheus.services.{setting_key(services[0])}.metrics.<name>]"
        return f"{name}: {kind.what}, only {services[0]}'s series carry it; to read it add {table} {entry}{errors}"
    return f"{name}: {kind.what}; to read it add [prometheus.metrics.<name>] {entry}{errors}"


def _errors_advice(client: PrometheusAPI, metric: str, status: str, since: datetime) -> str:
    """The error share to add, from what the status label holds: codes, outcomes, or values to choose from."""
    values = sorted(client.label_values(status, match=metric, since=since))
    if values and all(_STATUS_CODE_RX.match(v) for v in values):
        return f"; its {status}=~\"5..\" share as role 'errors'"
    failed = [v for v in values if v.casefold() in _FAILED_VALUES]
    if failed:
        matcher = f'{status}="{failed[0]}"' if len(failed) == 1 else f'{status}=~"{"|".join(failed)}"'
        return f"; its {matcher} share as role 'errors' ({status} holds {', '.join(values[:6])}: not status codes)"
    shown = ", ".join(values[:6]) or "no values"
    return f"; {status} holds {shown}: not status codes; its failing values' share as role 'errors'"
