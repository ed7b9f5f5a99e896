"""Trace store and API throughput: save, list, search and stats over a few thousand traces; API round trips.

Run on demand:  .venv/bin/python -m pytest tests/bench/bench_store.py -s
Prints numbers; asserts only that the work happened (no timing assertions).
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from bot.store.base import TraceStore
from bot.store.elastic import ElasticsearchTraceStore
from bot.store.sqlite import SqliteTraceStore
from bot.wiring.elastic import es_client
from tests.store.known_traces import known_traces

N_TRACES = 2_000


def fill_and_measure(store: TraceStore, label: str) -> None:
    base = known_traces()
    started = time.perf_counter()
    for i in range(N_TRACES):
        t = base[i % len(base)]
        store.save(replace(t, trace_id=f"{t.trace_id}-{i}", question=f"{t.question} #{i}"))
    save_s = time.perf_counter() - started
    timings = {}
    for name, call in (
        ("list", lambda: store.list(50, min_steps=3)),
        ("search", lambda: store.search("checkout")),
        ("stats", lambda: store.stats()),
    ):
        started = time.perf_counter()
        result: Any = call()
        timings[name] = (time.perf_counter() - started) * 1000
        assert result
    print(
        f"\n{label}: save {N_TRACES / save_s:,.0f} traces/s ({save_s * 1000 / N_TRACES:.2f} ms each); "
        + "; ".join(f"{k} {v:.1f} ms" for k, v in timings.items())
    )


def test_bench_sqlite_store(tmp_path: Path) -> None:
    store = SqliteTraceStore(tmp_path / "traces.db")
    fill_and_measure(store, "sqlite")
    store.close()


def test_bench_elasticsearch_store(osmem_clone: Any) -> None:
    store = ElasticsearchTraceStore(es_client(osmem_clone.url, plain_json=True), "opsbot-traces")
    fill_and_measure(store, "elasticsearch (osmem, refresh=wait_for per save)")
    store.close()
