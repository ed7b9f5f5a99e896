"""The log conventions opsbot recognises, and which document field holds each logical log field by them.

ECS (Elastic Common Schema, what Filebeat, Elastic Agent and the ecs-logging libraries write), the OpenTelemetry log
data model (as the collector's Elasticsearch exporter and most OTLP-to-JSON pipelines flatten it), and plain JSON or
logstash-logback-encoder lines, as candidate field names per logical field, best first. A team's documents are
matched against all three: a field counts only when documents hold a value in it (a mapping that lists a field no
document fills is not evidence); the convention that explains most fields wins, and a field it lacks may still come
from another (stacks mix them). Each choice is a Finding with its evidence; discovery over Elasticsearch, Loki's JSON
lines and JSON-lines files shares this.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tools.discovery import Finding
from tools.elastic import source_field
from tools.logs.mapping import IndexMapping
from tools.logs.model import LogFields, level_from_text

# logical field -> the Settings key in the logs section that names it
SETTINGS = {
    "timestamp": "timestamp_field",
    "service": "service_field",
    "level": "level_field",
    "message": "message_field",
    "error_type": "error_type_field",
    "stack_trace": "stack_field",
    "trace_id": "trace_field",
    "logger": "logger_field",
    "host": "host_field",
}
REQUIRED = ("timestamp", "service", "level", "message")


@dataclass(frozen=True)
class Convention:
    name: str
    fields: Mapping[str, tuple[str, ...]]  # logical field -> candidate names, best first


ECS = Convention(
    "ECS",
    {
        "timestamp": ("@timestamp",),
        "service": ("service.name",),
        "level": ("log.level",),
        "message": ("message",),
        "error_type": ("error.type",),
        "stack_trace": ("error.stack_trace",),
        "trace_id": ("trace.id",),
        "logger": ("log.logger",),
        "host": ("host.name", "host.hostname"),
    },
)
OPENTELEMETRY = Convention(
    "OpenTelemetry",
    {
        "timestamp": ("@timestamp", "timestamp", "observed_timestamp", "time_unix_nano"),
        "service": ("resource.service.name", "resource.attributes.service.name"),
        "level": ("severity_text",),
        "message": ("body", "body.text"),
        "error_type": ("attributes.exception.type", "exception.type"),
        "stack_trace": ("attributes.exception.stacktrace", "exception.stacktrace"),
        "trace_id": ("trace_id", "traceId"),
        "logger": ("scope.name", "instrumentation_scope.name", "attributes.code.namespace"),
        "host": ("resource.host.name", "resource.attributes.host.name"),
    },
)
PLAIN = Convention(
    "plain JSON",
    {
        "timestamp": ("@timestamp", "timestamp", "time", "ts", "date"),
        "service": ("service", "app", "application", "service_name", "app_name", "fields.service"),
        "level": ("level", "severity", "loglevel", "log_level", "lvl", "levelname"),
        "message": ("message", "msg", "log"),
        "error_type": ("error_type", "exception_class", "exception.class", "error.kind", "exc_type"),
        "stack_trace": ("stack_trace", "stacktrace", "exception", "stack", "exc_info"),
        "trace_id": ("trace_id", "traceId", "dd.trace_id"),
        "logger": ("logger", "logger_name", "name"),
        "host": ("host", "hostname", "HOSTNAME"),
    },
)
CONVENTIONS = (ECS, OPENTELEMETRY, PLAIN)  # a tie goes to the first

# Loki keeps service and level as stream labels; these are the names promtail, Alloy, the OTLP endpoint and
# Loki 3's level detection give them.
LOKI_SERVICE_LABELS = ("service", "service_name", "app", "application", "app_kubernetes_io_name", "job", "container")
LOKI_LEVEL_LABELS = ("level", "severity", "detected_level", "severity_text", "lvl", "loglevel")


def candidates(logical: str) -> list[str]:
    """Every convention's candidates for a logical field, in convention order, once each."""
    return list(dict.fromkeys(name for c in CONVENTIONS for name in c.fields.get(logical, ())))


SHOWN_VALUES = 6


@dataclass(frozen=True)
class Sample:
    """What discovery read: the mapping (None for JSON lines) and the newest documents."""

    docs: Sequence[dict[str, Any]]
    mapping: IndexMapping | None = None
    where: str = "documents"  # "newest documents of logs-*", for the evidence

    def held(self, name: str) -> int:
        """How many sampled documents hold a value in `name`."""
        return sum(1 for doc in self.docs if source_field(doc, name) not in (None, "", [], {}))

    def values(self, name: str) -> Counter[str]:
        return Counter(str(source_field(doc, name)) for doc in self.docs if source_field(doc, name) not in (None, ""))


def best_convention(sample: Sample) -> tuple[Convention, dict[str, str | None]]:
    """The convention that explains most logical fields, and the field chosen for each (None: not found)."""
    held = {name: sample.held(name) for logical in SETTINGS for name in candidates(logical)}

    def explained(convention: Convention) -> int:
        return sum(1 for names in convention.fields.values() if any(held.get(n) for n in names))

    best = max(CONVENTIONS, key=explained)  # max keeps the first of equals: ECS, then OpenTelemetry
    chosen: dict[str, str | None] = {}
    for logical in SETTINGS:
        order = [*best.fields.get(logical, ()), *candidates(logical)]
        chosen[logical] = next((name for name in order if held.get(name)), None)
    return best, chosen


def field_findings(sample: Sample, prefix: str = "logs") -> list[Finding]:
    """One Finding per logical field, each with the field's mapping, how many documents hold it, and what it holds."""
    convention, chosen = best_convention(sample)
    findings = []
    for logical, setting in SETTINGS.items():
        name = chosen[logical]
        if name is None:
            findings.append(_not_found(logical, f"{prefix}.{setting}", sample))
            continue
        kind = ""
        if sample.mapping is not None and (mapped := sample.mapping.field(name)) is not None:
            kind = f"{mapped.describe()}, "
        count = f"in {sample.held(name):,} of {len(sample.docs):,} {sample.where}"
        origin = "" if name in convention.fields.get(logical, ()) else ", outside the " + convention.name + " names"
        evidence = f"{name}: {kind}{count} ({convention.name}{origin})"
        findings.append(_with_values(Finding(f"{prefix}.{setting}", name, evidence), logical, sample))
    return findings


def level_finding(setting: str, name: str, values: Mapping[str, int], where: str, head: str = "") -> Finding:
    """The level field with its values as written and the levels they are read as; a problem when none is a level.
    `head` is the evidence for the field itself (its mapping, how many documents hold it)."""
    shown = ", ".join(f"{raw} {n:,}" for raw, n in sorted(values.items(), key=lambda i: -i[1])[:SHOWN_VALUES])
    known = sorted({lv for raw in values if (lv := level_from_text(raw))})
    unknown = [raw for raw in values if level_from_text(raw) is None]
    evidence = f"{head or name}; values as written in {where}: {shown or 'none'}"
    if known:
        evidence += f"; read in any case as {', '.join(known)}"
    if not known:
        problem = f"{setting} = {name!r} holds no known level (values: {', '.join(unknown[:SHOWN_VALUES]) or 'none'})"
        return Finding(setting, name, evidence, (problem,))
    if unknown:
        evidence += f"; not levels: {', '.join(unknown[:SHOWN_VALUES])}"
    return Finding(setting, name, evidence)


def listing(values: Mapping[str, int], limit: int = SHOWN_VALUES) -> str:
    """`order 2,100, payment 900, … (12 in all)`."""
    ranked = sorted(values.items(), key=lambda i: (-i[1], i[0]))
    more = f", … ({len(ranked)} in all)" if len(ranked) > limit else ""
    return ", ".join(f"{v} {n:,}" for v, n in ranked[:limit]) + more


def _with_values(finding: Finding, logical: str, sample: Sample) -> Finding:
    name = str(finding.value)
    if logical == "level":
        values = sample.values(name)
        return level_finding(finding.setting, name, values, f"{len(sample.docs):,} {sample.where}", finding.evidence)
    if logical in ("service", "error_type"):
        return Finding(finding.setting, name, f"{finding.evidence}; values: {listing(sample.values(name))}")
    return finding


def _not_found(logical: str, setting: str, sample: Sample) -> Finding:
    looked = ", ".join(candidates(logical))
    evidence = f"no field of the {len(sample.docs):,} {sample.where} holds it (looked for {looked})"
    problems = (f"{setting}: not found",) if logical in REQUIRED else ()
    return Finding(setting, None, evidence, problems)


def unmapped_note(fields: LogFields, mapping: IndexMapping | None, where: str) -> list[str]:
    """The optional fields a search cannot show because the mapping lacks them, each with its setting, as one note
    for query_logs' "not checked:" line ([] when every one is there, or the mapping could not be read)."""
    if mapping is None:
        return []
    missing = [
        f"{logical.replace('_', ' ')} (logs.{key} {name!r})"
        for logical, key in SETTINGS.items()
        if logical not in REQUIRED and (name := getattr(fields, logical)) and mapping.field(name) is None
    ]
    return [f"{', '.join(missing)}: in no document of {where} (not in its mapping)"] if missing else []
