"""discover_logs over stacks built here in three conventions (ECS in daily indices, OpenTelemetry, plain JSON), Loki,
and JSON-lines files: every choice comes with evidence, and what is not found says so."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from elasticsearch import helpers
from osmem_server import OsmemServer

from bot.wiring.elastic import es_client
from tests.fakes.loki import FakeLoki, Line
from tools.discovery import Finding
from tools.logs.discovery import discover_log_lines, discover_logs, discover_loki_logs, pattern_finding
from tools.logs.indices import index_name, names_from_resolve
from tools.logs.loki import LokiLogs

NOW = datetime.now(UTC).replace(microsecond=0)
SERVICES = ("inventory", "order", "payment")
POOL_ERROR = "java.sql.SQLTransientConnectionException"
KEYWORD, TEXT, DATE = {"type": "keyword"}, {"type": "text"}, {"type": "date"}


def stamp(minutes_ago: int) -> str:
    return (NOW - timedelta(minutes=minutes_ago)).isoformat().replace("+00:00", "Z")


def ecs_doc(service: str, minutes_ago: int, level: str) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "@timestamp": stamp(minutes_ago),
        "service": {"name": service},
        "log": {"level": level, "logger": f"com.acme.{service}.Api"},
        "message": "Connection is not available" if level == "error" else "GET /items -> 200",
        "host": {"name": f"{service}-7f9c"},
        "trace": {"id": f"t{minutes_ago}"},
    }
    if level == "error":
        doc["error"] = {"type": POOL_ERROR, "stack_trace": f"{POOL_ERROR}: pool\n\tat a.b(C.java:1)"}
    return doc


def otel_doc(minutes_ago: int, severity: str) -> dict[str, Any]:
    return {
        "@timestamp": stamp(minutes_ago),
        "severity_text": severity,
        "body": "payment declined" if severity == "Error" else "payment accepted",
        "resource": {"service": {"name": "payment"}},
        "trace_id": f"{minutes_ago:032x}",
        "attributes": {
            "code": {"namespace": "pay.Api"},
            **({"exception": {"type": "DeclinedError"}} if severity == "Error" else {}),
        },
    }


def plain_doc(minutes_ago: int, level: str) -> dict[str, Any]:
    return {"@timestamp": stamp(minutes_ago), "app": "cart", "level": level, "msg": "x", "logger_name": "cart.Main"}


@pytest.fixture(scope="module")
def es() -> Iterator[Any]:
    server = OsmemServer.start(japanese=False)
    try:
        client = es_client(server.url, plain_json=True)
        otel = {"properties": {"@timestamp": DATE, "severity_text": KEYWORD, "body": TEXT, "trace_id": KEYWORD}}
        client.indices.create(index="otel-logs", mappings=otel)
        day = NOW.strftime("%Y.%m.%d")
        actions = [  # ECS daily indices as dynamic mapping leaves them: text with .keyword sub-fields
            {"_index": f"logs-{svc}-{day}", "_source": ecs_doc(svc, m, lv)}
            for svc in SERVICES
            for m, lv in ((1, "error"), (2, "info"), (3, "info"), (4, "WARN"))
        ]
        actions += [{"_index": "otel-logs", "_source": otel_doc(m, sv)} for m, sv in ((1, "Error"), (2, "Info"))]
        actions += [{"_index": "shop-applog", "_source": plain_doc(m, lv)} for m, lv in ((1, "WARN"), (2, "INFO"))]
        actions += [{"_index": "pino-logs", "_source": {"@timestamp": stamp(1), "level": 50, "msg": "x"}}]
        helpers.bulk(client, actions, refresh=True)
        yield client
    finally:
        server.close()


def chosen(findings: list[Finding]) -> dict[str, Any]:
    return {f.setting: f.value for f in findings}


def evidence(findings: list[Finding], setting: str) -> str:
    return next(f.evidence for f in findings if f.setting == setting)


def test_ecs_in_daily_indices_gives_a_service_pattern_and_the_ecs_fields(es: Any) -> None:
    found = discover_logs(es, "logs-*")
    values = chosen(found)

    assert values["logs.index_pattern"] == "logs-{service}-*"
    assert "3 daily" in evidence(found, "logs.index_pattern") and "logs-<service>: inventory, order, payment" in (
        evidence(found, "logs.index_pattern")
    )
    assert "the index names are service.name values" in evidence(found, "logs.index_pattern")
    assert {k: values[k] for k in ("logs.service_field", "logs.level_field", "logs.error_type_field")} == {
        "logs.service_field": "service.name",
        "logs.level_field": "log.level",
        "logs.error_type_field": "error.type",
    }
    assert values["logs.stack_field"] == "error.stack_trace" and values["logs.host_field"] == "host.name"
    assert "text, filtered on service.name.keyword" in evidence(found, "logs.service_field")
    assert "3 services: inventory 4, order 4, payment 4" in evidence(found, "logs.service_field")
    level = evidence(found, "logs.level_field")
    assert "values as written in all of logs-*-*: info 6, WARN 3, error 3" in level
    assert "read in any case as ERROR, INFO, WARN" in level
    assert "(ECS)" in evidence(found, "logs.level_field")
    assert not [f for f in found if f.problems]


def test_open_telemetry_logs_give_severity_body_and_resource_service(es: Any) -> None:
    found = discover_logs(es, "otel-*")
    values = chosen(found)

    assert values["logs.index_pattern"] == "otel-logs"
    assert values["logs.level_field"] == "severity_text" and values["logs.message_field"] == "body"
    assert values["logs.service_field"] == "resource.service.name"
    assert values["logs.error_type_field"] == "attributes.exception.type"
    assert values["logs.logger_field"] == "attributes.code.namespace"  # OpenTelemetry's code.namespace: the class
    assert "(OpenTelemetry)" in evidence(found, "logs.level_field")
    assert "read in any case as ERROR, INFO" in evidence(found, "logs.level_field")


def test_plain_json_lines_and_what_was_not_found(es: Any) -> None:
    found = discover_logs(es, "shop-*")
    values = chosen(found)

    assert (values["logs.service_field"], values["logs.message_field"], values["logs.logger_field"]) == (
        "app",
        "msg",
        "logger_name",
    )
    assert values["logs.error_type_field"] is None
    assert "looked for error.type" in evidence(found, "logs.error_type_field")


def test_levels_that_are_no_known_level_are_a_problem_naming_the_values(es: Any) -> None:
    level = next(f for f in discover_logs(es, "pino-*") if f.setting == "logs.level_field")
    assert level.problems == ("logs.level_field = 'level' holds no known level (values: 50)",)


def test_an_index_pattern_that_matches_nothing_is_not_found() -> None:
    finding = pattern_finding([], "logz-*")
    assert finding.value is None and finding.problems == ("no log index found",)
    assert "matching logz-*" in finding.evidence


def test_index_families_that_are_not_services_get_no_service_placeholder() -> None:
    names = [index_name(f"logs-{fam}-2026.12.05") for fam in ("app", "nginx")]
    assert pattern_finding(names).value == "logs-{service}-*"  # until the service field is read (discover_logs)
    streams = names_from_resolve({"data_streams": [{"name": "logs-order-default"}, {"name": "logs-payment-default"}]})
    finding = pattern_finding(streams)
    assert finding.value == "logs-{service}-*" and "2 data stream" in finding.evidence


def test_loki_labels_for_service_and_level_and_the_json_lines_fields() -> None:
    lines = [
        Line(
            int((NOW - timedelta(minutes=m)).timestamp() * 1e9),
            (("service_name", "order"), ("detected_level", level)),
            json.dumps({"message": "boom", "error": {"type": POOL_ERROR}, "logger": "app"}),
        )
        for m, level in ((1, "error"), (2, "info"))
    ]
    fake = FakeLoki(lines)
    try:
        found = discover_loki_logs(LokiLogs(fake.url))
    finally:
        fake.stop()
    values = chosen(found)
    assert (values["loki.service_label"], values["loki.level_label"]) == ("service_name", "detected_level")
    assert values["logs.message_field"] == "message" and values["logs.error_type_field"] == "error.type"
    assert "read in any case as ERROR, INFO" in evidence(found, "loki.level_label")


def test_json_lines_files_are_read_like_an_index() -> None:
    lines = [json.dumps({"@timestamp": stamp(1), "log.level": "error", "service.name": "order", "message": "m"})]
    values = chosen(discover_log_lines(lines))
    assert (values["logs.level_field"], values["logs.service_field"]) == ("log.level", "service.name")
