"""How to query a field of a deploy index, chosen from the index's mapping rather than assumed.

A keyword field is matched with `term` and listed with a terms aggregation. A text field (what dynamic mapping makes
of a string) cannot be aggregated or sorted (Elasticsearch answers HTTP 400) and `term` on it matches tokens
(`order` would match `order-api`): its keyword sub-field (`service.keyword`) is used when the mapping has one,
otherwise a `match_phrase` query whose hits are then checked for the exact value. Which one was chosen is said.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tools.base import ToolError

EXACT_TYPES = frozenset({"keyword", "constant_keyword", "wildcard"})
TIME_TYPES = frozenset({"date", "date_nanos"})


@dataclass(frozen=True)
class FieldUse:
    """One configured field and how it is queried."""

    setting: str  # deploys.service_field
    name: str  # as configured: service
    query: str  # the field queries and aggregations use: service or service.keyword
    exact: bool  # False: a text field with no keyword sub-field (match_phrase, then an exact check)

    def describe(self) -> str:
        if self.query != self.name:
            return f"{self.name} is text: matched on its keyword sub-field {self.query}"
        if not self.exact:
            return f"{self.name} is text with no keyword sub-field: matched with match_phrase, then exactly"
        return f"{self.name} is a keyword field"

    def clause(self, value: str) -> dict[str, Any]:
        """The query clause that selects documents whose field holds `value`."""
        if self.exact:
            return {"term": {self.query: value}}
        return {"match_phrase": {self.query: value}}


def flat_mapping(reply: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """dotted field path -> its mapping, over every index a pattern names (the first index's wins on a clash)."""
    fields: dict[str, dict[str, Any]] = {}
    for index in reply.values():
        for path, spec in _walk(index.get("mappings", {}).get("properties", {}), ""):
            fields.setdefault(path, spec)
    return fields


def _walk(properties: Mapping[str, Any], prefix: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for name, spec in properties.items():
        path = f"{prefix}{name}"
        if "properties" in spec:
            yield from _walk(spec["properties"], f"{path}.")
        else:
            yield path, spec


def field_use(fields: Mapping[str, dict[str, Any]], setting: str, name: str, index: str) -> FieldUse:
    """How to query `name`; a ToolError naming the setting when the mapping has no such field."""
    spec = fields.get(name)
    if spec is None:
        close = difflib.get_close_matches(name, list(fields), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        known = ", ".join(sorted(fields)[:20])
        raise ToolError(f"{setting} {name!r} is not a field of {index} (its fields: {known}).{hint}")
    kind = spec.get("type", "object")
    if kind in EXACT_TYPES or kind in TIME_TYPES:
        return FieldUse(setting, name, name, True)
    sub = next((f"{name}.{k}" for k, v in spec.get("fields", {}).items() if v.get("type") in EXACT_TYPES), None)
    if sub is not None:
        return FieldUse(setting, name, sub, True)
    if kind == "text":
        return FieldUse(setting, name, name, False)
    return FieldUse(setting, name, name, True)  # numbers, booleans: term and aggregations work


def time_use(fields: Mapping[str, dict[str, Any]], setting: str, name: str, index: str) -> FieldUse:
    """The timestamp field: a date, or a keyword (or keyword sub-field) holding ISO times, which sort as text."""
    use = field_use(fields, setting, name, index)
    kind = fields[name].get("type")
    if kind in TIME_TYPES or use.query != name or kind in EXACT_TYPES:
        return use
    raise ToolError(f"{setting} {name!r} in {index} is mapped as {kind}, not as a date: deploys cannot be ordered")
