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
from collections.abc import Callable, Mapping
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
        decoded = _decoder(cls)({k: v for k, v in value.items() if k != "kind"})
    except (TypeError, KeyError, AttributeError, ValueError) as exc:
        raise ValueError(f"stored {cls.kind} does not fit its type: {exc}") from exc
    return typing.cast(ToolData, decoded)


def _fields_to_json(value: Any) -> dict[str, JSONValue]:
    out = {}
    for name, default in _defaults(type(value)):
        item = getattr(value, name)
        if default is not _NO_DEFAULT and _same(item, default):
            continue
        out[name] = _to_json(item)
    return out


_NO_DEFAULT = object()
_DEFAULTS: dict[type, tuple[tuple[str, Any], ...]] = {}  # per class, built once (a race builds it twice, equal)


def _defaults(cls: type) -> tuple[tuple[str, Any], ...]:
    """(name, default) of each field; a default_factory's value stands for it (the data's are empty and immutable
    in use: (), {})."""
    if cls in _DEFAULTS:
        return _DEFAULTS[cls]
    found = []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            found.append((f.name, f.default))
        elif f.default_factory is not dataclasses.MISSING:
            found.append((f.name, f.default_factory()))
        else:
            found.append((f.name, _NO_DEFAULT))
    _DEFAULTS[cls] = tuple(found)
    return _DEFAULTS[cls]


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


Decoder = Callable[[JSONValue], Any]
_DECODERS: dict[Any, Decoder] = {}  # per type, built once (a race builds one twice, equal)


def _decoder(hint: Any) -> Decoder:
    """What reads a stored value as the type `hint` names (built once per type)."""
    if hint not in _DECODERS:
        _DECODERS[hint] = _new_decoder(hint)
    return _DECODERS[hint]


def _new_decoder(hint: Any) -> Decoder:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return _union_decoder(typing.get_args(hint))
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _dataclass_decoder(hint)
    if hint is datetime:
        return _nullable(_datetime_from_json)
    if hint is timedelta:
        return _nullable(lambda value: timedelta(seconds=value))
    if origin is tuple:
        return _nullable(_tuple_decoder(typing.get_args(hint)))
    if origin in (dict, Mapping) or (isinstance(origin, type) and issubclass(origin, Mapping)):
        item = _decoder(typing.get_args(hint)[1]) if typing.get_args(hint) else _as_is
        return _nullable(lambda value: {k: item(v) for k, v in value.items()})
    if hint is float:
        return _float_from_json
    return _as_is  # str, int, bool, Literal, Any


def _as_is(value: JSONValue) -> Any:
    return value


def _nullable(decode: Decoder) -> Decoder:
    """`decode`, with null read as None (a non-finite number was stored as null)."""
    return lambda value: None if value is None else decode(value)


def _float_from_json(value: JSONValue) -> Any:
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _datetime_from_json(value: str) -> datetime:
    moment = datetime.fromisoformat(value)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _dataclass_decoder(cls: type) -> Decoder:
    """An object of the class' fields; keys it does not have (written by a newer version) are left out. The
    fields' decoders are built on first use, so a class may refer to itself."""
    fields: dict[str, Decoder] = {}

    def decode(value: Mapping[str, JSONValue]) -> Any:
        if not fields:
            hints = _hints(cls)
            fields.update({f.name: _decoder(hints[f.name]) for f in dataclasses.fields(cls) if f.init})
        return cls(**{name: fields[name](v) for name, v in value.items() if name in fields})

    return _nullable(decode)


def _union_decoder(members: tuple[Any, ...]) -> Decoder:
    """A union is read as its first member the value can be: None as None, a number as itself, else the first
    non-None member (tool data unions are `X | None`, `int | float`, `str | None`)."""
    numbers = any(m in (int, float) for m in members)
    other = _decoder(next(m for m in members if m is not type(None)))

    def decode(value: JSONValue) -> Any:
        if value is None:
            return None
        if numbers and isinstance(value, int | float):
            return value
        return other(value)

    return decode


def _tuple_decoder(args: tuple[Any, ...]) -> Decoder:
    if len(args) == 2 and args[1] is Ellipsis:
        item = _decoder(args[0])
        return lambda value: tuple(item(v) for v in value)
    items = tuple(_decoder(a) for a in args)
    return lambda value: tuple(decode(v) for decode, v in zip(items, value, strict=True))


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    """A dataclass' field types, its forward references resolved against every class a tool result may hold."""
    return typing.get_type_hints(cls, localns=_namespace())


@functools.cache
def _namespace() -> dict[str, Any]:
    """Classes a tool result names only under TYPE_CHECKING (the detectors load with the first series analysed)."""
    from tools.analysis.changepoints import ChangePoint, Spike, Stop
    from tools.analysis.trends import Sawtooth, Trend
    from tools.metrics.views import RelatedRead, ResourceUse

    return {c.__name__: c for c in (ChangePoint, Spike, Stop, Sawtooth, Trend, RelatedRead, ResourceUse)}
