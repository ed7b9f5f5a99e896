"""query_logs over Loki through call_tool, against FakeLoki loaded with the sandbox's logs: the same observation
as the SQLite store gives, LogQL that no input can break, and Loki's faults as observations."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakes.faulty import closed_port_url
from tests.fakes.loki import FakeLoki, lines_from_jsonl
from tools.base import Toolbox, call_tool
from tools.logs.loki import LokiLogs, line_filters
from tools.logs.model import level_names, search_text_from_query
from tools.logs.query import LogTools, SqliteLogs

TENANT = "team-orders"


@pytest.fixture(scope="module")
def loki(sandbox: Any) -> Iterator[FakeLoki]:
    fake = FakeLoki(lines_from_jsonl(sandbox.logs_jsonl), tenant=TENANT)
    yield fake
    fake.stop()


def boxes(loki: FakeLoki, sandbox: Any) -> tuple[Toolbox, Toolbox]:
    clock = lambda: sandbox.now  # noqa: E731
    over_loki = Toolbox(LogTools(LokiLogs(loki.url, tenant=TENANT), clock=clock).specs())
    over_sqlite = Toolbox(LogTools(SqliteLogs(sandbox.logs_db), clock=clock).specs())
    return over_loki, over_sqlite


@pytest.mark.parametrize(
    "args",
    [
        {"service": "order", "range": "2d", "level": "ERROR", "limit": 5},
        {"service": "order", "range": "2d", "query": "connection OR timeout*", "limit": 3},
        {"service": "*", "range": "2d", "query": '"is not available" hikari', "limit": 2},
        {"service": "orders-db", "range": "2d", "limit": 10},
        {"service": "payment", "range": "30m", "query": "nothing-like-this"},
    ],
)
def test_loki_gives_the_same_observation_as_the_sqlite_store(
    loki: FakeLoki, sandbox: Any, args: dict[str, Any]
) -> None:
    over_loki, over_sqlite = boxes(loki, sandbox)
    got, expected = call_tool(over_loki, "query_logs", args), call_tool(over_sqlite, "query_logs", args)
    assert (got.status, got.text) == (expected.status, expected.text)


def test_the_clustered_signature_survives_the_trip_through_loki(loki: FakeLoki, sandbox: Any) -> None:
    over_loki, _ = boxes(loki, sandbox)
    text = call_tool(over_loki, "query_logs", {"service": "order", "range": "2d", "level": "ERROR"}).text
    assert "x HikariPool-1 - Connection is not available" in text
    assert "[java.sql.SQLTransientConnectionException]" in text


def test_hostile_search_text_stays_a_quoted_line_filter(loki: FakeLoki, sandbox: Any) -> None:
    over_loki, _ = boxes(loki, sandbox)
    hostile = 'x"} |= "" or {service=~".+ `; drop'
    first = len(loki.requests)  # the stand-in is shared: read only this test's requests
    result = call_tool(over_loki, "query_logs", {"service": "order", "range": "2d", "query": hostile})
    assert result.status == "no_data"  # a valid query that matched nothing, not a 400 parse error
    sent = loki.requests[first:]
    signature_queries = [r for r in sent if r.startswith("/loki/api/v1/query_range")]
    assert signature_queries  # the ERROR/FATAL and the WARN signature searches, each with the filters quoted
    error_levels = "|".join([*level_names("ERROR"), *level_names("FATAL")])
    assert any(
        r.startswith(f'/loki/api/v1/query_range {{service="order", level=~"(?i)({error_levels})"}} |~ "(?i)')
        for r in signature_queries
    )
    assert not any('{service=~".+' in r for r in sent)  # the hostile selector never reached LogQL raw
    assert line_filters(search_text_from_query("a.b (c)*")) == ' |~ "(?i)\\\\ba\\\\.b\\\\b" |~ "(?i)\\\\bc"'


def test_an_unknown_service_lists_loki_label_values(loki: FakeLoki, sandbox: Any) -> None:
    over_loki, _ = boxes(loki, sandbox)
    result = call_tool(over_loki, "query_logs", {"service": "ordr"})
    assert result.status == "error" and "Did you mean 'order'?" in result.text


def test_a_missing_tenant_is_lokis_own_error(loki: FakeLoki, sandbox: Any) -> None:
    box = Toolbox(LogTools(LokiLogs(loki.url), clock=lambda: sandbox.now).specs())
    result = call_tool(box, "query_logs", {"service": "order"})
    assert result.status == "error" and "Loki answered 401 while listing services: no org id" in result.text


def test_a_short_retry_after_is_waited_for_a_long_one_reported(loki: FakeLoki, sandbox: Any) -> None:
    over_loki, _ = boxes(loki, sandbox)
    call_tool(over_loki, "query_logs", {"service": "order"})  # services cached, so the next calls go to search
    loki.fail(429, "too many outstanding requests", retry_after=1)
    assert call_tool(over_loki, "query_logs", {"service": "order", "range": "2d", "limit": 1}).status == "ok"
    loki.fail(429, "too many outstanding requests", retry_after=60)
    result = call_tool(over_loki, "query_logs", {"service": "order", "range": "2d", "limit": 1})
    assert result.text == (
        "Loki answered 429 while counting log lines: too many outstanding requests; Retry-After 60 s"
    )


def test_a_failing_or_unreachable_loki_is_an_error_observation(loki: FakeLoki, sandbox: Any) -> None:
    over_loki, _ = boxes(loki, sandbox)
    call_tool(over_loki, "query_logs", {"service": "order"})
    loki.fail(500, "rpc error: code = Canceled desc = context canceled")
    result = call_tool(over_loki, "query_logs", {"service": "order"})
    assert result.text == (
        "Loki answered 500 while counting log lines: rpc error: code = Canceled desc = context canceled"
    )
    down = Toolbox(LogTools(LokiLogs(closed_port_url(), timeout_s=2)).specs())
    assert "Loki unreachable while listing services" in call_tool(down, "query_logs", {"service": "order"}).text


def test_check_names_the_services_loki_holds(loki: FakeLoki) -> None:
    assert LokiLogs(loki.url, tenant=TENANT).check() == f"ready at {loki.url}; 5 services under label 'service'"
