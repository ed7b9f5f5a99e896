"""SqliteTraceStore: the default store. One file, WAL mode, FTS5 search, a versioned schema."""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
import uuid
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from bot.engine.types import Step, Trace, trace_from_dict, trace_to_dict
from bot.safety.redact import redact_trace
from bot.store.analytics import sqlite_stats
from bot.store.base import (
    EvalRunList,
    TraceList,
    TraceRedactor,
    TraceStats,
    check_vote,
    is_partial,
    iso_utc,
    observations_of,
    partial_after,
    started_at_of,
    tool_calls_of,
    with_voted_intent,
)

log = logging.getLogger(__name__)

SCHEMA_VERSION = 2
BUSY_TIMEOUT_S = 30.0  # how long a write waits for another process's write lock (and the WAL switch, below)
Rows = list[Any]  # a module-level alias: inside the class, `list` names the method

# Version 1. A later version appends its own migration list; `user_version` records which ran.
_SCHEMA_V1 = """
CREATE TABLE traces (
  trace_id TEXT PRIMARY KEY,
  started_ts REAL NOT NULL,
  question TEXT NOT NULL,
  answer TEXT NOT NULL,
  protocol TEXT NOT NULL,
  stop_reason TEXT NOT NULL,
  complete INTEGER NOT NULL,
  intent TEXT,
  model TEXT NOT NULL,
  steps INTEGER NOT NULL,
  prompt_tokens INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL,
  elapsed_ms INTEGER NOT NULL,
  doc TEXT NOT NULL
);
CREATE INDEX traces_started ON traces (started_ts);
CREATE TABLE tool_calls (
  trace_id TEXT NOT NULL REFERENCES traces (trace_id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  tool TEXT NOT NULL,
  status TEXT NOT NULL,
  PRIMARY KEY (trace_id, step)
);
CREATE VIRTUAL TABLE traces_fts USING fts5 (
  trace_id UNINDEXED, question, answer, observations, tokenize = 'unicode61'
);
CREATE TABLE feedback (
  trace_id TEXT NOT NULL,
  user TEXT NOT NULL,
  vote INTEGER NOT NULL CHECK (vote IN (-1, 1)),
  at_ts REAL NOT NULL,
  PRIMARY KEY (trace_id, user)
);
CREATE TABLE eval_runs (run_id TEXT PRIMARY KEY, at_ts REAL NOT NULL, doc TEXT NOT NULL);
"""
# Version 2: a 👎 keeps the route the intent gate chose, its tier and probability, as they were when it was cast.
_SCHEMA_V2 = """
ALTER TABLE feedback ADD COLUMN routed_as TEXT;
ALTER TABLE feedback ADD COLUMN tier TEXT;
ALTER TABLE feedback ADD COLUMN probability REAL;
"""
_MIGRATIONS = (_SCHEMA_V1, _SCHEMA_V2)  # _MIGRATIONS[n] takes a store from version n to n + 1


def switch_to_wal(conn: sqlite3.Connection, wait_s: float) -> str:
    """Put the file in WAL mode, waiting up to `wait_s` for other connections that hold its write lock.

    Leaving the rollback journal (every fresh file starts with one) needs the file's exclusive lock, and while
    another connection holds its write lock, e.g. a second process doing this same switch, SQLite answers
    "database is locked" at once: the busy handler is not called for this lock. So the switch is retried here,
    with short growing pauses, for as long as the busy timeout would have waited. Once the file is in WAL mode
    the switch is a no-op that takes no write lock, so only the first openers of a fresh file ever wait.
    """
    deadline = time.monotonic() + wait_s
    pause_s = 0.002
    while True:
        try:
            return str(conn.execute("PRAGMA journal_mode=WAL").fetchone()[0])
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY or time.monotonic() + pause_s > deadline:
                raise
        time.sleep(pause_s)
        pause_s = min(pause_s * 2, 0.05)


def fts_query_from_text(text: str) -> str:
    """Each word as a quoted FTS5 phrase (implicitly AND-ed): user text can never be FTS syntax."""
    words = [w.replace('"', '""') for w in text.split()]
    return " ".join(f'"{w}"' for w in words)


class SqliteTraceStore:
    """Traces in one SQLite file. Thread-safe: one connection behind a lock (runs are seconds, writes ms)."""

    def __init__(self, path: Path | str, *, redact: TraceRedactor = redact_trace) -> None:
        self.path = Path(path)
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._redact = redact
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT_S)
        self._conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        if str(path) != ":memory:" and (mode := switch_to_wal(self._conn, BUSY_TIMEOUT_S)) != "wal":
            log.warning("trace store %s stays in journal mode %s: WAL is not available there", self.path, mode)
        self._conn.execute("PRAGMA foreign_keys=ON")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._migrate()

    def _migrate(self) -> None:
        # Several processes may open a fresh file at once: the version is read again under the write lock
        # (BEGIN IMMEDIATE waits up to busy_timeout for it), so exactly one of them creates the schema.
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                version = self._conn.execute("PRAGMA user_version").fetchone()[0]
                if version > SCHEMA_VERSION:
                    raise RuntimeError(
                        f"{self.path} has schema version {version}; this opsbot knows up to {SCHEMA_VERSION}"
                    )
                for migration in _MIGRATIONS[version:]:
                    for statement in migration.split(";"):
                        if statement.strip():
                            self._conn.execute(statement)
                if version < SCHEMA_VERSION:
                    self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                    log.info("trace store %s: schema %d -> %d", self.path, version, SCHEMA_VERSION)
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def save(self, trace: Trace) -> None:
        """Store (or replace) one trace, redacted, with its tool calls and search text, in one transaction."""
        self._write(self._redact(trace))

    def _write(self, trace: Trace) -> None:
        t, started = trace.totals, started_at_of(trace)
        row = (
            trace.trace_id,
            started.timestamp(),
            trace.question,
            trace.answer,
            trace.protocol,
            trace.stop_reason.value,
            int(trace.complete),
            trace.intent.route if trace.intent else None,
            trace.model,
            len(trace.steps),
            t.prompt_tokens,
            t.completion_tokens,
            t.elapsed_ms,
            json.dumps(trace_to_dict(trace), ensure_ascii=False),
        )
        calls = [(trace.trace_id, c.step, c.tool, c.status) for c in tool_calls_of(trace)]
        with self._lock, self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.execute("DELETE FROM traces_fts WHERE trace_id = ?", (trace.trace_id,))
            self._conn.execute("DELETE FROM tool_calls WHERE trace_id = ?", (trace.trace_id,))
            self._conn.execute(f"INSERT OR REPLACE INTO traces VALUES ({', '.join('?' * len(row))})", row)
            self._conn.executemany("INSERT INTO tool_calls VALUES (?, ?, ?, ?)", calls)
            self._conn.execute(
                "INSERT INTO traces_fts VALUES (?, ?, ?, ?)",
                (trace.trace_id, trace.question, trace.answer, observations_of(trace)),
            )

    def append_step(self, trace_id: str, question: str, step: Step | None = None) -> None:
        """Store the partial trace with one more step (read-modify-write; one worker owns a running trace)."""
        existing = self.get(trace_id)
        if existing is not None and not is_partial(existing):
            return  # the final trace is already stored; a late step must not turn it back into a partial one
        self._write(partial_after(existing, trace_id, question, step, self._redact))

    def delete_older_than(self, cutoff: datetime) -> int:
        with self._lock, self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            old = "SELECT trace_id FROM traces WHERE started_ts < ?"
            self._conn.execute(f"DELETE FROM traces_fts WHERE trace_id IN ({old})", (cutoff.timestamp(),))
            self._conn.execute(f"DELETE FROM tool_calls WHERE trace_id IN ({old})", (cutoff.timestamp(),))
            return int(self._conn.execute("DELETE FROM traces WHERE started_ts < ?", (cutoff.timestamp(),)).rowcount)

    def get(self, trace_id: str) -> Trace | None:
        row = self._fetch("SELECT doc FROM traces WHERE trace_id = ?", (trace_id,))
        return trace_from_dict(json.loads(row[0][0])) if row else None

    def list(self, limit: int = 20, *, min_steps: int = 0, since: datetime | None = None) -> TraceList:
        """Newest first; `min_steps` keeps runs with at least that many steps."""
        rows = self._fetch(
            "SELECT doc FROM traces WHERE steps >= ? AND started_ts >= ? ORDER BY started_ts DESC LIMIT ?",
            (min_steps, since.timestamp() if since else 0.0, limit),
        )
        return [trace_from_dict(json.loads(r[0])) for r in rows]

    def search(self, text: str, limit: int = 20) -> TraceList:
        """Full-text search (FTS5, bm25 rank) over question, answer and observations."""
        query = fts_query_from_text(text)
        if not query:
            return []
        rows = self._fetch(
            "SELECT t.doc FROM traces_fts f JOIN traces t USING (trace_id) WHERE traces_fts MATCH ? "
            "ORDER BY bm25(traces_fts) LIMIT ?",
            (query, limit),
        )
        return [trace_from_dict(json.loads(r[0])) for r in rows]

    def record_feedback(self, trace_id: str, user: str, vote: int) -> None:
        """One vote per user and trace; a second vote replaces the first. The vote keeps the trace's intent (route,
        tier, probability) as it is now, so a 👎 stays a labelled example whatever happens to the trace later."""
        intent = "(SELECT json_extract(doc, '$.intent.{}') FROM traces WHERE trace_id = ?)"
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO feedback (trace_id, user, vote, at_ts, routed_as, tier, probability) "
                f"VALUES (?, ?, ?, ?, {intent.format('route')}, {intent.format('tier')}, "
                f"{intent.format('confidence')})",
                (trace_id, user, check_vote(vote), time.time(), trace_id, trace_id, trace_id),
            )

    def downvoted(self, limit: int = 500, *, since: datetime | None = None) -> TraceList:
        """Traces with a 👎 since `since`, most recent vote first, each with the intent its latest 👎 recorded."""
        # SQLite fills the bare columns of an aggregate query from the row that max() picked: the latest 👎
        rows = self._fetch(
            "SELECT t.doc, f.routed_as, f.tier, f.probability, max(f.at_ts) FROM feedback f JOIN traces t "
            "USING (trace_id) WHERE f.vote = -1 AND f.at_ts >= ? GROUP BY t.trace_id ORDER BY max(f.at_ts) DESC "
            "LIMIT ?",
            (since.timestamp() if since else 0.0, limit),
        )
        return [with_voted_intent(trace_from_dict(json.loads(r[0])), r[1], r[2], r[3]) for r in rows]

    def stats(self, *, since: datetime | None = None, long_run_steps: int = 6) -> TraceStats:
        with self._lock:
            return sqlite_stats(self._conn, since, long_run_steps)

    def save_eval_run(self, run: Mapping[str, Any]) -> str:
        """Store one eval run; its `run_id` is kept or made up."""
        run_id = str(run.get("run_id") or uuid.uuid4().hex[:12])
        now = time.time()
        doc = {"run_id": run_id, "at": iso_utc(datetime.fromtimestamp(now).astimezone()), **run}
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO eval_runs VALUES (?, ?, ?)", (run_id, now, json.dumps(doc, default=str))
            )
        return run_id

    def eval_runs(self, limit: int = 20) -> EvalRunList:
        rows = self._fetch("SELECT doc FROM eval_runs ORDER BY at_ts DESC LIMIT ?", (limit,))
        return [json.loads(r[0]) for r in rows]

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _fetch(self, sql: str, params: tuple[Any, ...]) -> Rows:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()
