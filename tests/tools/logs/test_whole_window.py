"""query_logs reads a window the way an SRE reads it, over SQLite, Elasticsearch (osmem) and Loki (the stand-in):
first seen from the whole window, an onset read from the histogram, a search that names what it dropped, a trace
followed across services, structured lines grouped on their message and read whole, numbers kept in a fold, and a
stream whose timestamps cannot place events flagged."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from elasticsearch import helpers
from osmem_server import OsmemServer

from bot.wiring.elastic import es_client
from tests.fakes.loki import FakeLoki, lines_from_jsonl
from tools.base import Toolbox, ToolResult, call_tool
from tools.logs.loki import LokiLogs
from tools.logs.query import ElasticsearchLogs, LogSource, LogTools, SqliteLogs
from tools.logs.summary import LogSummary
from tools.results import log_histogram_of, signatures_of

NOW = datetime(2026, 11, 28, 16, 0, tzinfo=UTC)
ONSET = datetime(2026, 11, 28, 15, 10, tzinfo=UTC)  # the first pool error: the truth first-seen must find
POOL_LINES = 900  # more than the 500 newest lines a sample holds
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
THRESHOLD_AT_THE_END = '"rate_limit_threshold": 250}'
MAPPINGS = {
    "properties": {
        "@timestamp": {"type": "date"},
        **{f: {"type": "keyword"} for f in ("service", "level", "logger", "host", "trace_id", "namespace")},
        "message": {"type": "text"},
    }
}


def doc(at: datetime, service: str, level: str, message: str, **extra: Any) -> dict[str, Any]:
    return {
        "@timestamp": at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "service": service,
        "level": level,
        "message": message,
        "logger": "app",
        "host": f"{service}-1",
        **extra,
    }


def structured(at: datetime, message: str, **fields: Any) -> str:
    line = {"timestamp": at.isoformat(), "level": "error", "service": "limiter", "msg": message, **fields}
    return json.dumps(line)


def incident_docs() -> list[dict[str, Any]]:
    docs = [
        doc(ONSET + timedelta(seconds=3 * i), "order", "ERROR", f"Could not acquire connection after {30000 + i % 7}ms")
        for i in range(POOL_LINES)
    ]
    docs += [doc(NOW - timedelta(minutes=m), "order", "INFO", "GET /health -> 200") for m in range(1, 61)]
    ids = ["8f3a9c2e1b", "12345", "5d0c4f1a-2b3c-4d5e-8f90-a1b2c3d4e5f6", "77", "deadbeef0042", "9"]
    docs += [
        doc(NOW - timedelta(minutes=20, seconds=7 * n), "order", "WARN", f"quote {quote} not found in cache")
        for n, quote in enumerate(ids)
    ]
    docs += [
        doc(NOW - timedelta(minutes=5, seconds=10 * n), "exporter", "INFO", f"/metrics rendered {117.5 - 2.5 * n} MB")
        for n in range(30)  # growing: 45 MB in the oldest line, 117.5 MB in the newest
    ]
    limited = [
        structured(NOW - timedelta(minutes=30, seconds=n), "rate limit exceeded", client=f"c-{n}", memory_mb=1843)
        for n in range(20)
    ]
    limited += [
        structured(NOW - timedelta(minutes=40, seconds=n), "upstream timeout", upstream="auth", elapsed_ms=5000 + n)
        for n in range(10)
    ]
    long_line = structured(NOW - timedelta(minutes=2), "config reloaded", detail="x" * 480, rate_limit_threshold=250)
    docs += [doc(NOW - timedelta(minutes=30, seconds=n), "limiter", "ERROR", line) for n, line in enumerate(limited)]
    docs.append(doc(NOW - timedelta(minutes=2), "limiter", "WARN", long_line))
    for n, service in enumerate(("gateway", "order", "payment")):
        at = NOW - timedelta(minutes=9, seconds=-n)
        docs.append(doc(at, service, "INFO", f"{service} handled POST", trace_id=TRACE))
    docs.append(doc(NOW - timedelta(minutes=9, seconds=-5), "orders-db", "WARN", f"slow statement /* trace={TRACE} */"))
    for n, namespace in enumerate(["namespace-69"] * 5 + ["namespace-12"] * 3):
        at = NOW - timedelta(minutes=15, seconds=n)
        docs.append(doc(at, "api-limiter", "ERROR", "quota exceeded", namespace=namespace, pod=f"api-limiter-{n}"))
    batch = NOW - timedelta(minutes=25)
    docs += [doc(batch, "batch", "INFO", f"imported record {n}") for n in range(50)]
    return docs


@pytest.fixture(scope="module")
def jsonl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("incident") / "logs.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in incident_docs()), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def es_url() -> Iterator[str]:
    server = OsmemServer.start(japanese=False)
    try:
        es = es_client(server.url, plain_json=True)
        es.indices.create(index="logs-incident", mappings=MAPPINGS)
        helpers.bulk(es, ({"_index": "logs-incident", "_source": d} for d in incident_docs()), refresh=True)
        yield server.url
    finally:
        server.close()


@pytest.fixture(scope="module")
def loki(jsonl: Path) -> Iterator[FakeLoki]:
    fake = FakeLoki(lines_from_jsonl(jsonl))
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def sqlite_path(jsonl: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("store") / "logs.db"
    SqliteLogs(path).ingest_jsonl(jsonl.read_text(encoding="utf-8").splitlines())
    return path


@pytest.fixture(params=["sqlite", "elasticsearch", "loki"])
def box(request: pytest.FixtureRequest) -> Toolbox:
    """The same tool over each backend: every behaviour below holds for all three."""
    source: LogSource
    if request.param == "sqlite":
        source = SqliteLogs(request.getfixturevalue("sqlite_path"))
    elif request.param == "elasticsearch":
        source = ElasticsearchLogs(es_client(request.getfixturevalue("es_url"), plain_json=True), "logs-*")
    else:
        source = LokiLogs(request.getfixturevalue("loki").url)
    return Toolbox(LogTools(source, clock=lambda: NOW).specs())


def query(box: Toolbox, **args: Any) -> ToolResult:
    return call_tool(box, "query_logs", {"range": "1h", **args})


def summary_of(result: ToolResult) -> LogSummary:
    assert isinstance(result.data, LogSummary), result.text
    return result.data


def test_first_seen_comes_from_the_whole_window_not_the_newest_lines(box: Toolbox) -> None:
    result = query(box, service="order", level="ERROR")
    top = signatures_of(result)[0]
    assert top.count == POOL_LINES and top.sampled < POOL_LINES  # more lines than the sample held
    assert abs((top.first_at - ONSET).total_seconds()) < 60, result.text
    assert "counts, first and last seen over all 900 lines" in result.text
    assert "first 15:10:00" in result.text


def test_an_onset_is_read_from_the_histogram_in_one_call(box: Toolbox) -> None:
    histogram = summary_of(query(box, service="order")).histogram
    assert histogram is not None and histogram.step_s == 120
    errors = histogram.at_levels()
    assert sum(errors) == POOL_LINES and errors[:5] == (0,) * 5 and min(errors[5:27]) == 40
    assert [c.at for c in histogram.changes][:1] == [ONSET]
    times, per_minute = histogram.series()
    assert times[5] == ONSET and per_minute[6] == 20.0  # the error-log rate, as a detector reads a metric


def test_an_or_query_of_fifteen_terms_is_run_whole(box: Toolbox) -> None:
    terms = "refused OR reset OR 429 OR 500 OR 502 OR 503 OR 504 OR error OR fail* OR denied OR abort OR panic"
    result = query(box, service="order", query=terms + " OR killed OR oom OR acquire")  # only the 15th matches
    assert result.status == "ok" and "search:" not in result.text
    assert summary_of(result).total == POOL_LINES


def test_a_query_beyond_the_term_limit_names_the_terms_it_dropped(box: Toolbox) -> None:
    terms = " OR ".join(f"word{n}" for n in range(30))
    text = query(box, service="order", query=terms).text
    assert "search: searched the first 24 of 30 terms; dropped: word24 word25 word26 word27 word28 word29" in text


def test_a_trace_id_finds_every_services_lines_in_time_order(box: Toolbox) -> None:
    result = query(box, service="order", trace_id=TRACE)
    services = [line.entry.service for line in reversed(summary_of(result).newest)]
    assert services == ["gateway", "order", "payment", "orders-db"], result.text  # the last by its message alone
    assert f"trace {TRACE} in every service's logs" in result.text


def test_one_message_is_one_signature_whatever_the_shape_of_its_id(box: Toolbox) -> None:
    quotes = [s for s in signatures_of(query(box, service="order"), "WARN") if s.template.startswith("quote")]
    assert [(s.count, s.template) for s in quotes] == [(6, "quote <id> not found in cache")]


def test_json_lines_group_on_their_message_and_keep_their_numbers(box: Toolbox) -> None:
    result = query(box, service="limiter", level="ERROR")
    assert {(s.count, s.template) for s in signatures_of(result)} == {
        (20, "rate limit exceeded"),
        (10, "upstream timeout"),
    }, result.text
    assert "memory_mb=1843" in result.text  # a field that carries a number, beside the example
    assert "elapsed_ms 5000 → 5009" in result.text or "elapsed_ms 5009 → 5000" in result.text


def test_a_600_character_json_line_is_read_whole_on_request(box: Toolbox) -> None:
    cut = query(box, service="limiter", level="WARN")
    assert THRESHOLD_AT_THE_END not in cut.text
    whole = query(box, service="limiter", level="WARN", full=1)
    line = summary_of(whole).whole_lines[0].line
    assert len(line) > 600 and line in whole.text and line.endswith(THRESHOLD_AT_THE_END)


def test_a_fold_keeps_the_numbers_of_its_lines(box: Toolbox) -> None:
    result = query(box, service="exporter")
    fold = summary_of(result).newest[0]
    assert fold.more == 29 and [(n.first, n.last, n.low, n.high) for n in fold.numbers] == [(45, 117.5, 45, 117.5)]
    assert "… 29 more like this, back to 15:50:10; rendered 45 → 117.5" in result.text


def test_a_stream_whose_lines_sit_in_one_second_is_flagged(box: Toolbox) -> None:
    result = query(box, service="batch")
    doubt = summary_of(result).timestamps
    assert doubt is not None and doubt.lines == 50 and doubt.spread_s < 1
    assert "timestamps: all 50 lines sit within 0.0 s (15:35:00)" in result.text
    assert "change:" not in result.text
    assert summary_of(query(box, service="order")).timestamps is None


def test_a_namespace_scopes_the_lines_and_each_line_carries_it(box: Toolbox) -> None:
    result = query(box, service="api-limiter", namespace="namespace-69")
    summary = summary_of(result)
    assert summary.total == 5 and "namespace namespace-69" in result.text.splitlines()[0]
    assert {line.entry.namespace for line in summary.newest} == {"namespace-69"}
    assert summary_of(query(box, service="api-limiter")).total == 8


def test_a_structured_lines_field_can_be_filtered_on(box: Toolbox) -> None:
    result = query(box, service="limiter", where="upstream=auth")
    assert summary_of(result).total == 10 and "where upstream=auth" in result.text.splitlines()[0]


def test_the_error_log_rate_is_a_series_in_total_and_per_signature(box: Toolbox) -> None:
    result = query(box, service="order", level="ERROR")
    histogram, top = log_histogram_of(result), signatures_of(result)[0]
    assert histogram is not None
    found = histogram.signature_series(top.key)
    assert found is not None
    times, per_minute = found
    assert sum(per_minute) * histogram.step_s / 60 == POOL_LINES and times == histogram.series()[0]


def test_an_onset_in_a_short_window_compares_with_the_hour_before_the_window(box: Toolbox) -> None:
    """The baseline reaches back an hour before the window starts: its lines fall before the first bucket."""
    result = query(
        box, service="order", start="2026-11-28T15:09:00Z", end="2026-11-28T15:14:00Z", onset="2026-11-28T15:11:00Z"
    )
    contrast = summary_of(result).onset
    assert contrast is not None and contrast.new is not None, result.text
    new = [s.example.message for s in contrast.new.top]
    assert any("Could not acquire connection" in line for line in new), result.text
    assert not any("GET /health" in line for line in new), result.text  # there all along: not new
