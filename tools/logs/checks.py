"""What `opsbot doctor` checks of the logs settings against live data: meaning, not only reachability.

For the configured source: the index pattern matches indices; each configured field is in the mapping (with a "did
you mean" from the mapping's own names) and documents hold it; the timestamp is a date; the level values are levels
and the level filter finds every line the counts show; each service of the topology has logs (or a "did you mean"
from the services that do). Each check returns Findings (tools/discovery.py): a finding with problems fails doctor.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Sequence
from datetime import timedelta

from tools.base import ToolError
from tools.discovery import Finding, did_you_mean
from tools.elastic import es_request
from tools.logs.conventions import REQUIRED, SETTINGS, level_finding
from tools.logs.elastic import ElasticsearchLogs
from tools.logs.indices import has_service, pattern_for, resolved_names
from tools.logs.loki import LokiLogs
from tools.logs.mapping import IndexMapping, field_use, level_aggregation, level_counts, levels_filter
from tools.logs.model import LogFields, LogQuery, LogSource, level_from_text
from tools.logs.shape.structured import line_key_finding
from tools.logs.sqlite import SqliteLogs
from tools.timerange import utc_now

MAX_LISTED = 8
LINES_CHECKED = 200
# Every field setting with a default, discovery's and those it does not look for (the Kubernetes namespace): a
# default no document holds is said, never passed in silence.
CHECKED = {**SETTINGS, "namespace": "namespace_field"}
SERVICE_CUTOFF = 0.8  # difflib ratio: a transposition or a dropped letter in a 4-10 letter name is above it


def check_logs(source: LogSource, services: Sequence[str] = (), chosen: Collection[str] = ()) -> list[Finding]:
    """The meaning checks of whichever log source the settings build; `services` are the topology's, `chosen` the
    settings the user set (an optional field they set must be there; a default one that is not is only said)."""
    try:
        if isinstance(source, ElasticsearchLogs):
            return _with_line_key(source, source.fields, check_elasticsearch_logs(source, services, chosen))
        if isinstance(source, LokiLogs):
            return _with_line_key(source, source.fields, check_loki_logs(source, services))
        if isinstance(source, SqliteLogs):
            return _with_line_key(source, source.fields, check_sqlite_logs(source, services))
    except ToolError as exc:
        return [Finding("logs.backend", None, source.describe(), (f"{source.describe()}: {exc}",))]
    return [Finding("logs.backend", source.describe(), "not checked: no meaning checks for this source")]


def check_elasticsearch_logs(
    source: ElasticsearchLogs, services: Sequence[str], chosen: Collection[str] = ()
) -> list[Finding]:
    """Index pattern, fields, levels and services of an Elasticsearch log source."""
    pattern = _pattern(source)
    if pattern.problems:
        return [pattern]
    mapping = source.mappings.get()
    found = [pattern, *(_field(source, mapping, logical, chosen) for logical in CHECKED)]
    level = field_use(source.fields.level, mapping)
    if level.present:
        found.append(_levels(source))
    found.append(_services(source, services))
    return found


def check_loki_logs(source: LokiLogs, services: Sequence[str]) -> list[Finding]:
    """The service and level labels exist and hold values; the level values are levels; the services are there."""
    labels = source.labels()
    found = []
    for setting, label in (("loki.service_label", source.service_label), ("loki.level_label", source.level_label)):
        if label not in labels:
            problem = f"{setting} = {label!r} is no stream label of {source.url}{did_you_mean(label, labels)}"
            found.append(Finding(setting, label, f"labels: {', '.join(labels)}", (problem,)))
        elif setting == "loki.level_label":
            values = source.label_values(label)
            found.append(level_finding(setting, label, dict.fromkeys(values, 1), "the stream labels"))
        else:
            found.append(Finding(setting, label, f"{label}: {len(source.services())} services"))
    if not any(f.problems for f in found):
        known = source.services()
        found.append(_topology("loki.service_label", source.service_label, services, known))
    return found


def check_sqlite_logs(source: SqliteLogs, services: Sequence[str]) -> list[Finding]:
    """The store exists and holds lines; the level values are levels; the services are there."""
    import sqlite3
    from contextlib import closing

    if not source.path.exists():
        problem = f"logs.sqlite_path = {str(source.path)!r} does not exist (load logs with `opsbot logs ingest FILE`)"
        return [Finding("logs.sqlite_path", str(source.path), "no store", (problem,))]
    with closing(sqlite3.connect(f"file:{source.path}?mode=ro", uri=True)) as db:
        levels = dict(db.execute("SELECT level, count(*) FROM logs GROUP BY level").fetchall())
        by_service = dict(db.execute("SELECT service, count(*) FROM logs GROUP BY service").fetchall())
    lines = sum(levels.values())
    store = Finding("logs.sqlite_path", str(source.path), f"{lines:,} lines of {len(by_service)} services")
    if not lines:
        return [Finding(store.setting, store.value, store.evidence, ("the log store holds no lines",))]
    level = level_finding("logs.level_field", source.fields.level, levels, "the store")
    return [store, level, _topology("logs.service_field", source.fields.service, services, list(by_service))]


def _with_line_key(source: LogSource, fields: LogFields, found: list[Finding]) -> list[Finding]:
    """The findings, and the structured lines' check once the source itself checked out."""
    return found if any(f.problems for f in found) else [*found, line_key_check(source, fields)]


def line_key_check(source: LogSource, fields: LogFields) -> Finding:
    """The message key of structured lines (logs.line_message_key) against the newest lines of the last day."""
    end = utc_now()
    query = LogQuery(None, end - timedelta(days=1), end, limit=LINES_CHECKED, cluster_levels=(), cluster_sample=0)
    messages = [e.message for e in source.search(query).entries]
    return line_key_finding(messages, f"newest messages of {source.describe()}", fields.line_message)


def _pattern(source: ElasticsearchLogs) -> Finding:
    pattern = source.index_pattern
    names = resolved_names(source.client, pattern)
    if names:
        shown = ", ".join(n.name for n in names[:3]) + (", …" if len(names) > 3 else "")
        return Finding("logs.index_pattern", pattern, f"{len(names)} indices and data streams: {shown}")
    others = [n for n in resolved_names(source.client, "*") if not n.name.startswith(".")]
    choices = sorted({f"{n.family}-*" if n.kind != "single" else n.name for n in others})
    problem = f"logs.index_pattern = {pattern!r} matches no index or data stream{did_you_mean(pattern, choices)}"
    return Finding("logs.index_pattern", pattern, f"{len(others)} other indices in the cluster", (problem,))


def _field(source: ElasticsearchLogs, mapping: IndexMapping, logical: str, chosen: Collection[str] = ()) -> Finding:
    setting = f"logs.{CHECKED[logical]}"
    configured = getattr(source.fields, logical)
    use = field_use(configured, mapping)
    optional = logical not in REQUIRED and setting not in chosen
    if not configured and logical not in REQUIRED:
        return Finding(setting, configured, "set to '': not read")
    if not use.present:
        if logical == "service" and has_service(source.index_pattern):
            return Finding(setting, configured, "not in the mapping; services come from the index names")
        hint = did_you_mean(configured, mapping.names())
        if optional and not hint:
            return _default_unfilled(setting, configured, f"is not in the mapping of {source.index_pattern}")
        problem = f"{setting} = {configured!r} is not in the mapping of {source.index_pattern}{hint}"
        return Finding(setting, configured, f"{len(mapping.fields)} fields in the mapping", (problem,))
    mapped = mapping.field(configured)
    kind = mapped.describe() if mapped is not None else "unknown"
    held = _holding(source, use.source)
    evidence = f"{kind}; {held:,} documents hold it"
    if logical == "timestamp" and mapped is not None and not mapped.is_date:
        return Finding(setting, configured, evidence, (f"{setting} = {configured!r} is mapped {kind}, not as a date",))
    if not held and not optional:
        problem = f"{setting} = {configured!r} is in the mapping but no document of {source.index_pattern} holds it"
        return Finding(setting, configured, evidence, (problem,))
    if not held:
        return _default_unfilled(setting, configured, f"is in the mapping of {source.index_pattern} but in no document")
    return Finding(setting, configured, evidence)


def _default_unfilled(setting: str, value: str, where: str) -> Finding:
    """An optional field left at its default that the documents do not fill: said, with the fix (an answer then says
    the field was not checked), never passed in silence."""
    what = setting.removeprefix("logs.").removesuffix("_field").replace("_", " ")
    warning = (
        f"the default {where}: {what} is not checked in answers; set {setting} to the field that holds it, "
        f"or to '' to turn it off"
    )
    return Finding(setting, value, "", (), (warning,))


def _levels(source: ElasticsearchLogs) -> Finding:
    """The level values as written, and whether the level filter finds as many lines as the counts show."""
    index, use = pattern_for(source.index_pattern, None), field_use(source.fields.level, source.mapping())
    aggs = {"levels": level_aggregation(use)}
    reply = es_request("counting levels", lambda: source.client.search(index=index, size=0, aggs=aggs))
    counted = reply.get("aggregations", {}).get("levels", {})
    buckets = counted.get("buckets", [])
    as_written = {str(b["key"]): int(b["doc_count"]) for b in buckets} if isinstance(buckets, list) else {}
    by_level = level_counts(counted)
    finding = level_finding("logs.level_field", source.fields.level, as_written or by_level, f"all of {index}")
    misses = []
    for level, expected in by_level.items():
        got = _count(source, index, levels_filter(use, (level,))) if level_from_text(level) else expected
        if got < expected:
            misses.append(f"the {level} filter on logs.level_field finds {got:,} of {expected:,} {level} lines")
    return Finding(finding.setting, finding.value, finding.evidence, finding.problems + tuple(misses))


def _services(source: ElasticsearchLogs, services: Sequence[str]) -> Finding:
    try:
        known = source.services()
    except ToolError as exc:
        return Finding("logs.service_field", source.fields.service, "", (f"logs.service_field: {exc}",))
    return _topology("logs.service_field", source.fields.service, services, known)


def _topology(setting: str, value: str, services: Sequence[str], known: Sequence[str]) -> Finding:
    """Each topology service has logs; one that has none but is close to one that does is a problem."""
    missing = [s for s in services if s not in known]
    problems = tuple(
        f"service {s!r} has no logs under {setting} = {value!r} (did you mean {close[0]!r}?)"
        for s in missing
        if (close := _misspelt(s, known))
    )
    quiet = [s for s in missing if not _misspelt(s, known)]
    shown = ", ".join(sorted(known)[:MAX_LISTED]) + (", …" if len(known) > MAX_LISTED else "")
    evidence = f"{len(known)} services with logs: {shown}"
    if quiet:
        evidence += f"; no logs for {', '.join(quiet)} (not every service logs here)"
    return Finding(setting, value, evidence, problems)


def _misspelt(service: str, known: Sequence[str]) -> list[str]:
    """The service `service` is likely a misspelling of: stricter than field names, so `orders-db` (a database that
    logs elsewhere) is not taken for `order`, while `inventroy` and `ordr` are."""
    return difflib.get_close_matches(service, list(known), n=1, cutoff=SERVICE_CUTOFF)


def _holding(source: ElasticsearchLogs, name: str) -> int:
    return _count(source, pattern_for(source.index_pattern, None), {"exists": {"field": name}})


def _count(source: ElasticsearchLogs, index: str, query: dict[str, object]) -> int:
    reply = es_request("counting log lines", lambda: source.client.count(index=index, query=query))
    return int(reply["count"])
