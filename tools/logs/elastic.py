"""ElasticsearchLogs: log search over an Elasticsearch (or OpenSearch-compatible) index pattern.

Filters (service, time, level) are exact `term`/`range` clauses. Search text goes through
`simple_query_string`, which never fails on syntax, and every term is quoted with its specials escaped.
Counts by level come from an aggregation, with the level filter as a post_filter so they show the whole mix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from tools.elastic import es_request, field_values, source_field
from tools.logs.model import LogEntry, LogQuery, LogResult, SearchText
from tools.timerange import iso_z

if TYPE_CHECKING:  # imported where the client is built (bot/wiring/elastic.py)
    from elasticsearch import Elasticsearch

_SQS_SPECIAL = re.compile(r'([+\-|"*()~\\<>=&!{}\[\]^:/?])')


@dataclass(frozen=True)
class LogFields:
    """Field names in the index; defaults match ECS-like JSON logs."""

    timestamp: str = "@timestamp"
    service: str = "service"
    level: str = "level"
    message: str = "message"
    stack_trace: str = "stack_trace"
    trace_id: str = "trace_id"
    logger: str = "logger"
    host: str = "host"


class ElasticsearchLogs:
    """A LogSource over `index_pattern` (e.g. `logs-*`)."""

    def __init__(self, client: Elasticsearch, index_pattern: str = "logs-*", fields: LogFields | None = None) -> None:
        self.client = client
        self.index_pattern = index_pattern
        self.fields = fields or LogFields()

    def describe(self) -> str:
        """Where the logs come from."""
        return f"Elasticsearch index {self.index_pattern}"

    def services(self) -> list[str]:
        """Every service value in the index (terms aggregation)."""
        return field_values(self.client, self.index_pattern, self.fields.service)

    def search(self, query: LogQuery) -> LogResult:
        """Counts by level, the newest matching lines and a sample at the cluster levels (two requests)."""
        f = self.fields
        base = self._query(query)
        main = es_request(
            "searching logs",
            lambda: self.client.search(
                index=self.index_pattern,
                query=base,
                post_filter=_levels_filter(f.level, query.levels),
                aggs={"levels": {"terms": {"field": f.level, "size": 20}}},
                sort=[{f.timestamp: {"order": "desc"}}],
                size=query.limit,
                track_total_hits=True,
            ),
        )
        cluster = es_request(
            "sampling error lines",
            lambda: self.client.search(
                index=self.index_pattern,
                query={"bool": {"filter": [base, _levels_filter(f.level, query.cluster_levels)]}},
                sort=[{f.timestamp: {"order": "desc"}}],
                size=query.cluster_sample,
                track_total_hits=True,
            ),
        )
        buckets = main.get("aggregations", {}).get("levels", {}).get("buckets", [])
        counts = {str(b["key"]).upper(): int(b["doc_count"]) for b in buckets}
        return LogResult(
            counts,
            _total(main),
            tuple(self._entry(h["_source"]) for h in main["hits"]["hits"]),
            _total(cluster),
            tuple(self._entry(h["_source"]) for h in cluster["hits"]["hits"]),
        )

    def _query(self, query: LogQuery) -> dict[str, Any]:
        f = self.fields
        time_range = {"gte": iso_z(query.start), "lt": iso_z(query.end), "format": "strict_date_optional_time"}
        filters: list[dict[str, Any]] = [{"range": {f.timestamp: time_range}}]
        if query.service is not None:
            filters.append({"term": {f.service: query.service}})
        must = []
        if query.text.terms:
            must.append(
                {
                    "simple_query_string": {
                        "query": simple_query_from_terms(query.text),
                        "fields": [f.message, f.stack_trace, f.logger],
                        "default_operator": "or" if query.text.any_of else "and",
                        "flags": "PHRASE|PREFIX|WHITESPACE",
                    }
                }
            )
        return {"bool": {"filter": filters, "must": must}}

    def _entry(self, source: dict[str, Any]) -> LogEntry:
        f = self.fields

        def text(name: str) -> str:
            value = source_field(source, name)
            return "" if value is None else str(value)

        moment = datetime.fromisoformat(text(f.timestamp))
        moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
        return LogEntry(
            moment,
            text(f.service),
            text(f.level).upper(),
            text(f.message),
            text(f.logger),
            text(f.host),
            text(f.trace_id),
            text(f.stack_trace),
        )


def simple_query_from_terms(text: SearchText) -> str:
    """`"quoted phrase" prefix*`: phrases with `"` and `\\` escaped, prefixes reduced to one word."""
    parts = []
    for term in text.terms:
        if term.prefix:
            parts.append(_SQS_SPECIAL.sub(r"\\\1", term.text) + "*")
        else:
            parts.append('"' + term.text.replace("\\", "\\\\").replace('"', '\\"') + '"')
    return " ".join(parts)


def _levels_filter(field: str, levels: tuple[str, ...]) -> dict[str, Any]:
    return {"terms": {field: list(levels)}} if levels else {"match_all": {}}


def _total(reply: Any) -> int:
    total = reply["hits"]["total"]
    return int(total["value"] if isinstance(total, dict) else total)
