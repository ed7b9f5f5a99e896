from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.engine.types import Intent, trace_to_dict
from bot.store.base import TraceStore
from bot.store.elastic import ElasticsearchTraceStore
from bot.store.sqlite import SCHEMA_VERSION, SqliteTraceStore
from bot.wiring.elastic import es_client
from tests.store.known_traces import (
    EXPECTED_DAYS,
    EXPECTED_P50_MS,
    EXPECTED_P95_MS,
    EXPECTED_STOP,
    EXPECTED_TOOLS,
    VOTES,
    known_traces,
    make_trace,
    step,
)
from tests.tools.result_samples import samples
from tools.results import series_of


def fill(store: TraceStore) -> None:
    for trace in known_traces():
        store.save(trace)
    for trace_id, user, vote in VOTES:
        store.record_feedback(trace_id, user, vote)


def test_saved_trace_reads_back_identical(store: TraceStore) -> None:
    trace = known_traces()[0]
    store.save(trace)
    got = store.get("t1")
    assert got is not None
    assert trace_to_dict(got) == trace_to_dict(trace)
    assert store.get("missing") is None


def test_steps_read_back_with_their_typed_data(store: TraceStore) -> None:
    steps = [replace(step(i, s.kind), data=s) for i, s in enumerate(samples(), 1)]
    trace = make_trace("typed", "2026-11-28T10:00:00Z", steps)
    store.save(trace)
    got = store.get("typed")
    assert got is not None and got.steps == trace.steps
    series = series_of(got.steps[0])
    assert series is not None and series.changes[0].ratio == 138.436 / 212.0  # every digit, not the text's x0.7


def test_saving_again_replaces_the_trace(store: TraceStore) -> None:
    trace = known_traces()[0]
    store.save(trace)
    store.save(replace(trace, answer="the final answer"))
    assert [t.answer for t in store.list()] == ["the final answer"]
    assert store.stats().tools[0].calls == 1  # the tool calls were replaced, not doubled


def test_list_is_newest_first_and_filters_steps_and_time(store: TraceStore) -> None:
    fill(store)
    assert [t.trace_id for t in store.list()] == ["t5", "t4", "t3", "t2", "t1"]
    assert [t.trace_id for t in store.list(min_steps=4)] == ["t2"]
    assert [t.trace_id for t in store.list(since=datetime(2026, 11, 28, 10, tzinfo=UTC))] == ["t5", "t4", "t3"]
    assert len(store.list(limit=2)) == 2


def test_search_finds_words_in_question_answer_and_observations(store: TraceStore) -> None:
    fill(store)
    assert {t.trace_id for t in store.search("maximumPoolSize")} == {"t3"}
    assert {t.trace_id for t in store.search("HikariPool-1 timeout")} == {"t1"}
    assert {t.trace_id for t in store.search("checkout")} == {"t2"}
    assert store.search("nothing-like-this") == []


def test_search_text_is_never_query_syntax(store: TraceStore) -> None:
    fill(store)
    assert store.search('AND ( "order* NEAR') == []
    assert store.search("   ") == []


def test_stats_match_the_known_traces(store: TraceStore) -> None:
    fill(store)
    stats = store.stats(long_run_steps=6)
    assert stats.runs == 5
    assert stats.long_runs == 1
    assert dict(stats.stop_reasons) == EXPECTED_STOP
    assert [(t.tool, t.calls, t.errors) for t in stats.tools] == EXPECTED_TOOLS
    assert next(t for t in stats.tools if t.tool == "query_logs").error_rate == 1.0
    assert [(d.day, d.runs, d.tokens) for d in stats.tokens_by_day] == EXPECTED_DAYS
    assert (stats.votes_up, stats.votes_down) == (1, 2)
    assert stats.feedback_ratio == pytest.approx(1 / 3)
    assert (stats.p50_duration_ms, stats.p95_duration_ms) == (EXPECTED_P50_MS, EXPECTED_P95_MS)
    assert dict(stats.intents) == {"diagnose": 4, "lookup": 1}


def test_stats_since_counts_only_later_runs(store: TraceStore) -> None:
    fill(store)
    stats = store.stats(since=datetime(2026, 11, 28, tzinfo=UTC))
    assert stats.runs == 4
    assert [(d.day, d.runs) for d in stats.tokens_by_day] == [("2026-11-28", 4)]
    assert {t.tool: t.calls for t in stats.tools}["query_metrics"] == 6


def test_empty_store_has_empty_stats(store: TraceStore) -> None:
    stats = store.stats()
    assert (stats.runs, stats.p50_duration_ms, stats.feedback_ratio, stats.tools) == (0, 0, None, ())


def test_a_vote_must_be_plus_or_minus_one(store: TraceStore) -> None:
    with pytest.raises(ValueError, match="vote"):
        store.record_feedback("t1", "alice", 5)


def test_eval_runs_read_back_newest_first(store: TraceStore) -> None:
    first = store.save_eval_run({"scenario": "hikari-pool", "passed": 3, "failed": 1})
    second = store.save_eval_run({"run_id": "r2", "scenario": "oom", "passed": 4, "failed": 0})
    runs = store.eval_runs()
    assert second == "r2"
    assert {r["run_id"] for r in runs} == {first, "r2"}
    assert next(r for r in runs if r["run_id"] == "r2")["passed"] == 4


def test_store_redacts_before_saving(store: TraceStore, tmp_path: Path) -> None:
    secret = "postgres://app:S3cr3tPassw0rd@db-primary:5432/orders"
    store.save(replace(known_traces()[0], question=f"why does {secret} refuse connections?"))
    got = store.get("t1")
    assert got is not None
    assert "S3cr3tPassw0rd" not in got.question and "[REDACTED" in got.question
    assert store.search("S3cr3tPassw0rd") == []
    files = "".join(p.read_bytes().decode("latin-1") for p in tmp_path.glob("traces.db*"))
    assert "S3cr3tPassw0rd" not in files


def test_sqlite_traces_survive_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "traces.db"
    first = SqliteTraceStore(path)
    fill(first)
    first.close()
    reopened = SqliteTraceStore(path)
    assert [t.trace_id for t in reopened.list()] == ["t5", "t4", "t3", "t2", "t1"]
    assert reopened.stats().runs == 5
    reopened.close()


def test_sqlite_uses_wal_and_records_its_schema_version(tmp_path: Path) -> None:
    SqliteTraceStore(tmp_path / "traces.db").close()
    conn = sqlite3.connect(tmp_path / "traces.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(RuntimeError, match="schema version"):
        SqliteTraceStore(tmp_path / "traces.db")


def test_downvoted_lists_each_thumbs_down_trace_once(store: TraceStore) -> None:
    fill(store)  # t1: two up, then bob's up becomes a down; t2: one down
    assert sorted(t.trace_id for t in store.downvoted()) == ["t1", "t2"]
    assert len(store.downvoted(limit=1)) == 1
    assert store.downvoted(since=datetime(2999, 1, 1, tzinfo=UTC)) == []
    [t2] = [t for t in store.downvoted() if t.trace_id == "t2"]
    assert t2.intent is not None and t2.question  # the labelled example: the message and the route it got


def test_a_thumbs_down_keeps_the_route_the_gate_chose_when_it_was_cast(store: TraceStore) -> None:
    unsure = Intent("diagnose", 0.41, "default", "classifier unsure")
    store.save(make_trace("t1", "2026-11-28T08:00:00Z", [], question="rollback payment to v1.8.2", intent=unsure))
    store.record_feedback("t1", "alice", -1)
    # the trace is replaced later (a user's "Just answer" choice re-routes it): the 👎 still says what it voted on
    store.save(
        make_trace(
            "t1",
            "2026-11-28T08:00:00Z",
            [],
            question="rollback payment to v1.8.2",
            intent=Intent("act", 1.0, "classifier", "user chose"),
        )
    )
    [voted] = store.downvoted()
    assert voted.intent is not None
    assert (voted.intent.route, voted.intent.tier, round(voted.intent.confidence, 2)) == ("diagnose", "default", 0.41)


def test_a_version_1_sqlite_store_gains_the_vote_columns_and_keeps_its_votes(tmp_path: Path) -> None:
    path = tmp_path / "traces.db"
    SqliteTraceStore(path).close()
    conn = sqlite3.connect(path)  # rebuild the version-1 feedback table, with one old vote in it
    conn.executescript(
        "DROP TABLE feedback; CREATE TABLE feedback (trace_id TEXT NOT NULL, user TEXT NOT NULL, "
        "vote INTEGER NOT NULL CHECK (vote IN (-1, 1)), at_ts REAL NOT NULL, "
        "PRIMARY KEY (trace_id, user)); PRAGMA user_version = 1;"
    )
    conn.close()
    old = SqliteTraceStore(path)
    old.save(make_trace("t1", "2026-11-28T08:00:00Z", [], intent=Intent("lookup", 0.9, "classifier", "x")))
    old._conn.execute("INSERT INTO feedback (trace_id, user, vote, at_ts) VALUES ('t1', 'bob', -1, 1.0)")
    assert old._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    [voted] = old.downvoted()
    assert voted.intent is not None and voted.intent.route == "lookup"  # no recorded route: the trace's own
    old.record_feedback("t1", "carol", -1)
    assert old._conn.execute("SELECT routed_as, tier FROM feedback WHERE user = 'carol'").fetchone() == (
        "lookup",
        "classifier",
    )
    old.close()


def test_an_older_elasticsearch_feedback_index_gains_the_vote_fields(osmem_clone: Any) -> None:
    client = es_client(osmem_clone.url, plain_json=True)
    old_mapping = {
        "dynamic": "strict",
        "properties": {
            "trace_id": {"type": "keyword"},
            "user": {"type": "keyword"},
            "vote": {"type": "integer"},
            "at": {"type": "date"},
        },
    }
    client.indices.create(index="old-traces-feedback", mappings=old_mapping)
    store = ElasticsearchTraceStore(client, "old-traces")
    store.save(make_trace("t1", "2026-11-28T08:00:00Z", [], intent=Intent("help", 0.7, "classifier", "x")))
    store.record_feedback("t1", "alice", -1)  # a strict mapping without the new fields would refuse this vote
    [voted] = store.downvoted()
    assert voted.intent is not None and (voted.intent.route, voted.intent.tier) == ("help", "classifier")
