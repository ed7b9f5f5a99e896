"""query_logs over real SQLite FTS5 (logs ingested here) and the sandbox's logs, plus its validation."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from elasticsearch import helpers
from osmem_server import OsmemServer

from bot.wiring.elastic import es_client
from tests.fakes.faulty import closed_port_url, fake_backend
from tools.base import Toolbox, call_tool
from tools.logs.model import LogEntry, search_text_from_query
from tools.logs.query import ElasticsearchLogs, LogSource, LogTools, SqliteLogs, signature_key, trim_stack
from tools.results import new_signatures_of, signatures_of
from tools.timerange import iso_z

NOW = datetime(2026, 11, 28, 16, 0, tzinfo=UTC)
STACK = "\n".join(
    ["java.sql.SQLTransientConnectionException: HikariPool-1 - Connection is not available"]
    + [f"\tat com.zaxxer.hikari.pool.HikariPool.frame{i}(HikariPool.java:{100 + i})" for i in range(12)]
    + ["Caused by: org.postgresql.util.PSQLException: FATAL: sorry, too many clients already", "\t... 9 more"]
)


LOG_MAPPINGS = {
    "properties": {
        "@timestamp": {"type": "date"},
        **{f: {"type": "keyword"} for f in ("service", "level", "logger", "host", "trace_id")},
        "message": {"type": "text"},
        "stack_trace": {"type": "text"},
    }
}


def doc(minutes_ago: float, level: str, message: str, service: str = "order", **extra: str) -> dict[str, str]:
    at = NOW - timedelta(minutes=minutes_ago)
    return {
        "@timestamp": at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "service": service,
        "level": level,
        "message": message,
        "logger": "app",
        "host": f"{service}-1",
        "trace_id": f"t{int(minutes_ago)}",
        **extra,
    }


def sample_docs() -> list[dict[str, str]]:
    docs = [
        doc(
            50 - i,
            "ERROR",
            f"HikariPool-1 - Connection is not available, request timed out after {30000 + i}ms",
            stack_trace=STACK,
        )
        for i in range(30)
    ]
    docs += [
        doc(40 - i, "ERROR", f"Payment call to 10.0.3.{i}:8443 failed for order {i:08x}-aaaa-bbbb-cccc-{i:012x}")
        for i in range(5)
    ]
    docs += [doc(30 - i, "WARN", "slow query on orders: 2300 ms") for i in range(10)]
    docs += [doc(59 - i, "INFO", f"GET /api/orders/{i} -> 200") for i in range(40)]
    docs += [
        doc(10, "INFO", "Zahlung bestätigt für Bestellung ü-42 (你好)"),
        doc(5, "ERROR", "other", service="payment"),
    ]
    docs.append(doc(200, "ERROR", "outside the window: request timed out"))
    return docs


@pytest.fixture
def logs_db(tmp_path: Path) -> Path:
    path = tmp_path / "logs.db"
    lines = [json.dumps(d) for d in sample_docs()]
    assert SqliteLogs(path).ingest_jsonl(lines) == len(lines)
    return path


@pytest.fixture(scope="module")
def es_logs_url() -> Iterator[str]:
    """osmem-server (OpenSearch API) holding the same documents in `logs-test`, read through `logs-*`."""
    server = OsmemServer.start(japanese=False)
    try:
        es = es_client(server.url, plain_json=True)
        es.indices.create(index="logs-test", mappings=LOG_MAPPINGS)
        helpers.bulk(es, ({"_index": "logs-test", "_source": d} for d in sample_docs()), refresh=True)
        yield server.url
    finally:
        server.close()


@pytest.fixture(params=["sqlite", "elasticsearch"])
def toolbox(request: pytest.FixtureRequest, logs_db: Path) -> Toolbox:
    """The same tool over both log sources: every behaviour below must hold for each."""
    if request.param == "sqlite":
        source: LogSource = SqliteLogs(logs_db)
    else:
        source = ElasticsearchLogs(es_client(request.getfixturevalue("es_logs_url"), plain_json=True), "logs-*")
    return Toolbox(LogTools(source, clock=lambda: NOW).specs())


def query(toolbox: Toolbox, **args):
    return call_tool(toolbox, "query_logs", {"service": "order", **args})


def test_observation_gives_counts_then_signatures_then_newest_lines(toolbox):
    text = query(toolbox).text
    counts, signatures, newest = text.index("by level:"), text.index("top ERROR/FATAL signatures"), text.index("newest")
    assert counts < signatures < newest
    assert "matched 86 lines · by level: ERROR 35 · WARN 10 · INFO 41" in text
    assert "newest 86 of 86 matching lines (repeats folded):" in text


def test_error_messages_cluster_into_normalised_signatures_with_first_and_last_seen(toolbox):
    text = query(toolbox).text
    line = next(x for x in text.splitlines() if x.startswith("1. "))
    assert line.startswith("1. 30x HikariPool-1 - Connection is not available, request timed out after <n>ms")
    assert "[java.sql.SQLTransientConnectionException]" in line
    assert "first 15:10:00 last 15:39:00" in line
    assert "2. 5x Payment call to <ip> failed for order <uuid>" in text


def test_example_stack_trace_is_trimmed_but_keeps_the_cause(toolbox):
    text = query(toolbox).text
    assert "at com.zaxxer.hikari.pool.HikariPool.frame2(HikariPool.java:102)" in text
    assert "frame3(" not in text
    assert "Caused by: org.postgresql.util.PSQLException: FATAL: sorry, too many clients already" in text
    assert "… 10 more lines" in text


def test_limit_shows_the_newest_lines_and_says_how_many_matched(toolbox):
    text = query(toolbox, limit=3).text
    lines = text.split("newest 3 of 86 matching lines (repeats folded):\n")[1].splitlines()
    assert len(lines) == 3 and lines[0].startswith("15:50:00 INFO order-1 app: Zahlung bestätigt")


def test_level_filter_narrows_lines_but_counts_still_show_the_mix(toolbox):
    text = query(toolbox, level="warning").text
    assert (
        "level WARN" in text
        and "matched 10 lines · by level, before the level filter: ERROR 35 · WARN 10 · INFO 41" in text
    )
    assert "top WARN signatures (1 of 1, all 10 lines):" in text and "1. 10x slow query on orders: 2300 ms" in text
    newest = text.split("(repeats folded):\n")[1].splitlines()
    assert newest == [
        "15:39:00 WARN order-1 app: slow query on orders: 2300 ms",
        "  … 9 more like this, back to 15:30:00",
    ]


def test_phrase_prefix_and_or_searches(toolbox):
    assert "matched 30 lines" in query(toolbox, query='"request timed out"').text
    assert "matched 5 lines" in query(toolbox, query="paym*").text
    assert "matched 15 lines" in query(toolbox, query="slow OR payment").text
    assert "matched 1 lines" in query(toolbox, query="bestätigt 你好").text


def test_a_prefix_with_a_dash_or_dot_in_it_matches_the_words_it_joins(toolbox):
    # "HikariPool-1 - Connection ..." is indexed as the words hikaripool, 1, connection: the model writes the name
    # as the logs spell it, with its dash, and the search must still find it (glued, it would match nothing)
    assert "matched 30 lines" in query(toolbox, query="HikariPool-1*").text
    assert "matched 30 lines" in query(toolbox, query="HikariPool-Conn*").text
    assert [(t.text, t.prefix) for t in search_text_from_query("backup-verify.sh*").terms] == [
        ("backup", False),
        ("verify", False),
        ("sh", True),
    ]


@pytest.mark.parametrize(
    "text",
    [
        '"',
        "AND(",
        "*",
        ":",
        "ü",
        'timeout"',
        "NEAR(a b)",
        "-x",
        "^",
        "{}",
        "message:timeout",
        '"unbalanced phrase',
        "* OR *",
        "a AND OR NOT b",
        "col:val AND (x OR",
        "\\",
        "'; DROP TABLE logs; --",
        "\x00",
        "🔥",
    ],
)
def test_any_query_text_is_searched_safely_never_a_syntax_error(toolbox, text):
    result = query(toolbox, query=text)
    assert result.status in ("ok", "no_data"), result.text
    assert "logs of order" in result.text


def test_window_excludes_older_lines(toolbox):
    assert "matched 30 lines" in query(toolbox, query="timed out", range="1h").text
    assert "matched 31 lines" in query(toolbox, query="timed out", range="4h").text
    start, end = "2026-11-28T15:00Z", "2026-11-28T15:20Z"
    assert "matched 10 lines" in query(toolbox, query="timed out", start=start, end=end).text


def test_every_service_with_star(toolbox):
    assert "matched 87 lines" in query(toolbox, service="*").text


def test_limit_over_the_maximum_names_the_maximum(toolbox):
    result = query(toolbox, limit=5000)
    assert result.status == "error" and "1 to 1,000" in result.text
    assert query(toolbox, limit=0).status == "error"


def test_unknown_service_and_level_name_the_valid_choices(toolbox):
    result = query(toolbox, service="ordr")
    assert (
        result.status == "error" and "known: order, payment" in result.text and "Did you mean 'order'?" in result.text
    )
    result = query(toolbox, level="LOUD")  # a level word these logs do not hold: no line, and the levels they do
    assert (
        result.status == "no_data" and "no line in the window is at LOUD (they are at ERROR, WARN, INFO)" in result.text
    )
    result = query(toolbox, level="<b>")
    assert result.status == "error" and "FATAL, ERROR, WARN, INFO, DEBUG" in result.text


def test_nothing_matching_is_no_data(toolbox):
    result = query(toolbox, query="zzzqqq")
    assert result.status == "no_data" and "matched 0 lines" in result.text


def test_missing_log_store_is_a_clear_observation(tmp_path):
    box = Toolbox(LogTools(SqliteLogs(tmp_path / "absent.db")).specs())
    result = call_tool(box, "query_logs", {"service": "order"})
    assert result.status == "error" and "does not exist" in result.text


def test_ingest_appends_and_uses_wal(logs_db):
    store = SqliteLogs(logs_db)
    assert store.ingest_jsonl([json.dumps(doc(1, "ERROR", "late arrival", service="cart"))]) == 1
    assert "cart" in store.services()
    assert (logs_db.parent / "logs.db-wal").exists() or _journal_mode(logs_db) == "wal"


def _journal_mode(path: Path) -> str:
    import sqlite3

    with sqlite3.connect(path) as db:
        return str(db.execute("PRAGMA journal_mode").fetchone()[0])


def test_sandbox_logs_show_the_pool_timeouts(sandbox, sandbox_tools):
    start = (sandbox.incident_at - timedelta(minutes=30)).strftime("%Y-%m-%dT%H:%MZ")
    end = (sandbox.incident_at + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%MZ")
    result = call_tool(sandbox_tools, "query_logs", {"service": "order", "start": start, "end": end, "limit": 20})
    assert result.status == "ok"
    assert "1. " in result.text and "HikariPool-1 - Connection is not available" in result.text


def test_search_terms_keep_words_phrases_and_prefixes_only():
    parsed = search_text_from_query('timeout AND( "pool exhausted" conn* OR -x ""')
    assert [(t.text, t.prefix) for t in parsed.terms] == [
        ("timeout", False),
        ("pool exhausted", False),
        ("conn", True),
        ("x", False),
    ]
    assert parsed.any_of


def test_signature_key_has_a_slot_for_every_id_but_keeps_words():
    entry = LogEntry(NOW, "order", "ERROR", "user 42 from 192.168.1.5:80 hit deadbeef12 id 0x1f at 3.5s")
    assert signature_key(entry) == "user <*> from <*> hit <*> id <*> at <*>"
    assert trim_stack("") == ()


def test_elasticsearch_down_is_a_clear_observation():
    box = Toolbox(LogTools(ElasticsearchLogs(es_client(closed_port_url(), plain_json=True))).specs())
    result = call_tool(box, "query_logs", {"service": "order"})
    assert result.status == "error" and "Elasticsearch is unreachable" in result.text


def test_elasticsearch_slow_is_a_clear_observation():
    with fake_backend(body={}, delay_s=3.0, headers={"X-Elastic-Product": "Elasticsearch"}) as slow:
        client = es_client(slow.url, plain_json=True, timeout_s=0.3, max_retries=0)
        result = call_tool(Toolbox(LogTools(ElasticsearchLogs(client)).specs()), "query_logs", {"service": "order"})
    assert result.status == "error" and "did not answer in time" in result.text


def test_elasticsearch_error_keeps_the_backend_text():
    body = {
        "error": {
            "root_cause": [{"type": "x", "reason": "all shards failed: too_many_clauses"}],
            "type": "x",
            "reason": "all shards failed: too_many_clauses",
        },
        "status": 500,
    }
    with fake_backend(status=500, body=body, headers={"X-Elastic-Product": "Elasticsearch"}) as failing:
        client = es_client(failing.url, plain_json=True, max_retries=0)
        result = call_tool(Toolbox(LogTools(ElasticsearchLogs(client)).specs()), "query_logs", {"service": "order"})
    assert result.status == "error" and "too_many_clauses" in result.text


def test_sandbox_logs_in_elasticsearch_show_the_pool_timeouts(sandbox, es_sandbox):
    tools = LogTools(ElasticsearchLogs(es_client(es_sandbox, plain_json=True), "logs-*"))
    start = (sandbox.incident_at - timedelta(minutes=30)).strftime("%Y-%m-%dT%H:%MZ")
    result = tools.query_logs("order", "Hikari*", start=start, limit=5)
    assert result.status == "ok" and "HikariPool-1 - Connection is not available" in result.text


def test_schema_shows_the_configured_default_limit(logs_db):
    [spec] = LogTools(SqliteLogs(logs_db), default_limit=25, max_limit=200, clock=lambda: NOW).specs()
    assert spec.parameters["properties"]["limit"]["default"] == 25
    assert "limit: 1-200 newest lines" in spec.description  # the default is stated once, in the schema
    result = call_tool(Toolbox([spec]), "query_logs", {"service": "order"})
    assert "newest 25 of 86 matching lines" in result.text


def test_ingest_skips_malformed_lines_and_keeps_the_rest(tmp_path):
    good = json.dumps(doc(1, "ERROR", "kept"))
    lines = [good, "{not json", json.dumps({"service": "order", "message": "no timestamp"}), "", "[1, 2]", good]
    assert SqliteLogs(tmp_path / "x.db").ingest_jsonl(lines) == 2


def test_warn_lines_get_their_own_signature_section(toolbox):
    result = query(toolbox, range="1h")
    text = result.text
    warn = text.split("top WARN signatures", 1)[1].split("newest ", 1)[0]
    assert "10x slow query on orders: 2300 ms" in warn
    assert "slow query" not in text.split("top WARN signatures", 1)[0]  # the error section stays errors
    errors = signatures_of(result)
    assert errors and all("slow query" not in s.template for s in errors)
    assert [(s.count, s.template) for s in signatures_of(result, "WARN")][:1] == [(10, "slow query on orders: 2300 ms")]


def test_an_onset_splits_the_window_and_lists_what_is_new_after_it(toolbox):
    onset = iso_z(NOW - timedelta(minutes=32))
    result = query(toolbox, range="1h", onset=onset)
    assert (
        "new since 15:23:00 (the onset 15:28:00 less one rate window), any level, absent from 14:23:00" in result.text
    )
    new = {s.template: s.count for s in new_signatures_of(result)}
    assert new == {"slow query on orders: 2300 ms": 10, "Zahlung bestätigt für Bestellung ü-42 (你好)": 1}


def test_an_onset_with_nothing_new_says_so(toolbox):
    result = query(toolbox, range="1h", query="HikariPool", onset=iso_z(NOW - timedelta(minutes=40)))
    assert "absent from 14:15:00–15:15:00: none (1 of the 1 signatures after it were there before)" in result.text
    assert new_signatures_of(result) == ()


def test_an_onset_outside_the_window_is_refused(toolbox):
    result = query(toolbox, range="1h", onset=iso_z(NOW - timedelta(hours=3)))
    assert result.status == "error" and "outside the window" in result.text
