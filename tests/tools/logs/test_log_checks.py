"""The logs part of `opsbot doctor`: discovered settings pass; a misspelt field, pattern, label or service, a level
that is no level, and a level the filter cannot find each fail, naming the setting, the value and a "did you mean"."""

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
from tests.fakes.loki import FakeLoki, Line
from tools.discovery import Finding, problems_of
from tools.logs.checks import check_logs
from tools.logs.discovery import discover_logs
from tools.logs.loki import LokiLogs
from tools.logs.model import LogFields
from tools.logs.query import ElasticsearchLogs, SqliteLogs

NOW = datetime.now(UTC).replace(microsecond=0)
TOPOLOGY = ("order", "inventory", "orders-db")
ECS_FIELDS = LogFields(
    service="service.name",
    level="log.level",
    stack_trace="error.stack_trace",
    trace_id="trace.id",
    logger="log.logger",
    host="host.name",
)


def ecs_doc(service: str, minutes_ago: int, level: str) -> dict[str, Any]:
    return {
        "@timestamp": (NOW - timedelta(minutes=minutes_ago)).isoformat(),
        "service": {"name": service},
        "log": {"level": level, "logger": "app"},
        "message": "m",
        "host": {"name": "h"},
        "trace": {"id": "t"},
        "error": {"type": "E", "stack_trace": "E: x"} if level == "error" else {},
    }


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    server = OsmemServer.start(japanese=False)
    try:
        es = es_client(server.url, plain_json=True)
        day = NOW.strftime("%Y.%m.%d")
        docs = [
            (f"logs-{svc}-{day}", ecs_doc(svc, m, lv))
            for svc in ("order", "inventory")
            for m, lv in ((1, "error"), (2, "INFO"))
        ]
        docs += [("padded-logs", {**ecs_doc("order", 1, "ERROR "), "@timestamp": NOW.isoformat()})]
        docs += [("pino-logs", {"@timestamp": NOW.isoformat(), "level": 50, "service": "cart", "message": "m"})]
        es.indices.create(index="keyword-time-logs", mappings={"properties": {"@timestamp": {"type": "keyword"}}})
        docs += [
            ("keyword-time-logs", {"@timestamp": NOW.isoformat(), "level": "INFO", "service": "a", "message": "m"})
        ]
        helpers.bulk(es, ({"_index": index, "_source": doc} for index, doc in docs), refresh=True)
        yield es
    finally:
        server.close()


def es_source(client: Any, pattern: str = "logs-{service}-*", **fields: str) -> ElasticsearchLogs:
    base = LogFields(**{**ECS_FIELDS.__dict__, **fields})
    return ElasticsearchLogs(client, pattern, base)


def problems(found: list[Finding]) -> list[str]:
    return [p for f in problems_of(found) for p in f.problems]


def test_discovered_settings_pass_every_check(client: Any) -> None:
    chosen = {
        f.setting.removeprefix("logs.").removesuffix("_field"): str(f.value) for f in discover_logs(client, "logs-*")
    }
    fields = LogFields(
        service=chosen["service"],
        level=chosen["level"],
        stack_trace=chosen["stack"],
        trace_id=chosen["trace"],
        logger=chosen["logger"],
        host=chosen["host"],
        error_type=chosen["error_type"],
    )
    found = check_logs(ElasticsearchLogs(client, chosen["index_pattern"], fields), ("order", "inventory"))
    assert problems(found) == []
    assert any(f.setting == "logs.level_field" and "read in any case as ERROR, INFO" in f.evidence for f in found)


def test_a_misspelt_level_field_fails_with_did_you_mean(client: Any) -> None:
    found = check_logs(es_source(client, level="log.levl"), ())
    [problem] = problems(found)
    assert problem.startswith("logs.level_field = 'log.levl' is not in the mapping of logs-{service}-* (did you mean")
    assert "'log.level'" in problem


def test_an_index_pattern_that_matches_nothing_fails_with_did_you_mean(client: Any) -> None:
    [finding] = check_logs(es_source(client, "logs-ordr-*"), ())
    [problem] = finding.problems
    assert problem.startswith("logs.index_pattern = 'logs-ordr-*' matches no index or data stream (did you mean")
    assert "'logs-order-*'" in problem


def test_a_misspelt_topology_service_fails_and_one_without_logs_is_said(client: Any) -> None:
    found = check_logs(es_source(client), ("order", "inventroy", "orders-db"))
    assert problems(found) == [
        "service 'inventroy' has no logs under logs.service_field = 'service.name' (did you mean 'inventory'?)"
    ]
    services = next(f for f in found if f.setting == "logs.service_field" and "services with logs" in f.evidence)
    assert "no logs for orders-db (not every service logs here)" in services.evidence


def test_level_values_the_filter_cannot_find_fail(client: Any) -> None:
    found = check_logs(es_source(client, "padded-logs"), ())
    assert "the ERROR filter on logs.level_field finds 0 of 1 ERROR lines" in problems(found)


def test_levels_that_are_no_level_and_a_timestamp_that_is_no_date_fail(client: Any) -> None:
    pino = check_logs(es_source(client, "pino-logs", service="service", level="level"), ())
    keyword_time = check_logs(es_source(client, "keyword-time-logs", service="service", level="level"), ())
    assert "logs.level_field = 'level' holds no known level (values: 50)" in problems(pino)
    assert "logs.timestamp_field = '@timestamp' is mapped keyword, not as a date" in problems(keyword_time)


def test_loki_labels_are_checked_with_did_you_mean() -> None:
    stamp = int(NOW.timestamp() * 1e9)
    fake = FakeLoki([Line(stamp, (("service", "order"), ("level", "error")), json.dumps({"message": "m"}))])
    try:
        good = check_logs(LokiLogs(fake.url), ("order",))
        misspelt = check_logs(LokiLogs(fake.url, level_label="levle"), ("order",))
    finally:
        fake.stop()
    assert problems(good) == []
    assert problems(misspelt) == [
        f"loki.level_label = 'levle' is no stream label of {fake.url} (did you mean 'level'?)"
    ]


def test_the_sqlite_store_is_checked_for_lines_and_services(tmp_path: Path) -> None:
    missing = check_logs(SqliteLogs(tmp_path / "absent.db"), TOPOLOGY)
    store = SqliteLogs(tmp_path / "logs.db")
    store.ingest_jsonl(
        [json.dumps({"@timestamp": NOW.isoformat(), "service": "order", "level": "warning", "message": "m"})]
    )
    found = check_logs(store, ("order", "ordre"))
    assert "does not exist (load logs with `opsbot logs ingest FILE`)" in problems(missing)[0]
    assert problems(found) == [
        "service 'ordre' has no logs under logs.service_field = 'service' (did you mean 'order'?)"
    ]
