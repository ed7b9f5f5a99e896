"""What an Elasticsearch mapping says about each log field: its type, and the field a filter or aggregation must use.

A string field is mapped `keyword` (exact), `text` (analysed: a `term` on it compares with lower-cased tokens and a
terms aggregation is refused), or, as dynamic mapping does by default, `text` with a `keyword` sub-field
(`service.keyword`). Filters and aggregations must use the exact form, while `_source` holds the value under the
parent's name. Reading both from the mapping lets a team configure either name (`service` or `service.keyword`)
and keeps a text field from answering silently wrong. Indices of one pattern may disagree (a daily index created
before a template changed): the field then says so, and the exact form most of them share is used.

The clauses follow from that: a field with an exact form gets `term` clauses, and levels are matched with
`case_insensitive` terms over every name a logger gives the level (ERROR, err, Error, SEVERE ...), so `error`,
`Error` and `ERROR` documents are one level; a text field without one gets `match` clauses, which compare analysed
(lower-cased) words, and per-level `filters` counts instead of a terms aggregation (refused on text).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tools.elastic import es_request
from tools.logs.model import LEVELS, level_from_text, level_names

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

EXACT_TYPES = frozenset({"keyword", "constant_keyword", "wildcard", "ip", "boolean"})
TEXT_TYPES = frozenset({"text", "match_only_text"})
DATE_TYPES = frozenset({"date", "date_nanos"})
NUMBER_TYPES = frozenset({"long", "integer", "short", "byte", "double", "float", "half_float", "scaled_float"})


@dataclass(frozen=True)
class MappedField:
    """One field of an index pattern: its name in `_source`, the types the indices give it, its exact form."""

    name: str
    types: tuple[str, ...]  # one type, unless the pattern's indices disagree
    exact: str  # the field term/terms/aggregations use: name (keyword), name.keyword (text + sub-field), "" none
    indices: int = 1  # how many of the pattern's indices map it

    @property
    def is_text(self) -> bool:
        return any(t in TEXT_TYPES for t in self.types)

    @property
    def is_date(self) -> bool:
        return any(t in DATE_TYPES for t in self.types)

    def describe(self) -> str:
        """`keyword`, `text, filtered on service.keyword`, `text without a keyword sub-field`, or the types
        the indices disagree on."""
        if len(self.types) > 1:
            return "mapped as " + " and ".join(self.types) + " in different indices"
        if self.is_text and self.exact:
            return f"text, filtered on {self.exact}"
        if self.is_text:
            return "text without a keyword sub-field (matched, not filtered exactly; no counts by value)"
        return self.types[0] if self.types else "unknown"


@dataclass(frozen=True)
class IndexMapping:
    """The fields of every index a pattern matches."""

    indices: tuple[str, ...]
    fields: Mapping[str, MappedField]

    def field(self, configured: str) -> MappedField | None:
        """The field a configured name means: `service` or its sub-field `service.keyword` (read from `service`)."""
        if configured in self.fields:
            return self.fields[configured]
        parent = configured.rpartition(".")[0]
        found = self.fields.get(parent)
        if found is not None and found.exact == configured:
            return found
        return None

    def names(self) -> list[str]:
        return sorted(self.fields)


def mapping_from_reply(reply: Mapping[str, Any]) -> IndexMapping:
    """An IndexMapping from a `GET <pattern>/_mapping` reply."""
    seen: dict[str, list[tuple[str, str]]] = {}  # name -> (type, exact) per index
    for body in reply.values():
        properties = (body.get("mappings") or {}).get("properties") or {}
        for name, kind, exact in _flatten(properties, ""):
            seen.setdefault(name, []).append((kind, exact))
    fields = {name: _merged(name, forms) for name, forms in seen.items()}
    return IndexMapping(tuple(sorted(reply)), fields)


def _flatten(properties: Mapping[str, Any], prefix: str) -> Iterator[tuple[str, str, str]]:
    for key, spec in properties.items():
        name = f"{prefix}{key}"
        if "properties" in spec:
            yield from _flatten(spec["properties"], name + ".")
            continue
        kind = str(spec.get("type", "object"))
        if kind in ("object", "nested", "alias"):
            continue
        yield name, kind, _exact(name, kind, spec.get("fields") or {})


def _exact(name: str, kind: str, subfields: Mapping[str, Any]) -> str:
    if kind in EXACT_TYPES or kind in DATE_TYPES or kind in NUMBER_TYPES:
        return name
    keyword = sorted((sub for sub, spec in subfields.items() if spec.get("type") in EXACT_TYPES), key=_keyword_first)
    return f"{name}.{keyword[0]}" if keyword else ""


def _keyword_first(sub: str) -> tuple[bool, str]:
    return (sub != "keyword", sub)


def _merged(name: str, forms: list[tuple[str, str]]) -> MappedField:
    types = tuple(dict.fromkeys(kind for kind, _ in forms))
    exacts = Counter(exact for _, exact in forms if exact)
    exact = exacts.most_common(1)[0][0] if exacts else ""
    return MappedField(name, types, exact, len(forms))


class MappingCache:
    """The mapping of one index pattern, read on first use and again after `ttl_s` (daily indices appear)."""

    def __init__(self, client: Elasticsearch, pattern: str, ttl_s: float = 300.0) -> None:
        self.client, self.pattern, self.ttl_s = client, pattern, ttl_s
        self._value: tuple[float, IndexMapping] | None = None
        self._lock = threading.Lock()

    def get(self) -> IndexMapping:
        """The mapping; a cluster that refuses the request (no view_index_metadata privilege) raises ToolError."""
        with self._lock:
            if self._value and time.monotonic() - self._value[0] < self.ttl_s:
                return self._value[1]
        reply = es_request(
            f"reading the mapping of {self.pattern}",
            lambda: self.client.indices.get_mapping(index=self.pattern, allow_no_indices=True, ignore_unavailable=True),
        )
        mapping = mapping_from_reply(dict(reply))
        with self._lock:
            self._value = (time.monotonic(), mapping)
        return mapping


MAX_ERROR_TYPES = 10


@dataclass(frozen=True)
class FieldUse:
    """Where `_source` holds a field, and the field a filter or aggregation uses ("" = none: match the text)."""

    source: str
    exact: str
    present: bool = True  # False: the mapping does not have it (or could not be read)


def field_use(configured: str, mapping: IndexMapping | None) -> FieldUse:
    """How to read and filter a configured field; without a mapping the configured name is taken as exact."""
    parent = configured.removesuffix(".keyword")
    if mapping is None:
        return FieldUse(parent, configured, present=True)
    found = mapping.field(configured)
    if found is None:
        return FieldUse(parent, configured, present=False)
    return FieldUse(found.name, found.exact)


def values_filter(use: FieldUse, values: Iterable[str]) -> dict[str, Any]:
    """Documents whose field holds one of `values` exactly (or, on a text field, as a phrase)."""
    wanted = list(values)
    if use.exact:
        return {"terms": {use.exact: wanted}}
    return _any_of([{"match_phrase": {use.source: value}} for value in wanted])


def levels_filter(use: FieldUse, levels: tuple[str, ...]) -> dict[str, Any]:
    """Documents at any of `levels`, whatever case or alias the logger wrote; match_all for no levels."""
    if not levels:
        return {"match_all": {}}
    names = [name for level in levels for name in level_names(level)]
    if use.exact:
        return _any_of([{"term": {use.exact: {"value": name, "case_insensitive": True}}} for name in names])
    return _any_of([{"match": {use.source: name}} for name in names])


def level_aggregation(use: FieldUse) -> dict[str, Any]:
    """Counts by level: a terms aggregation on the exact field, else one `match` filter per level."""
    if use.exact:
        return {"terms": {"field": use.exact, "size": 50}}
    return {"filters": {"filters": {level: levels_filter(use, (level,)) for level in LEVELS}}}


def error_type_aggregation(use: FieldUse) -> dict[str, Any] | None:
    """The biggest error types, when the field has an exact form to count by."""
    return {"terms": {"field": use.exact, "size": MAX_ERROR_TYPES}} if use.exact and use.present else None


def level_counts(aggregation: Mapping[str, Any]) -> dict[str, int]:
    """{canonical level: count} from either form of level_aggregation; an unknown value keeps its upper case."""
    counts: dict[str, int] = {}
    buckets = aggregation.get("buckets", [])
    pairs = buckets.items() if isinstance(buckets, Mapping) else ((b["key"], b) for b in buckets)
    for key, bucket in pairs:
        raw = str(key)
        level = level_from_text(raw) or raw.upper()
        if bucket.get("doc_count"):
            counts[level] = counts.get(level, 0) + int(bucket["doc_count"])
    return counts


def bucket_counts(aggregation: Mapping[str, Any] | None) -> dict[str, int]:
    """{value: count} from a terms aggregation."""
    return {str(b["key"]): int(b["doc_count"]) for b in (aggregation or {}).get("buckets", [])}


def _any_of(clauses: list[dict[str, Any]]) -> dict[str, Any]:
    return clauses[0] if len(clauses) == 1 else {"bool": {"should": clauses, "minimum_should_match": 1}}
