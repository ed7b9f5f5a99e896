"""Levels as loggers write them (`error`, `Error`, `ERR`, `warning`) are one level on every backend, and the error
type field is shown and counted: never "no ERROR lines in this window" next to "by level: error 3"."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from elasticsearch import helpers
from osmem_server import OsmemServer

from bot.wiring.elastic import es_client
from tests.fakes.loki import FakeLoki, Line
from tools.base import Toolbox, call_tool
from tools.logs.loki import LokiLogs
from tools.logs.model import LogFields
from tools.logs.query import ElasticsearchLogs, LogSource, LogTools, SqliteLogs

NOW = datetime(2026, 11, 28, 16, 0, tzinfo=UTC)
POOL_ERROR = "java.sql.SQLTransientConnectionException"
POOL_MESSAGE = "HikariPool-1 - Connection is not available, request timed out after 30000ms"
WRITTEN = [("error", 5), ("Error", 6), ("ERR", 7), ("warning", 8), ("WARN", 9), ("info", 10)]
KEYWORD, TEXT, DATE = {"type": "keyword"}, {"type": "text"}, {"type": "date"}


def docs() -> list[dict[str, Any]]:
    out = []
    for level, minutes in WRITTEN:
        doc: dict[str, Any] = {
            "@timestamp": (NOW - timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z"),
            "service": "order",
            "level": level,
            "message": POOL_MESSAGE if level.upper().startswith("ER") else f"slow request ({level})",
        }
        if level.upper().startswith("ER"):
            doc["error"] = {"type": POOL_ERROR}
        out.append(doc)
    return out


@pytest.fixture(scope="module")
def es_url() -> Iterator[str]:
    """Three indices holding the same documents: level mapped keyword, text with .keyword (dynamic), text only."""
    server = OsmemServer.start(japanese=False)
    try:
        es = es_client(server.url, plain_json=True)
        base = {"@timestamp": DATE, "message": TEXT, "error": {"properties": {"type": KEYWORD}}}
        es.indices.create(index="lc-keyword", mappings={"properties": {**base, "service": KEYWORD, "level": KEYWORD}})
        es.indices.create(index="lc-text", mappings={"properties": {**base, "service": KEYWORD, "level": TEXT}})
        actions = [{"_index": index, "_source": d} for index in ("lc-keyword", "lc-text", "lc-dynamic") for d in docs()]
        helpers.bulk(es, actions, refresh=True)
        yield server.url
    finally:
        server.close()


@pytest.fixture(scope="module")
def loki() -> Iterator[FakeLoki]:
    lines = [
        Line(
            int(datetime.fromisoformat(d["@timestamp"]).timestamp() * 1e9),
            (("service", "order"), ("level", d["level"])),
            json.dumps({k: v for k, v in d.items() if k not in ("@timestamp", "service", "level")}),
        )
        for d in docs()
    ]
    fake = FakeLoki(lines)
    yield fake
    fake.stop()


def lowercase_store(path: Path) -> Path:
    """A store another tool wrote, levels as the application logged them (ours stores the canonical level)."""
    SqliteLogs(path).ingest_jsonl([])
    with sqlite3.connect(path) as db:
        for d in docs():
            at = int(datetime.fromisoformat(d["@timestamp"]).timestamp() * 1000)
            db.execute(
                "INSERT INTO logs (ts_ms, service, level, message) VALUES (?, ?, ?, ?)",
                (at, d["service"], d["level"], d["message"]),
            )
    return path


def source_for(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> LogSource:
    if kind == "sqlite":
        store = SqliteLogs(tmp_path / "logs.db")
        store.ingest_jsonl([json.dumps(d) for d in docs()])
        return store
    if kind == "sqlite-written-elsewhere":
        return SqliteLogs(lowercase_store(tmp_path / "other.db"))
    if kind == "loki":
        return LokiLogs(request.getfixturevalue("loki").url)
    client = es_client(request.getfixturevalue("es_url"), plain_json=True)
    return ElasticsearchLogs(client, kind.removeprefix("es-"))


BACKENDS = ["sqlite", "sqlite-written-elsewhere", "loki", "es-lc-keyword", "es-lc-dynamic", "es-lc-text"]


@pytest.fixture(params=BACKENDS)
def toolbox(request: pytest.FixtureRequest, tmp_path: Path) -> Toolbox:
    return Toolbox(LogTools(source_for(request.param, request, tmp_path), clock=lambda: NOW).specs())


def test_levels_written_in_any_case_or_alias_count_as_one_level(toolbox: Toolbox) -> None:
    text = call_tool(toolbox, "query_logs", {"service": "order", "range": "1h"}).text
    assert "by level: ERROR 3 · WARN 2 · INFO 1" in text
    assert "top ERROR/FATAL signatures" in text and "no ERROR" not in text


def test_a_level_filter_finds_every_spelling_of_the_level(toolbox: Toolbox) -> None:
    errors = call_tool(toolbox, "query_logs", {"service": "order", "range": "1h", "level": "error"})
    warnings = call_tool(toolbox, "query_logs", {"service": "order", "range": "1h", "level": "WARN"})
    assert errors.status == "ok" and "matched 3 lines" in errors.text, errors.text
    assert "3x HikariPool-1 - Connection is not available" in errors.text
    assert "matched 2 lines" in warnings.text and "slow request (warning)" in warnings.text


@pytest.mark.parametrize("kind", ["sqlite", "loki", "es-lc-keyword", "es-lc-dynamic", "es-lc-text"])
def test_the_error_type_names_the_signature(kind: str, request: Any, tmp_path: Path) -> None:
    box = Toolbox(LogTools(source_for(kind, request, tmp_path), clock=lambda: NOW).specs())
    text = call_tool(box, "query_logs", {"service": "order", "range": "1h"}).text
    signature = "3x HikariPool-1 - Connection is not available, request timed out after 30000ms"
    assert f"{signature} [{POOL_ERROR}]" in text


@pytest.mark.parametrize("kind", ["sqlite", "es-lc-keyword", "es-lc-dynamic"])
def test_lines_are_counted_by_error_type(kind: str, request: Any, tmp_path: Path) -> None:
    box = Toolbox(LogTools(source_for(kind, request, tmp_path), clock=lambda: NOW).specs())
    result = call_tool(box, "query_logs", {"service": "order", "range": "1h", "level": "INFO"})
    assert f"by error type: {POOL_ERROR} 3" in result.text  # over every level, like the counts by level
    assert result.data is not None and result.data.counts_by_error_type == {POOL_ERROR: 3}  # type: ignore[attr-defined]


def test_a_keyword_sub_field_is_filtered_on_and_read_from_its_parent(es_url: str) -> None:
    """Dynamic mapping makes `service` text with `service.keyword`: either name, configured, reads `order`."""
    client = es_client(es_url, plain_json=True)
    for configured in ("service", "service.keyword"):
        source = ElasticsearchLogs(client, "lc-dynamic", LogFields(service=configured))
        box = Toolbox(LogTools(source, clock=lambda: NOW).specs())
        result = call_tool(box, "query_logs", {"service": "order", "range": "1h", "level": "INFO"})
        assert source.services() == ["order"]
        assert "matched 1 lines" in result.text
        assert result.data is not None and result.data.newest[0].entry.service == "order"  # type: ignore[attr-defined]


def test_a_level_field_missing_from_the_mapping_is_said_not_silently_empty(es_url: str) -> None:
    source = ElasticsearchLogs(es_client(es_url, plain_json=True), "lc-keyword", LogFields(level="log.level"))
    result = call_tool(Toolbox(LogTools(source, clock=lambda: NOW).specs()), "query_logs", {"service": "order"})
    assert "not checked: the level field 'log.level' is not in the mapping of lc-keyword" in result.text
