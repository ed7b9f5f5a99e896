"""Metric discovery for `opsbot init`: which convention each service follows, under which label, and the catalogue.

Per service, not per stack: Java services on `application` and a Go service on `app_kubernetes_io_name` are one
stack. The steps, each a cheap label query to Prometheus over the last hour:
1. which known request families exist (tools/metrics/conventions.py), and which label names the services on each
   (the first of the convention's candidates that has values; a later candidate only for the series that lack the
   earlier ones, so `job` never shadows `application`);
2. per service, the metric names it has: the latency shape (histogram, summary, Micrometer's max, a mean), the
   status label its request counter carries, and the resource signals (CPU, memory, GC, pools, queues, lag);
3. the catalogue: the label most services use and each name's most common template become the catalogue; a
   service that differs gets its own label, its own templates, and the names it does not measure.
Every choice is a Finding with its evidence; what was not found is a Finding with problems, never a silent default.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from tools.discovery import Finding, setting_key
from tools.metrics.collection import raw_metric
from tools.metrics.conventions import (
    CONVENTIONS,
    SIGNALS,
    Convention,
    errors_template,
    latency_template,
    traffic_template,
)
from tools.metrics.unplaced import seen_not_used

if TYPE_CHECKING:
    from tools.metrics.prometheus import PrometheusAPI

LOOKBACK = timedelta(hours=1)
MAX_SERVICES = 200
MAX_LISTED = 6
Entry = dict[str, Any]  # a catalogue entry as the config file holds it: promql, unit, description, role


@dataclass
class ServiceFound:
    """One service: the convention and label it was found under, and the catalogue entries it can be read with."""

    name: str
    convention: Convention
    label: str
    entries: dict[str, Entry] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what could not be measured, and why


def discover_metrics(client: PrometheusAPI, now: datetime, url: str = "") -> list[Finding]:
    """The prometheus.* settings for the stack behind `client`, each with its evidence."""
    since = now - LOOKBACK
    names = set(client.label_values("__name__", since=since))
    head = [Finding("prometheus.url", url, f"answered with {len(names)} metric names active in the last hour")]
    services = _services(client, names, since)
    if not services:
        return [*head, _nothing_recognised(names)]
    for found in services:
        _read_service(client, found, since)
    catalogue = catalogue_findings(services)
    label = str(catalogue[0].value)
    templates = [entry["promql"] for found in services for entry in found.entries.values()]
    seen = seen_not_used(client, names, templates, label, since)
    return head + catalogue + _up_findings(client, names, label, since) + ([seen] if seen else [])


def _up_findings(client: PrometheusAPI, names: set[str], label: str, since: datetime) -> list[Finding]:
    """`up_metric = ''` when no `up` series names the services (metrics by remote-write, federation or a backfill):
    said, rather than left at a default doctor would find empty."""
    if "up" in names and label in client.label_names(match="up", since=since):
        return []
    why = "no up series is active" if "up" not in names else f"the up series carry no {label!r} label"
    evidence = f"{why}: a series that stops is not told apart from a scrape that stopped (answers say 'not checked')"
    return [Finding("prometheus.up_metric", "", evidence)]


def _services(client: PrometheusAPI, names: set[str], since: datetime) -> list[ServiceFound]:
    """Each service of each present convention, the first (application) convention that names it winning."""
    found: dict[str, ServiceFound] = {}
    for convention in CONVENTIONS:
        probe = next((m for m in _request_metrics(convention) if m in names), None)
        if probe is None:
            continue
        for label, values in _labelled(client, convention, probe, since):
            for value in values:
                if value not in found and len(found) < MAX_SERVICES:
                    found[value] = ServiceFound(value, convention, label)
    return list(found.values())


def _request_metrics(convention: Convention) -> tuple[str, ...]:
    d = convention.duration
    return (convention.requests, f"{d}_count", f"{d}_bucket", f"{d}_sum", d)


def _labelled(
    client: PrometheusAPI, convention: Convention, metric: str, since: datetime
) -> list[tuple[str, list[str]]]:
    """(label, its values) for the convention's service labels, each over the series the earlier ones miss."""
    present = set(client.label_names(match=metric, since=since))
    chosen: list[tuple[str, list[str]]] = []
    for label in (candidate for candidate in convention.service_labels if candidate in present):
        missing = "".join(f',{earlier}=""' for earlier, _ in chosen)
        values = client.label_values(label, match=f'{{__name__="{metric}"{missing}}}', since=since)
        if values:
            chosen.append((label, sorted(values)))
    return chosen


def _read_service(client: PrometheusAPI, found: ServiceFound, since: datetime) -> None:
    """The catalogue entries one service can be read with, from the metric names its series have."""
    own = f'{found.label}="{found.name}"'
    names = set(client.label_values("__name__", match=f"{{{own}}}", since=since))
    convention = found.convention
    shape = _latency_shape(client, convention, names, own, since)
    if shape:
        promql, description = latency_template(convention, shape)
        found.entries["p99_latency"] = _entry(promql, convention.unit, description, "latency")
    else:
        found.notes.append(f"no {convention.duration} series: its latency is not measured")
    if convention.requests in names:
        found.entries["qps"] = _entry(traffic_template(convention), "rps", "requests per second", "traffic")
        status = _status_label(client, convention, own, since)
        if status:
            found.entries["error_rate"] = _entry(
                errors_template(convention, status), "ratio", f"share of requests failing (label {status})", "errors"
            )
        else:
            found.notes.append(f"{convention.requests} carries no status label: its error rate is not measured")
    for signal in SIGNALS:
        if signal.name not in found.entries and signal.metric in names and _has_label(client, signal, own, since):
            found.entries[signal.name] = _entry(signal.promql, signal.unit, signal.description, signal.role)


def _latency_shape(client: PrometheusAPI, convention: Convention, names: set[str], own: str, since: datetime) -> str:
    d = convention.duration
    if f"{d}_bucket" in names:
        return "histogram"
    if d in names and "quantile" in client.label_names(match=f"{d}{{{own}}}", since=since):
        return "summary"
    if f"{d}_max" in names:
        return "max"
    return "mean" if f"{d}_sum" in names and f"{d}_count" in names else ""


def _status_label(client: PrometheusAPI, convention: Convention, own: str, since: datetime) -> str:
    labels = set(client.label_names(match=f"{convention.requests}{{{own}}}", since=since))
    return next((label for label in convention.status_labels if label in labels), "")


def _has_label(client: PrometheusAPI, signal: Any, own: str, since: datetime) -> bool:
    if not signal.needs_label:
        return True
    return signal.needs_label in client.label_names(match=f"{signal.metric}{{{own}}}", since=since)


def _entry(promql: str, unit: str, description: str, role: str) -> Entry:
    return {"promql": promql, "unit": unit, "description": description, "role": role}


def catalogue_findings(services: Sequence[ServiceFound]) -> list[Finding]:
    """The global label and catalogue (the most common choice of each), then each service's own part."""
    labels = Counter(s.label for s in services)
    label = labels.most_common(1)[0][0]
    catalogue = _common_entries(services)
    findings = [Finding("prometheus.service_label", label, _label_evidence(services))]
    for name, entry in catalogue.items():
        users = [s for s in services if s.entries.get(name) == entry]
        evidence = f"{_listed([s.name for s in users])} ({users[0].convention.title}): {entry['description']}"
        findings.append(Finding(f"prometheus.metrics.{name}", entry, evidence))
    for found in services:
        findings += _own_findings(found, label, catalogue)
    return findings


def _common_entries(services: Sequence[ServiceFound]) -> dict[str, Entry]:
    """Per catalogue name, the template most services are read with (ties: the first service's)."""
    chosen: dict[str, Entry] = {}
    for name in dict.fromkeys(name for s in services for name in s.entries):
        templates = Counter(repr(s.entries[name]) for s in services if name in s.entries)
        best = templates.most_common(1)[0][0]
        chosen[name] = next(s.entries[name] for s in services if repr(s.entries.get(name)) == best)
    return chosen


def _own_findings(found: ServiceFound, label: str, catalogue: dict[str, Entry]) -> list[Finding]:
    prefix = f"prometheus.services.{setting_key(found.name)}"
    why = f"{found.name} follows {found.convention.title}"
    findings = []
    if found.label != label:
        findings.append(Finding(f"{prefix}.service_label", found.label, f"{why}; its series carry {found.label}"))
    for name, entry in found.entries.items():
        if entry != catalogue.get(name):
            findings.append(Finding(f"{prefix}.metrics.{name}", entry, f"{why}: {entry['description']}"))
    missing = [name for name in catalogue if name not in found.entries]
    if missing:
        raw = [m for name in missing if (m := raw_metric(catalogue[name]["promql"]))]
        notes = [*found.notes, *([f"no {', '.join(dict.fromkeys(raw))} series"] if raw else [])]
        findings.append(Finding(f"{prefix}.not_measured", missing, f"{found.name}: {'; '.join(notes)}"))
    return findings


def _label_evidence(services: Sequence[ServiceFound]) -> str:
    by_label: dict[str, list[ServiceFound]] = {}
    for found in services:
        by_label.setdefault(found.label, []).append(found)
    parts = []
    for label, group in sorted(by_label.items(), key=lambda item: -len(item[1])):
        conventions = ", ".join(dict.fromkeys(s.convention.title for s in group))
        parts.append(f"{label}: {_listed([s.name for s in group])} ({conventions})")
    return "; ".join(parts)


def _listed(names: Sequence[str]) -> str:
    shown = ", ".join(names[:MAX_LISTED]) + (", …" if len(names) > MAX_LISTED else "")
    return f"{len(names)} service{'s' * (len(names) != 1)} [{shown}]"


def _nothing_recognised(names: set[str]) -> Finding:
    known = ", ".join(c.requests for c in CONVENTIONS)
    histograms = sorted(n.removesuffix("_bucket") for n in names if n.endswith("_bucket"))
    seen = f"histograms seen: {', '.join(histograms[:8])}" if histograms else "no histogram is active"
    return Finding(
        "prometheus.metrics",
        None,
        seen,
        (f"no known request metric is active in the last hour (looked for {known}); write the catalogue yourself",),
    )
