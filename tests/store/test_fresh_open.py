"""A fresh SQLite file opened by several processes at once: every opener gets a usable store, created once.

Switching a fresh file from its rollback journal to WAL needs the file's exclusive lock, and SQLite refuses it at
once (no busy handler) while another connection holds the write lock, which is what a second process switching
the same file holds. The openers must wait for each other instead of failing with "database is locked".
"""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
from collections.abc import Callable
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import pytest

from bot.store.sqlite import SCHEMA_VERSION, SqliteTraceStore
from bot.store.sqlite import switch_to_wal as store_switch_to_wal
from tests.store.known_traces import make_trace, step
from tools.logs.sqlite import SqliteLogs
from tools.logs.sqlite import switch_to_wal as logs_switch_to_wal

WalSwitch = Callable[[sqlite3.Connection, float], str]
PROCESSES = 4
ROUNDS = 5
TRACE_TABLES = {"traces", "tool_calls", "traces_fts", "feedback", "eval_runs"}
LOG_LINE = '{"@timestamp": "2026-11-28T15:06:00Z", "service": "order", "level": "ERROR", "message": "pool timeout"}'


def _open_each_round(paths: list[str], barrier: Barrier, outcomes: Any) -> None:
    """One process: for each round, wait until all processes are ready, then open that round's fresh file."""
    for path in paths:
        barrier.wait(timeout=60)
        try:
            SqliteTraceStore(path).close()
            outcomes.put((path, "ok"))
        except Exception as exc:  # reported to the parent, which asserts on it
            outcomes.put((path, f"{type(exc).__name__}: {exc}"))


def _schema_of(path: str | Path) -> tuple[int, str, set[str]]:
    with sqlite3.connect(path) as db:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        mode = db.execute("PRAGMA journal_mode").fetchone()[0]
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    db.close()
    return version, mode, tables


def test_four_processes_open_a_fresh_store_together_five_rounds_without_a_failure(tmp_path: Path) -> None:
    paths = [str(tmp_path / f"round{n}.db") for n in range(ROUNDS)]
    context = multiprocessing.get_context("spawn")  # no fork of a threaded pytest process
    barrier, outcomes = context.Barrier(PROCESSES), context.Queue()
    workers = [context.Process(target=_open_each_round, args=(paths, barrier, outcomes)) for _ in range(PROCESSES)]
    for worker in workers:
        worker.start()
    results = [outcomes.get(timeout=120) for _ in range(PROCESSES * ROUNDS)]
    for worker in workers:
        worker.join(timeout=60)
    failures = [f"{Path(path).name}: {outcome}" for path, outcome in results if outcome != "ok"]
    assert failures == [] and len(results) == PROCESSES * ROUNDS
    for path in paths:
        version, mode, tables = _schema_of(path)
        assert version == SCHEMA_VERSION and mode == "wal" and tables >= TRACE_TABLES


def _hold_write_lock(path: Path, released: threading.Event) -> sqlite3.Connection:
    """Another connection in the middle of a write on the fresh file, still in rollback-journal mode."""
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")

    def release() -> None:
        released.set()
        holder.execute("COMMIT")

    threading.Timer(0.3, release).start()
    return holder


def test_the_trace_store_waits_for_a_process_holding_the_fresh_files_write_lock(tmp_path: Path) -> None:
    path, released = tmp_path / "traces.db", threading.Event()
    holder = _hold_write_lock(path, released)
    store = SqliteTraceStore(path)  # before the fix: "database is locked" at once, the busy timeout unused
    assert released.is_set()  # it waited for the holder instead of failing
    store.save(make_trace("t1", "2026-11-28T10:00:00Z", [step(1, "query_metrics")]))
    assert store.get("t1") is not None
    store.close()
    holder.close()
    version, mode, tables = _schema_of(path)
    assert version == SCHEMA_VERSION and mode == "wal" and tables >= TRACE_TABLES


def test_the_log_store_ingest_waits_for_a_process_holding_the_fresh_files_write_lock(tmp_path: Path) -> None:
    path, released = tmp_path / "logs.db", threading.Event()
    holder = _hold_write_lock(path, released)
    assert SqliteLogs(path).ingest_jsonl([LOG_LINE]) == 1
    assert released.is_set()
    holder.close()
    assert SqliteLogs(path).services() == ["order"]
    assert _schema_of(path)[1] == "wal"


@pytest.mark.parametrize("switch", [store_switch_to_wal, logs_switch_to_wal], ids=["trace store", "log store"])
def test_a_write_lock_held_past_the_wait_still_fails_loudly(tmp_path: Path, switch: WalSwitch) -> None:
    path = tmp_path / "held.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    opener = sqlite3.connect(path, isolation_level=None)
    with pytest.raises(sqlite3.OperationalError, match="database is locked"):
        switch(opener, 0.05)
    holder.execute("COMMIT")
    assert switch(opener, 0.05) == "wal"  # the lock is free again: the switch goes through
    opener.close()
    holder.close()
