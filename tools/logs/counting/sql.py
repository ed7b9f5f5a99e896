"""The SQLite store's filters and aggregations: what a query selects, lines per bucket by level, and every
signature's count, first and last seen and buckets over the whole window, grouped in SQL.

A line's signature key is computed inside the query by a function registered on the connection (the same key the
tool computes for the lines it shows: tools/logs/shape/cluster.py), so SQLite counts exactly the lines of each
signature, including signatures no sample held.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from tools.base import ToolError
from tools.logs.model import (
    Frame,
    KeyCount,
    KeyCounts,
    LogEntry,
    LogQuery,
    Prepare,
    Probe,
    SearchText,
    level_from_text,
    level_names,
)
from tools.logs.shape.cluster import signature_key

COLUMNS = "ts_ms, service, level, message, logger, host, trace_id, stack_trace, error_type, namespace, attrs"
BUILTIN_FIELDS = {"host", "logger", "trace_id", "namespace", "error_type", "service"}
MAX_FOUND = 20  # signatures the grouping hands back beyond the probes (the biggest)


def fts_expression(text: SearchText) -> str:
    """FTS5 MATCH text: each term a quoted string (`"` doubled), prefixes as `"word"*`."""
    parts = ['"' + t.text.replace('"', '""') + '"' + ("*" if t.prefix else "") for t in text.terms]
    return (" OR " if text.any_of else " AND ").join(parts)


def where_clause(query: LogQuery, columns: set[str]) -> tuple[str, list[Any]]:
    """WHERE for the window, service, namespace, trace, field filters and search text (no level)."""
    clauses = ["ts_ms >= ?", "ts_ms < ?"]
    params: list[Any] = [ms(query.start), ms(query.end)]
    if query.service is not None:
        clauses.append("service = ?")
        params.append(query.service)
    if query.namespace:
        clauses.append("namespace = ?")
        params.append(query.namespace)
    if query.trace_id:
        clauses.append("(trace_id = ? OR id IN (SELECT rowid FROM logs_fts WHERE logs_fts MATCH ?))")
        params += [query.trace_id, '"' + query.trace_id.replace('"', '""') + '"']
    for name, value in query.where:
        clauses.append(_field_clause(name, columns))
        params.append(value)
    if query.text.terms:
        clauses.append("id IN (SELECT rowid FROM logs_fts WHERE logs_fts MATCH ?)")
        params.append(fts_expression(query.text))
    return "WHERE " + " AND ".join(clauses), params


def _field_clause(name: str, columns: set[str]) -> str:
    if name in BUILTIN_FIELDS:
        return f"{name} = ?"
    if "attrs" not in columns:
        raise ToolError("this log store was loaded before fields were kept; load it again to filter on fields.")
    return "json_extract(attrs, '$.\"' || " + _sql_string(name) + " || '\"') = ?"


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def level_clause(levels: Sequence[str]) -> tuple[str, list[str]]:
    """` AND upper(level) IN (...)` over every name of `levels`, or nothing for every level."""
    names = [name for level in levels for name in level_names(level)]
    return (f" AND upper(level) IN ({', '.join('?' * len(names))})", names) if names else ("", [])


def level_histogram(
    db: sqlite3.Connection, query: LogQuery, frame: Frame, columns: set[str]
) -> dict[str, tuple[int, ...]]:
    """Lines per bucket of `frame` by canonical level (every level)."""
    where, params = where_clause(query, columns)
    sql = f"SELECT (ts_ms - ?) / ?, level, count(*) FROM logs {where} GROUP BY 1, 2"
    rows = db.execute(sql, [ms(frame.start), frame.step_s * 1000, *params]).fetchall()
    found: dict[str, list[int]] = {}
    for bucket, raw, count in rows:
        level = level_from_text(str(raw)) or str(raw).upper()
        found.setdefault(level, [0] * frame.count)[_clamped(bucket, frame)] += int(count)
    return {level: tuple(v) for level, v in found.items()}


def key_counts(
    db: sqlite3.Connection,
    query: LogQuery,
    probes: Sequence[Probe],
    frame: Frame,
    columns: set[str],
    prepare: Prepare,
) -> KeyCounts:
    """Every signature's lines at the cluster levels over the whole window, grouped by the exact key of each line
    as `prepare` hands it to the tool (redacted, its structured line read)."""

    def key(message: str | None, error_type: str | None, stack: str | None, level: str | None) -> str:
        entry = LogEntry(_EPOCH, "", level or "", message or "", stack_trace=stack or "", error_type=error_type or "")
        return signature_key(prepare(entry))

    db.create_function("signature_key", 4, key, deterministic=True)
    where, params = where_clause(query, columns)
    levels, names = level_clause(query.cluster_levels)
    sql = (
        "SELECT signature_key(message, error_type, stack_trace, level), (ts_ms - ?) / ?, count(*), min(ts_ms), "
        f"max(ts_ms), max(id) FROM logs {where}{levels} GROUP BY 1, 2"
    )
    rows = db.execute(sql, [ms(frame.start), frame.step_s * 1000, *params, *names]).fetchall()
    counts, newest = _reduced(rows, frame)
    wanted = {p.key for p in probes}
    biggest = sorted(counts, key=lambda k: -counts[k].count)[:MAX_FOUND]
    found_ids = {newest[k]: k for k in biggest if k not in wanted}
    found = {found_ids[e_id]: entry for e_id, entry in _entries_by_id(db, found_ids, columns)}
    kept = {k: counts[k] for k in {*biggest, *wanted} if k in counts}
    return KeyCounts(kept, exact=True, found=found, distinct=len(counts))


def _reduced(rows: Iterable[tuple[Any, ...]], frame: Frame) -> tuple[dict[str, KeyCount], dict[str, int]]:
    buckets: dict[str, list[int]] = {}
    spans: dict[str, tuple[int, int, int]] = {}
    for key, bucket, count, first, last, newest_id in rows:
        buckets.setdefault(key, [0] * frame.count)[_clamped(bucket, frame)] += int(count)
        old = spans.get(key, (first, last, newest_id))
        spans[key] = (min(old[0], first), max(old[1], last), max(old[2], newest_id))
    counts = {
        key: KeyCount(sum(b), moment(spans[key][0]), moment(spans[key][1]), tuple(b)) for key, b in buckets.items()
    }
    return counts, {key: span[2] for key, span in spans.items()}


def _clamped(bucket: Any, frame: Frame) -> int:
    """A row's bucket within the frame, as Frame.index clamps a moment: a baseline read from before the frame (an
    onset's hour before) lands in the first bucket, never at a negative index that counts from the end."""
    return max(0, min(frame.count - 1, int(bucket)))


def _entries_by_id(db: sqlite3.Connection, ids: dict[int, str], columns: set[str]) -> list[tuple[int, LogEntry]]:
    if not ids:
        return []
    marks = ", ".join("?" * len(ids))
    rows = db.execute(f"SELECT id, {select_columns(columns)} FROM logs WHERE id IN ({marks})", list(ids)).fetchall()
    return [(int(row[0]), entry_from_row(row[1:])) for row in rows]


def select_columns(columns: set[str]) -> str:
    """COLUMNS, with NULL for the columns an older store lacks."""
    return ", ".join(c if c in columns else "NULL" for c in COLUMNS.split(", "))


def entry_from_row(row: Sequence[Any]) -> LogEntry:
    ts_ms, service, level, message, logger, host, trace_id, stack, error_type, namespace, attrs = row
    fields = tuple((str(k), str(v)) for k, v in json.loads(attrs).items()) if attrs else ()
    return LogEntry(
        moment(ts_ms),
        service,
        level,
        message,
        logger or "",
        host or "",
        trace_id or "",
        stack or "",
        error_type or "",
        namespace or "",
        fields,
    )


def moment(ts_ms: int) -> datetime:
    return datetime.fromtimestamp(ts_ms / 1000, tz=UTC)


def ms(when: datetime) -> int:
    return int(when.timestamp() * 1000)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
