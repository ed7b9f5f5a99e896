"""A tool's typed data as JSON and back, so a stored trace (SQLite, Elasticsearch) or a step kept for a takeover
gives its readers the same typed data the live run had.

The form is tagged once, at the top (`{"kind": "metric_series", ...fields}`); inside, each value is read back by
the type its field declares: a dataclass is an object of its fields (those equal to their default left out), a
datetime an ISO 8601 string, a timedelta seconds, a tuple an array. Numbers are stored as they are (a ratio keeps
every digit); a non-finite float becomes null, so the JSON stays strict. Only the kinds tools/results.py lists
are read back: stored data never names a class to import.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from tools.base import ToolData

JSONValue = Any  # what json.loads gives back


def data_to_json(data: ToolData) -> dict[str, JSONValue]:
    """`{"kind": <kind>, <field>: <value>, ...}` for one tool's data."""
    from tools.results import KINDS

    if KINDS.get(data.kind) is not type(data):
        raise ValueError(f"{type(data).__name__} is not a tool result kind tools/results.py lists")
    return {"kind": data.kind, **_fields_to_json(data)}


def data_from_json(value: Mapping[str, JSONValue]) -> ToolData:
    """The data `data_to_json` wrote; ValueError for a kind not listed or a value that does not fit its type."""
    from tools.results import KINDS

    cls = KINDS.get(str(value.get("kind", "")))
    if cls is None:
        raise ValueError(f"unknown tool result kind {value.get('kind')!r}")
    try:
        decoded = _from_json({k: v for k, v in value.items() if k != "kind"}, cls)
    except (TypeError, KeyError, AttributeError) as exc:
        raise ValueError(f"stored {cls.kind} does not fit its type: {exc}") from exc
    return typing.cast(ToolData, decoded)


def _fields_to_json(value: Any) -> dict[str, JSONValue]:
    out = {}
    for f in dataclasses.fields(value):
        item = getattr(value, f.name)
        if f.default is not dataclasses.MISSING and _same(item, f.default):
            continue
        if f.default_factory is not dataclasses.MISSING and _same(item, f.default_factory()):
            continue
        out[f.name] = _to_json(item)
    return out


def _same(value: Any, default: Any) -> bool:
    return type(value) is type(default) and value == default


def _to_json(value: Any) -> JSONValue:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, str | int | bool):
        return value
    if isinstance(value, datetime):
        return _iso(value)
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, tuple | list):
        return [_to_json(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _to_json(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _fields_to_json(value)
    raise TypeError(f"a tool result holds a {type(value).__name__}, which has no JSON form")


def _iso(moment: datetime) -> str:
    """`2026-11-28T15:05:00Z` for a whole second in UTC (the usual case), else Python's full ISO form."""
    utc = moment.astimezone(UTC) if moment.tzinfo else moment
    if moment.tzinfo is not None and utc.microsecond == 0:
        return utc.strftime("%Y-%m-%dT%H:%M:%SZ")
    return moment.isoformat()


def _from_json(value: JSONValue, hint: Any) -> Any:
    """`value` read as the type `hint` names."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return _from_union(value, typing.get_args(hint))
    if value is None or hint is Any or origin is typing.Literal:
        return value
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        hints = _hints(hint)
        known = {f.name for f in dataclasses.fields(hint) if f.init}
        return hint(**{name: _from_json(v, hints[name]) for name, v in value.items() if name in known})
    if hint is datetime:
        moment = datetime.fromisoformat(value)
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    if hint is timedelta:
        return timedelta(seconds=value)
    if origin is tuple:
        return _tuple_from_json(value, typing.get_args(hint))
    if origin in (dict, Mapping) or (isinstance(origin, type) and issubclass(origin, Mapping)):
        item = typing.get_args(hint)[1] if typing.get_args(hint) else Any
        return {k: _from_json(v, item) for k, v in value.items()}
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _from_union(value: JSONValue, members: tuple[Any, ...]) -> Any:
    """A union is read as its first member the value can be: None as None, a number as itself, else the first
    non-None member (tool data unions are `X | None`, `int | float`, `str | None`)."""
    if value is None:
        return None
    if isinstance(value, int | float) and any(m in (int, float) for m in members):
        return value
    return _from_json(value, next(m for m in members if m is not type(None)))


def _tuple_from_json(value: JSONValue, args: tuple[Any, ...]) -> tuple[Any, ...]:
    if len(args) == 2 and args[1] is Ellipsis:
        return tuple(_from_json(v, args[0]) for v in value)
    return tuple(_from_json(v, a) for v, a in zip(value, args, strict=True))


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    """A dataclass' field types, its forward references resolved against every class a tool result may hold."""
    return typing.get_type_hints(cls, localns=_namespace())


@functools.cache
def _namespace() -> dict[str, Any]:
    """Classes a tool result names only under TYPE_CHECKING (the detectors load with the first series analysed)."""
    from tools.analysis.changepoints import ChangePoint, Spike, Stop
    from tools.analysis.trends import Sawtooth, Trend

    return {c.__name__: c for c in (ChangePoint, Spike, Stop, Sawtooth, Trend)}
