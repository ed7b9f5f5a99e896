"""SqliteLogs: the embedded log store. JSON-lines logs in SQLite, searched with FTS5.

One connection per call (tool calls run on a thread pool); WAL so ingest and reads can overlap.
Search terms always reach FTS5 as double-quoted strings, so no input is parsed as FTS5 syntax.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any, TypeVar

from tools.base import ToolError
from tools.logs.counting.sql import (
    entry_from_row,
    fts_expression,
    key_counts,
    level_clause,
    level_histogram,
    ms,
    select_columns,
    where_clause,
)
from tools.logs.documents import IngestReport, entries_from_lines
from tools.logs.model import (
    Frame,
    KeyCounts,
    LogEntry,
    LogFields,
    LogQuery,
    LogResult,
    Prepare,
    Probe,
    level_from_text,
)
from tools.logs.shape.structured import read_structured

__all__ = ["SqliteLogs", "fts_expression", "switch_to_wal"]

MAX_ERROR_TYPES = 10

log = logging.getLogger(__name__)
T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS logs (
  id INTEGER PRIMARY KEY, ts_ms INTEGER NOT NULL, service TEXT NOT NULL, level TEXT NOT NULL,
  message TEXT NOT NULL, logger TEXT, host TEXT, trace_id TEXT, stack_trace TEXT);
CREATE INDEX IF NOT EXISTS logs_service_ts ON logs (service, ts_ms);
CREATE INDEX IF NOT EXISTS logs_ts ON logs (ts_ms);
CREATE VIRTUAL TABLE IF NOT EXISTS logs_fts USING fts5(
  message, stack_trace, logger, content='logs', content_rowid='id', tokenize='unicode61');
"""
_BUSY_TIMEOUT_S = 30.0  # an ingest waits this long for another writer
_INSERTED = "ts_ms, service, level, message, logger, host, trace_id, stack_trace, error_type, namespace, attrs"
# columns newer than the first schema: added to an older store on ingest. `attrs` holds the document's other fields
# and a structured line's, as a JSON object of text, so they can be filtered on and shown.
_ADDED_COLUMNS = {"error_type": "TEXT", "namespace": "TEXT", "attrs": "TEXT"}


class SqliteLogs:
    """A LogSource over one SQLite file with an FTS5 index on message, stack trace and logger.

    Documents are read through `fields`, the same field mapping the other backends use; levels are stored as the
    canonical level (`error`, `Error` and `ERR` all become ERROR) and matched in any case."""

    def __init__(self, path: str | Path, fields: LogFields | None = None) -> None:
        self.path = Path(path)
        self.fields = fields or LogFields()

    def describe(self) -> str:
        """Where the logs come from."""
        return "the SQLite log store"

    def ingest_jsonl(self, source: str | Path | Iterable[str]) -> int:
        """Load JSON-lines log documents (a file path or lines); returns how many were stored."""
        return self.ingest(source).stored

    def ingest(self, source: str | Path | Iterable[str], default_service: str = "") -> IngestReport:
        """Load JSON-lines log documents (a file path or lines) through the field mapping; what was read and missed.
        `default_service` names the service of documents that carry none."""
        report = IngestReport(self.fields, default_service)
        lines = _lines(source)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(sqlite3.connect(self.path, isolation_level=None, timeout=_BUSY_TIMEOUT_S)) as db:
            switch_to_wal(db, _BUSY_TIMEOUT_S)
            # One write transaction: the schema, the rows and their index; `first` is read under the write lock,
            # so two ingests at once each index their own rows.
            db.execute("BEGIN IMMEDIATE")
            try:
                _create_schema(db)
                first = db.execute("SELECT coalesce(max(id), 0) FROM logs").fetchone()[0]
                rows = (_row_from_entry(e, self.fields.line_message) for e in entries_from_lines(lines, report))
                db.executemany(f"INSERT INTO logs ({_INSERTED}) VALUES ({', '.join('?' * 11)})", rows)
                db.execute(
                    "INSERT INTO logs_fts (rowid, message, stack_trace, logger) "
                    "SELECT id, message, stack_trace, logger FROM logs WHERE id > ?",
                    (first,),
                )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        if report.skipped:
            log.warning("ingest skipped %d malformed log lines (no JSON object or no timestamp)", report.skipped)
        return report

    def services(self) -> list[str]:
        """Every service that has logs."""
        with self._reader() as db:
            return [r[0] for r in db.execute("SELECT DISTINCT service FROM logs ORDER BY service")]

    def search(self, query: LogQuery) -> LogResult:
        """Counts by level and error type, the newest matching lines and a sample at the cluster levels."""
        with self._reader() as db:
            try:
                present = _columns(db)
                where, params = where_clause(query, present)
                columns = select_columns(present)
                raw = db.execute(f"SELECT level, count(*) FROM logs {where} GROUP BY level", params).fetchall()
                counts = _level_counts(raw)
                total = _level_total(counts, query.levels)
                entries = _select(db, columns, where, params, query.levels, query.limit)
                cluster = _select(db, columns, where, params, query.cluster_levels, query.cluster_sample)
                oldest = _select(db, columns, where, params, query.cluster_levels, query.oldest_sample, oldest=True)
                errors = _error_type_counts(db, where, params) if "error_type" in present else {}
            except sqlite3.OperationalError as exc:  # never a crash: the model gets the reason
                raise ToolError(f"the log search failed in {self.path}: {exc}") from exc
        cluster_total = _level_total(counts, query.cluster_levels)
        return LogResult(counts, total, entries, cluster_total, cluster, errors, cluster_oldest=oldest)

    def histogram(self, query: LogQuery, frame: Frame) -> dict[str, tuple[int, ...]]:
        """Lines per bucket by level, grouped in SQL."""
        with self._reader() as db:
            return self._sql("counting lines per bucket", lambda: level_histogram(db, query, frame, _columns(db)))

    def count_keys(
        self, query: LogQuery, probes: Sequence[Probe], frame: Frame, prepare: Prepare | None = None
    ) -> KeyCounts:
        """Every signature's count, first/last seen and buckets at the cluster levels, grouped in SQL by exact key."""
        message_key = self.fields.line_message
        read = prepare or (lambda entry: read_structured(entry, message_key))
        with self._reader() as db:
            return self._sql("counting signatures", lambda: key_counts(db, query, probes, frame, _columns(db), read))

    def _sql(self, what: str, run: Callable[[], T]) -> T:
        try:
            return run()
        except sqlite3.OperationalError as exc:
            raise ToolError(f"{what} failed in {self.path}: {exc}") from exc

    def _reader(self) -> closing[sqlite3.Connection]:
        if not self.path.exists():
            raise ToolError(
                f"the log store {self.path} does not exist; load logs first "
                "(opsbot logs ingest FILE, or opsbot sandbox up)."
            )
        try:
            return closing(sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=5.0))
        except sqlite3.Error as exc:
            raise ToolError(f"cannot open the log store {self.path}: {exc}") from exc


def _create_schema(db: sqlite3.Connection) -> None:
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            db.execute(statement)
    present = {row[1] for row in db.execute("PRAGMA table_info(logs)")}
    for column, kind in _ADDED_COLUMNS.items():
        if column not in present:
            db.execute(f"ALTER TABLE logs ADD COLUMN {column} {kind}")


def switch_to_wal(db: sqlite3.Connection, wait_s: float) -> str:
    """Put the file in WAL mode, waiting up to `wait_s` for other connections that hold its write lock.

    Leaving the rollback journal (every fresh file starts with one) needs the exclusive lock, and while another
    connection holds the write lock, e.g. a second process doing this same switch, SQLite answers "database is
    locked" at once without calling the busy handler. So the switch is retried, with short growing pauses.
    """
    deadline = time.monotonic() + wait_s
    pause_s = 0.002
    while True:
        try:
            return str(db.execute("PRAGMA journal_mode=WAL").fetchone()[0])
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY or time.monotonic() + pause_s > deadline:
                raise
        time.sleep(pause_s)
        pause_s = min(pause_s * 2, 0.05)


def _columns(db: sqlite3.Connection) -> set[str]:
    return {row[1] for row in db.execute("PRAGMA table_info(logs)")}


def _select(
    db: sqlite3.Connection,
    columns: str,
    where: str,
    params: list[Any],
    levels: tuple[str, ...],
    limit: int,
    *,
    oldest: bool = False,
) -> tuple[LogEntry, ...]:
    if limit <= 0:
        return ()
    level_sql, names = level_clause(levels)
    order = "ASC" if oldest else "DESC"
    sql = f"SELECT {columns} FROM logs {where}{level_sql} ORDER BY ts_ms {order}, id {order} LIMIT ?"
    rows = db.execute(sql, [*params, *names, limit]).fetchall()
    return tuple(entry_from_row(r) for r in rows)


def _level_counts(rows: Iterable[tuple[str, int]]) -> dict[str, int]:
    """{canonical level: count}: a store written by another tool may hold `error` or `Warning`."""
    counts: dict[str, int] = {}
    for raw, count in rows:
        level = level_from_text(str(raw)) or str(raw).upper()
        counts[level] = counts.get(level, 0) + int(count)
    return counts


def _error_type_counts(db: sqlite3.Connection, where: str, params: list[Any]) -> dict[str, int]:
    sql = (
        f"SELECT error_type, count(*) FROM logs {where} AND coalesce(error_type, '') != '' "
        f"GROUP BY error_type ORDER BY count(*) DESC, error_type LIMIT {MAX_ERROR_TYPES}"
    )
    return {str(name): int(n) for name, n in db.execute(sql, params)}


def _level_total(counts: dict[str, int], levels: tuple[str, ...]) -> int:
    return sum(n for level, n in counts.items() if not levels or level in levels)


def _row_from_entry(entry: LogEntry, message_key: str) -> tuple[Any, ...]:
    attrs = dict(read_structured(entry, message_key).fields)
    optional = (entry.logger, entry.host, entry.trace_id, entry.stack_trace, entry.error_type, entry.namespace)
    row = (ms(entry.timestamp), entry.service, entry.level, entry.message, *(v or None for v in optional))
    return (*row, json.dumps(attrs, ensure_ascii=False) if attrs else None)


def _lines(source: str | Path | Iterable[str]) -> Iterator[str]:
    if isinstance(source, str | Path):
        with open(source, encoding="utf-8") as handle:
            yield from handle
    else:
        yield from source
