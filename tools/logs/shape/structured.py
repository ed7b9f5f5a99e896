"""Structured log lines: a line that is a JSON object or logfmt (`level=error msg="..." pool=4`) is parsed.

Its message field is what a signature groups on (a JSON line's first 150 characters are its timestamp and level,
the same for every line); its other fields can be filtered on and shown. The fields a line carries about itself
(timestamp, level, service, logger, trace) are boilerplate the line's prefix already shows; the fields that carry
numbers or an error are what an example keeps (`memory_mb=1843 rate_limit_threshold=100`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from tools.discovery import Finding, did_you_mean
from tools.logs.model import LogEntry, level_from_text
from tools.logs.summary import BOILERPLATE, ERROR_TYPE_KEYS, LEVEL_KEYS, STACK_KEYS, TRACE_KEYS

# Keys that hold the message, in order of preference (a configured key goes first).
MESSAGE_KEYS = ("message", "msg", "event", "body", "text", "log", "short_message", "@message")
_LOGFMT_PAIR = re.compile(r'\s*([A-Za-z_@][\w.@\-]*)=("(?:[^"\\]|\\.)*"|[^\s"]*)')
MIN_LOGFMT_PAIRS = 3
MAX_LISTED_FIELDS = 12


@dataclass(frozen=True)
class StructuredLine:
    form: Literal["json", "logfmt"]
    message_key: str  # "" when no message key was found
    fields: tuple[tuple[str, str], ...]  # every field as dotted key and text, in the line's order


def parse_line(text: str) -> StructuredLine | None:
    """The line as JSON or logfmt fields; None for plain text."""
    line = text.strip()
    if line.startswith("{") and line.endswith("}"):
        try:
            doc = json.loads(line)
        except ValueError:
            return None
        if not isinstance(doc, dict):
            return None
        fields = tuple(flat_fields(doc))
        return StructuredLine("json", _first_key(fields, MESSAGE_KEYS), fields)
    pairs = _logfmt(line)
    if pairs is None:
        return None
    return StructuredLine("logfmt", _first_key(pairs, MESSAGE_KEYS), pairs)


def read_structured(entry: LogEntry, message_key: str = "") -> LogEntry:
    """The entry with a structured line read: the message field as its message, the whole line kept as `line`,
    the other fields added to `fields`, and the level, stack, trace and error type taken from the line where the
    document had none. A plain line comes back unchanged."""
    parsed = parse_line(entry.message)
    if parsed is None:
        return entry
    values = dict(parsed.fields)
    key = message_key if message_key in values else parsed.message_key
    level = entry.level or (level_from_text(_pick(values, LEVEL_KEYS)) or _pick(values, LEVEL_KEYS).upper())
    others = tuple((k, v) for k, v in parsed.fields if k != key)
    return replace(
        entry,
        message=values.get(key, "") if key else "",
        line=entry.message,
        level=level,
        stack_trace=entry.stack_trace or _pick(values, STACK_KEYS),
        trace_id=entry.trace_id or _pick(values, TRACE_KEYS),
        error_type=entry.error_type or _pick(values, ERROR_TYPE_KEYS),
        fields=_merged(entry.fields, others),
    )


def _first_key(fields: Sequence[tuple[str, str]], wanted: Sequence[str]) -> str:
    present = {k for k, _ in fields}
    return next((k for k in wanted if k in present), "")


def _pick(values: Mapping[str, str], keys: Sequence[str]) -> str:
    return next((values[k] for k in keys if values.get(k)), "")


def _merged(first: Sequence[tuple[str, str]], second: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    seen = dict(first)
    return tuple(first) + tuple((k, v) for k, v in second if k not in seen)


def flat_fields(doc: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, str]]:
    """Every leaf of a document as (dotted key, text): strings as they are, other values as JSON."""
    for key, value in doc.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            yield from flat_fields(value, name + ".")
        elif isinstance(value, str):
            yield name, value
        elif value is not None:
            yield name, json.dumps(value, ensure_ascii=False)


def _logfmt(line: str) -> tuple[tuple[str, str], ...] | None:
    pairs: list[tuple[str, str]] = []
    position = 0
    while position < len(line):
        match = _LOGFMT_PAIR.match(line, position)
        if match is None or match.end() == position:
            return None if line[position:].strip() else _enough(pairs)
        value = match.group(2)
        if value.startswith('"'):
            value = value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        pairs.append((match.group(1), value))
        position = match.end()
    return _enough(pairs)


def _enough(pairs: list[tuple[str, str]]) -> tuple[tuple[str, str], ...] | None:
    return tuple(pairs) if len(pairs) >= MIN_LOGFMT_PAIRS else None


def line_key_finding(messages: Sequence[str], where: str, configured: str = "") -> Finding:
    """`logs.line_message_key` from the messages themselves (`opsbot init`), or the configured key checked against
    them (`opsbot doctor`): how many are JSON or logfmt lines, the key that holds their message, their other
    fields (what `where=` can filter on)."""
    setting = "logs.line_message_key"
    parsed = [p for m in messages if (p := parse_line(m)) is not None]
    if not parsed:
        return Finding(setting, configured, f"the {len(messages):,} {where} are plain text, not JSON or logfmt")
    forms = " and ".join(sorted({p.form for p in parsed}))
    keys = Counter(p.message_key for p in parsed if p.message_key)
    others = Counter(k for p in parsed for k, _ in p.fields if k != p.message_key and k not in BOILERPLATE)
    head = f"{len(parsed):,} of {len(messages):,} {where} are {forms} lines"
    fields = f"; their other fields: {', '.join(k for k, _ in others.most_common(MAX_LISTED_FIELDS)) or 'none'}"
    if configured:
        held = sum(1 for p in parsed if configured in dict(p.fields))
        known = {k for p in parsed for k, _ in p.fields}
        problem = f"{setting} = {configured!r} is in none of them{did_you_mean(configured, known)}"
        return Finding(setting, configured, f"{head}; {held:,} hold {configured}{fields}", () if held else (problem,))
    if not keys:
        return Finding(setting, None, f"{head}, none with a message key ({', '.join(MESSAGE_KEYS)}){fields}")
    key, count = keys.most_common(1)[0]
    return Finding(setting, key, f"{head}; their message is in {key} in {count:,}{fields}")
