"""query_logs says exactly what it searched: a window to the second, any level the data holds, and signatures that
keep the numbers and identifiers that tell failures apart."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tools.base import Toolbox, call_tool
from tools.logs.model import LogEntry
from tools.logs.query import LogTools, SqliteLogs, signature_key
from tools.logs.shape.cluster import cluster_signatures

NOW = datetime(2026, 11, 28, 12, 30, tzinfo=UTC)


def entry(message: str) -> LogEntry:
    return LogEntry(NOW, "order", "ERROR", message)


@pytest.fixture
def box(tmp_path: Path) -> Toolbox:
    def line(at: datetime, level: str, message: str) -> str:
        return json.dumps({"@timestamp": at.isoformat(), "service": "api", "level": level, "message": message})

    start = datetime(2026, 11, 28, 12, 17, 0, tzinfo=UTC)
    lines = [line(start + timedelta(seconds=20 + n), "HTTP", f"GET /v1/quote {200 + n}") for n in range(4)]
    lines += [line(start + timedelta(seconds=30), "RETRY", "retrying partner call, attempt 2")]
    SqliteLogs(tmp_path / "logs.db").ingest_jsonl(lines)
    return Toolbox(LogTools(SqliteLogs(tmp_path / "logs.db"), clock=lambda: NOW).specs())


def test_a_window_given_to_the_second_is_echoed_to_the_second(box: Toolbox) -> None:
    args = {"service": "api", "start": "2026-11-28T12:17:00Z", "end": "2026-11-28T12:17:10Z"}
    result = call_tool(box, "query_logs", args)
    assert result.status == "no_data"
    assert result.text.startswith("logs of api, 2026-11-28 12:17:00 → 12:17:10 UTC (10s)")
    later = call_tool(box, "query_logs", {**args, "end": "2026-11-28T12:17:25Z"})
    assert "12:17:00 → 12:17:25 UTC (25s)" in later.text and "matched 4 lines" in later.text  # 12:17:20-23


def test_a_level_the_data_holds_beyond_fatal_to_trace_can_be_filtered_on(box: Toolbox) -> None:
    result = call_tool(box, "query_logs", {"service": "api", "range": "1h", "level": "http,retry"})
    assert result.status == "ok" and "matched 5 lines" in result.text and "level HTTP,RETRY" in result.text
    only = call_tool(box, "query_logs", {"service": "api", "range": "1h", "level": "RETRY"})
    assert "matched 1 lines" in only.text and "by level, before the level filter: HTTP 4 · RETRY 1" in only.text


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("HTTP 429 from partner quotes", "HTTP 503 from partner quotes"),
        ("container order OOMKilled, limit 2Gi", "container order OOMKilled, limit 4Gi"),
        ("pool size 4 exhausted", "pool size 16 exhausted"),
        ("upstream answered 502 after 30s", "upstream answered 504 after 30s"),
    ],
)
def test_numbers_that_qualify_a_failure_tell_signatures_apart(first: str, second: str) -> None:
    assert signature_key(entry(first)) != signature_key(entry(second))


def test_identifiers_stay_readable_and_ids_of_any_shape_are_one_slot() -> None:
    lines = [entry(f"failover to {zone} for pod order-7f9c-{n} on v2.8.1") for n, zone in enumerate(["eu-west-1b"] * 3)]
    [signature] = cluster_signatures(lines)
    assert signature.template == "failover to eu-west-1b for pod {order-7f9c-0|order-7f9c-1|order-7f9c-2} on v2.8.1"
    ids = ["8f3a9c2e1b", "12345", "10.0.3.7:8443", "5d0c4f1a-2b3c-4d5e-8f90-a1b2c3d4e5f6", "0x1f", "250ms"]
    assert len({signature_key(entry(f"request {i} rejected")) for i in ids}) == 1
