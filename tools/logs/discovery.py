"""discover_logs: where a team's logs are and how they are shaped, each choice with its evidence (`opsbot init`).

Elasticsearch: the index pattern from the index names (daily indices of several services -> `logs-{service}-*`,
data streams and single indices -> their common prefix), then each field from the mapping and the newest documents
(tools/logs/conventions.py over ECS, OpenTelemetry and plain JSON), the level field's values as written over the
whole pattern, and the services. Loki: the stream labels that name the service and the level, and the fields of the
JSON lines. JSON-lines files (the SQLite store): the fields of their documents. Nothing is guessed silently: what was
not found is a Finding without a value that says where it looked.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from tools.discovery import Finding
from tools.elastic import es_request, source_field
from tools.logs.conventions import (
    LOKI_LEVEL_LABELS,
    LOKI_SERVICE_LABELS,
    SETTINGS,
    Sample,
    candidates,
    field_findings,
    level_finding,
    listing,
)
from tools.logs.indices import IndexName, has_service, pattern_for, resolved_names, service_of
from tools.logs.loki import LokiLogs
from tools.logs.mapping import IndexMapping, MappingCache, bucket_counts, field_use
from tools.logs.shape.structured import line_key_finding
from tools.timerange import utc_now

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

SAMPLE_DOCS = 500
LOKI_SAMPLE_HOURS = 24


def discover_logs(client: Elasticsearch, index_pattern: str = "") -> list[Finding]:
    """Elasticsearch: backend, index pattern and every field, with evidence; `index_pattern` narrows the search."""
    names = [n for n in resolved_names(client, index_pattern or "*") if not n.name.startswith(".")]
    pattern = pattern_finding(names, index_pattern)
    backend = Finding("logs.backend", "elasticsearch", f"{len(names)} indices and data streams")
    if pattern.value is None:
        return [backend, pattern]
    searched = pattern_for(str(pattern.value), None)
    mapping = MappingCache(client, searched).get()
    timestamp = next((n for n in candidates("timestamp") if (f := mapping.field(n)) and f.is_date), "")
    sample = Sample(_newest(client, searched, timestamp), mapping, f"newest documents of {searched}")
    fields = {f.setting: f for f in field_findings(sample)}
    level, service = fields["logs.level_field"], fields["logs.service_field"]
    if level.value is not None and (values := _values(client, searched, mapping, str(level.value))) is not None:
        head = str(level.evidence).split("; values as written")[0]
        fields[level.setting] = level_finding(level.setting, str(level.value), values, f"all of {searched}", head)
    services = _values(client, searched, mapping, str(service.value)) if service.value is not None else None
    if services is not None:
        head = str(service.evidence).split("; values: ")[0]
        fields[service.setting] = Finding(
            service.setting,
            service.value,
            f"{head}; {len(services)} service{'' if len(services) == 1 else 's'}: {listing(services)}",
        )
    lines = line_key_finding(_messages(sample.docs, fields["logs.message_field"]), f"messages of {sample.where}")
    return [backend, _pattern_checked(pattern, names, service, services or {}), *fields.values(), lines]


def discover_loki_logs(loki: LokiLogs) -> list[Finding]:
    """Loki: the service and level labels (with their values) and the fields of the JSON lines."""
    labels = loki.labels()
    service = _label_finding(loki, "loki.service_label", labels, LOKI_SERVICE_LABELS, "services")
    level = _label_finding(loki, "loki.level_label", labels, LOKI_LEVEL_LABELS, "levels")
    found = [Finding("logs.backend", "loki", f"{len(labels)} stream labels: {', '.join(labels)}"), service, level]
    if service.value is None:
        return found
    end = utc_now()
    raw = loki.newest_lines(str(service.value), end - timedelta(hours=LOKI_SAMPLE_HOURS), end, SAMPLE_DOCS)
    docs = [doc for _, line in raw if isinstance(doc := _json(line), dict)]
    if not docs:  # a plain or logfmt line: its message key is read from the line itself
        plain = Finding("logs.message_field", None, f"the {len(raw)} newest lines are plain text, not JSON")
        return [*found, plain, line_key_finding([line for _, line in raw], "newest lines")]
    body = Sample(docs, where=f"newest JSON lines of the last {LOKI_SAMPLE_HOURS} h")
    keep = ("message", "error_type", "stack_trace", "trace_id", "logger", "host")
    fields = [f for f in field_findings(body) if f.setting in {f"logs.{SETTINGS[k]}" for k in keep}]
    message = next((f for f in fields if f.setting == "logs.message_field"), None)
    return found + fields + [line_key_finding(_messages(docs, message), f"messages of the {body.where}")]


def discover_log_lines(lines: Iterable[str], where: str = "lines") -> list[Finding]:
    """A file of JSON lines (for the SQLite store): every field, from the documents alone."""
    docs = [doc for line in lines if isinstance(doc := _json(line), dict)]
    fields = field_findings(Sample(docs, where=where))
    message = next((f for f in fields if f.setting == "logs.message_field"), None)
    return [*fields, line_key_finding(_messages(docs, message), f"messages of the {where}")]


def _messages(docs: Sequence[dict[str, Any]], message: Finding | None) -> list[str]:
    """The message field's text in each document that has one."""
    if message is None or message.value is None:
        return []
    return [str(text) for doc in docs if isinstance(text := source_field(doc, str(message.value)), str) and text]


def pattern_finding(names: Sequence[IndexName], hint: str = "") -> Finding:
    """The index pattern: `<prefix>{service}-*` when dated indices or data streams of several services share a
    prefix, else the prefix of the log indices; the evidence names what the pattern covers."""
    logs = [n for n in names if "log" in n.family.lower()] or list(names)
    if not logs:
        where = f" matching {hint}" if hint else ""
        return Finding("logs.index_pattern", None, f"no index or data stream{where}", ("no log index found",))
    families = sorted({n.family for n in logs})
    kinds = ", ".join(f"{sum(n.kind == k for n in logs)} {k}" for k in sorted({n.kind for n in logs}))
    prefix = _dash_prefix(families)
    examples = ", ".join(n.name for n in logs[:3]) + (", …" if len(logs) > 3 else "")
    if len(families) > 1 and prefix and all(f != prefix.rstrip("-") for f in families):
        services = ", ".join(f.removeprefix(prefix) for f in families[:8])
        evidence = (
            f"{len(logs)} indices ({kinds}) in {len(families)} families {prefix}<service>: {services}; {examples}"
        )
        return Finding("logs.index_pattern", f"{prefix}{{service}}-*", evidence)
    return Finding(
        "logs.index_pattern", _covering(logs, families, prefix), f"{len(logs)} indices ({kinds}): {examples}"
    )


def _covering(logs: Sequence[IndexName], families: Sequence[str], prefix: str) -> str:
    """A pattern over every log index: their shared prefix, one family's dated indices, or the one index."""
    if len(families) > 1:
        return f"{prefix}*"
    return f"{families[0]}-*" if logs[0].kind != "single" else logs[0].name


def _pattern_checked(
    pattern: Finding, names: Sequence[IndexName], service: Finding, services: dict[str, int]
) -> Finding:
    """A `{service}` pattern is kept when the documents name no service or the index names are their services."""
    value = str(pattern.value)
    if not has_service(value) or service.value is None:
        return pattern
    from_names = {s for n in names if (s := service_of(n, value))}
    if from_names & set(services):
        return Finding(pattern.setting, value, f"{pattern.evidence}; the index names are {service.value} values")
    plain = value.replace("{service}", "*")
    why = f"the index names ({', '.join(sorted(from_names)[:4])}) are not {service.value} values, so not {{service}}"
    return Finding(pattern.setting, plain, f"{pattern.evidence}; {why}")


def _values(client: Elasticsearch, index: str, mapping: IndexMapping, name: str) -> dict[str, int] | None:
    """A field's values counted over the whole pattern (a sample of the newest documents may miss a rare level);
    None when the field has no exact form to count by (the sample's values stand)."""
    use = field_use(name, mapping)
    if not use.exact:
        return None
    aggs = {"values": {"terms": {"field": use.exact, "size": 50}}}
    reply = es_request(f"counting {use.exact}", lambda: client.search(index=index, size=0, aggs=aggs))
    return bucket_counts(reply.get("aggregations", {}).get("values"))


def _label_finding(loki: LokiLogs, setting: str, labels: Sequence[str], wanted: Sequence[str], what: str) -> Finding:
    name = next((label for label in wanted if label in labels), None)
    if name is None:
        looked = ", ".join(wanted)
        return Finding(
            setting, None, f"no stream label names the {what} (looked for {looked})", (f"{setting}: not found",)
        )
    values = loki.label_values(name)
    if setting == "loki.level_label":
        return level_finding(setting, name, dict.fromkeys(values, 1), "the stream labels")
    return Finding(setting, name, f"{name}: {len(values)} {what} ({', '.join(values[:8])})")


def _newest(client: Elasticsearch, index: str, timestamp: str) -> list[dict[str, Any]]:
    sort = [{timestamp: {"order": "desc"}}] if timestamp else None
    reply = es_request(
        f"sampling {index}", lambda: client.search(index=index, size=SAMPLE_DOCS, sort=sort, query={"match_all": {}})
    )
    return [hit["_source"] for hit in reply["hits"]["hits"]]


def _dash_prefix(families: Sequence[str]) -> str:
    """The common prefix of the families, cut after its last dash (`logs-order`, `logs-orders` -> `logs-`)."""
    first, last = min(families), max(families)  # the common prefix of all is that of the extremes
    common = next((first[:i] for i, (a, b) in enumerate(zip(first, last, strict=False)) if a != b), first)
    return common[: common.rfind("-") + 1]


def _json(line: str) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None
