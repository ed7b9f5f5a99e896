"""The query clauses and aggregations an Elasticsearch log search needs, for a field of whatever mapping.

A field with an exact form (keyword, or text with a keyword sub-field) gets `term` clauses; levels are matched with
`case_insensitive` terms over every name a logger gives the level (ERROR, err, Error, SEVERE ...), so `error`,
`Error` and `ERROR` documents are the same level. A text field without an exact form gets `match` clauses, which
compare analysed (lower-cased) words, and per-level `filters` counts instead of a terms aggregation (refused on text).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tools.logs.mapping import IndexMapping
from tools.logs.model import LEVELS, level_from_text, level_names

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
