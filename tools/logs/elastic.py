"""ElasticsearchLogs: log search over an Elasticsearch (or OpenSearch-compatible) index pattern.

The index pattern may name the service (`logs-{service}-*`): one service's search then reads only its indices, and
the services are read from the index names when the documents carry no service field. How each field is filtered
comes from the mapping (tools/logs/mapping.py): a keyword field or a text field's keyword
sub-field gets exact terms, levels match in any case and under any alias, a text-only field is matched. Search text
goes through `simple_query_string`, which never fails on syntax, with every term quoted and its specials escaped.
Counts by level (and by error type) come from aggregations, with the level filter as a post_filter so they show the
whole mix.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tools.base import ToolError
from tools.elastic import es_request, field_values, source_field
from tools.logs.conventions import unmapped_note
from tools.logs.counting.aggregations import key_aggs, key_counts_from, level_histogram_aggs, level_histogram_from
from tools.logs.documents import other_fields
from tools.logs.indices import has_service, index_name, pattern_for, resolved_names, service_of
from tools.logs.mapping import (
    FieldUse,
    IndexMapping,
    MappingCache,
    bucket_counts,
    error_type_aggregation,
    field_use,
    level_aggregation,
    level_counts,
    levels_filter,
    values_filter,
)
from tools.logs.model import (
    Frame,
    KeyCounts,
    LogEntry,
    LogFields,
    LogQuery,
    LogResult,
    Prepare,
    Probe,
    SearchText,
    level_from_text,
)
from tools.timerange import iso_z, moment_from_value

if TYPE_CHECKING:  # imported where the client is built (bot/wiring/elastic.py)
    from elasticsearch import Elasticsearch

_SQS_SPECIAL = re.compile(r'([+\-|"*()~\\<>=&!{}\[\]^:/?])')


@dataclass(frozen=True)
class FieldPlan:
    """How this index pattern's mapping lets each filtered field be used."""

    service: FieldUse
    level: FieldUse
    error_type: FieldUse
    namespace: FieldUse


class ElasticsearchLogs:
    """A LogSource over `index_pattern` (e.g. `logs-*`, `logs-{service}-*`)."""

    def __init__(
        self,
        client: Elasticsearch,
        index_pattern: str = "logs-*",
        fields: LogFields | None = None,
        *,
        mapping_ttl_s: float = 300.0,
    ) -> None:
        self.client = client
        self.index_pattern = index_pattern
        self.fields = fields or LogFields()
        self.mappings = MappingCache(client, pattern_for(index_pattern, None), mapping_ttl_s)

    def describe(self) -> str:
        """Where the logs come from."""
        return f"Elasticsearch index {self.index_pattern}"

    def mapping(self) -> IndexMapping | None:
        """The pattern's mapping, or None when the cluster does not let it be read (the names are then used as
        configured, exactly as before mappings were read)."""
        try:
            return self.mappings.get()
        except ToolError:
            return None

    def plan(self) -> FieldPlan:
        mapping, f = self.mapping(), self.fields
        return FieldPlan(
            field_use(f.service, mapping),
            field_use(f.level, mapping),
            field_use(f.error_type, mapping),
            field_use(f.namespace, mapping),
        )

    def services(self) -> list[str]:
        """Every service: the service field's values, or with a `{service}` pattern and no such field, index names."""
        use = self.plan().service
        if has_service(self.index_pattern) and not (use.present and use.exact):
            return sorted({s for s in self._services_by_index().values() if s})
        if not use.present:
            raise ToolError(f"the service field {use.source!r} is not in the mapping of {self.index_pattern}.")
        if not use.exact:
            raise ToolError(
                f"the service field {use.source!r} of {self.index_pattern} is text without a keyword sub-field, "
                "so its values cannot be listed; configure its keyword form or a pattern with {service}."
            )
        return field_values(self.client, pattern_for(self.index_pattern, None), use.exact)

    def search(self, query: LogQuery) -> LogResult:
        """Counts by level and error type, the newest matching lines and a sample at the cluster levels."""
        plan = self.plan()
        index, base = self._index(query.service, plan), self._query(query, plan)
        aggs = {"levels": level_aggregation(plan.level)}
        errors = error_type_aggregation(plan.error_type)
        if errors is not None:
            aggs["errors"] = errors
        main = self._search("searching logs", index, base, query.limit, levels_filter(plan.level, query.levels), aggs)
        cluster_query = {"bool": {"filter": [base, levels_filter(plan.level, query.cluster_levels)]}}
        cluster = self._search("sampling error lines", index, cluster_query, query.cluster_sample)
        oldest = self._oldest(index, cluster_query, query.oldest_sample)
        found = main.get("aggregations", {})
        return LogResult(
            level_counts(found.get("levels", {})),
            _total(main),
            tuple(self._entry(h, plan) for h in main["hits"]["hits"]),
            _total(cluster),
            tuple(self._entry(h, plan) for h in cluster["hits"]["hits"]),
            bucket_counts(found.get("errors")),
            self._notes(plan, query),
            tuple(self._entry(h, plan) for h in oldest),
        )

    def histogram(self, query: LogQuery, frame: Frame) -> dict[str, tuple[int, ...]]:
        """Lines per bucket by level: a date_histogram with the level counts inside, over the whole window."""
        plan = self.plan()
        aggs = level_histogram_aggs(self.fields.timestamp, plan.level, frame)
        reply = self._aggregate("counting lines per bucket", query, plan, self._query(query, plan), aggs)
        return level_histogram_from(reply, frame)

    def count_keys(
        self, query: LogQuery, probes: Sequence[Probe], frame: Frame, prepare: Prepare | None = None
    ) -> KeyCounts:
        """Each probe's lines at the cluster levels: count, first/last seen and buckets, matched by its phrases."""
        usable = [p for p in probes if p.phrases]
        if not usable:
            return KeyCounts({}, exact=False)
        plan = self.plan()
        scope = {"bool": {"filter": [self._query(query, plan), levels_filter(plan.level, query.cluster_levels)]}}
        aggs = key_aggs(usable, self.fields.message, self.fields.timestamp, frame)
        reply = self._aggregate("counting signatures", query, plan, scope, aggs)
        return KeyCounts(key_counts_from(reply, usable, frame), exact=False)

    def _aggregate(
        self, what: str, query: LogQuery, plan: FieldPlan, scope: dict[str, Any], aggs: dict[str, Any]
    ) -> Any:
        index = self._index(query.service, plan)
        return es_request(what, lambda: self.client.search(index=index, query=scope, size=0, aggs=aggs))

    def _oldest(self, index: str, query: dict[str, Any], size: int) -> list[Any]:
        if size <= 0:
            return []
        reply = es_request(
            "sampling the oldest lines",
            lambda: self.client.search(
                index=index, query=query, sort=[{self.fields.timestamp: {"order": "asc"}}], size=size
            ),
        )
        return list(reply["hits"]["hits"])

    def _notes(self, plan: FieldPlan, query: LogQuery) -> tuple[str, ...]:
        notes = []
        if not plan.level.present:
            notes.append(
                f"the level field {plan.level.source!r} is not in the mapping of {self.index_pattern}, "
                "so no line has a level: the counts by level and any level filter are empty."
            )
        if query.namespace and not plan.namespace.present:
            notes.append(
                f"the namespace field {plan.namespace.source!r} is not in the mapping of {self.index_pattern}: "
                f"namespace {query.namespace} was matched as a word of the message."
            )
        notes += [
            f"{name} is not a field of {self.index_pattern}: {name}={value} was matched as those words in the message."
            for name, value in query.where
            if not self._mapped(name)
        ]
        return tuple(notes + unmapped_note(self.fields, self.mapping(), self.index_pattern))

    def _mapped(self, name: str) -> bool:
        mapping = self.mapping()
        return mapping is None or mapping.field(name) is not None

    def _search(
        self,
        what: str,
        index: str,
        query: dict[str, Any],
        size: int,
        post_filter: dict[str, Any] | None = None,
        aggs: dict[str, Any] | None = None,
    ) -> Any:
        extra: dict[str, Any] = {"post_filter": post_filter, "aggs": aggs} if aggs is not None else {}
        return es_request(
            what,
            lambda: self.client.search(
                index=index,
                query=query,
                sort=[{self.fields.timestamp: {"order": "desc"}}],
                size=size,
                track_total_hits=True,
                **extra,
            ),
        )

    def _index(self, service: str | None, plan: FieldPlan) -> str:
        """The pattern to search; a service known only by its index names gets exactly its own indices."""
        if service is None or not has_service(self.index_pattern) or (plan.service.present and plan.service.exact):
            return pattern_for(self.index_pattern, service)
        own = [name for name, owner in self._services_by_index().items() if owner == service]
        return ",".join(own) if own else pattern_for(self.index_pattern, service)

    def _services_by_index(self) -> dict[str, str | None]:
        names = resolved_names(self.client, self.index_pattern)
        return {n.name: service_of(n, self.index_pattern) for n in names}

    def _query(self, query: LogQuery, plan: FieldPlan) -> dict[str, Any]:
        f = self.fields
        time_range = {"gte": iso_z(query.start), "lt": iso_z(query.end), "format": "strict_date_optional_time"}
        filters: list[dict[str, Any]] = [{"range": {f.timestamp: time_range}}]
        if query.service is not None and (plan.service.present or not has_service(self.index_pattern)):
            filters.append(values_filter(plan.service, [query.service]))
        if query.namespace:
            filters.append(self._field_filter(plan.namespace, query.namespace))
        for name, value in query.where:
            filters.append(self._field_filter(field_use(name, self.mapping()), value, name))
        if query.trace_id:
            filters.append(self._trace_filter(query.trace_id))
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

    def _field_filter(self, use: FieldUse, value: str, name: str = "") -> dict[str, Any]:
        """The field holds `value`; a field the mapping lacks (inside a structured line's text) is matched as the
        name and value as words of the message (`status 503` finds `"status": 503` and `status=503`)."""
        if use.present:
            return values_filter(use, [value])
        words = f"{name} {value}" if name else value
        return {"match_phrase": {self.fields.message: words}}

    def _trace_filter(self, trace_id: str) -> dict[str, Any]:
        """The trace field holds the id, or the message carries it (a database line's `trace=` comment)."""
        use = field_use(self.fields.trace_id, self.mapping())
        clauses: list[dict[str, Any]] = [{"match_phrase": {self.fields.message: trace_id}}]
        if use.present:
            clauses.insert(0, values_filter(use, [trace_id]))
        return {"bool": {"should": clauses, "minimum_should_match": 1}}

    def _entry(self, hit: dict[str, Any], plan: FieldPlan) -> LogEntry:
        f, source = self.fields, hit["_source"]

        def text(name: str) -> str:
            value = source_field(source, name.removesuffix(".keyword"))
            return "" if value is None else str(value)

        raw_level = text(plan.level.source)
        service = text(plan.service.source) or service_of(index_name(str(hit.get("_index", ""))), self.index_pattern)
        return LogEntry(
            moment_from_value(source_field(source, f.timestamp)),
            service or "",
            level_from_text(raw_level) or raw_level.upper(),
            text(f.message),
            text(f.logger),
            text(f.host),
            text(f.trace_id),
            text(f.stack_trace),
            text(plan.error_type.source),
            text(plan.namespace.source),
            other_fields(source, f),
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


def _total(reply: Any) -> int:
    total = reply["hits"]["total"]
    return int(total["value"] if isinstance(total, dict) else total)
