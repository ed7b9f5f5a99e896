"""Index patterns that name the service (`logs-{service}-*`) over daily indices, and index names as teams keep them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from elasticsearch import helpers
from osmem_server import OsmemServer

from bot.wiring.elastic import es_client
from tools.base import Toolbox, ToolError, call_tool
from tools.logs.indices import IndexName, index_name, names_from_resolve, pattern_for, service_of
from tools.logs.model import LogFields
from tools.logs.query import ElasticsearchLogs, LogTools

NOW = datetime(2026, 11, 28, 16, 0, tzinfo=UTC)
DAILY = {  # index -> the services' messages in it; the documents carry no service field
    "logs-order-2026.11.27": "order yesterday",
    "logs-order-2026.11.28": "order today",
    "logs-order-api-2026.11.28": "order-api today",
    "logs-payment-2026.11.28": "payment today",
}


def log_doc(message: str, minutes_ago: int, **extra: Any) -> dict[str, Any]:
    at = NOW - timedelta(minutes=minutes_ago)
    return {"@timestamp": at.isoformat(), "log": {"level": "ERROR"}, "message": message, **extra}


@pytest.fixture(scope="module")
def es_url() -> Iterator[str]:
    server = OsmemServer.start(japanese=False)
    try:
        es = es_client(server.url, plain_json=True)
        actions = [
            {"_index": index, "_source": log_doc(message, 60 * 20 if "yesterday" in message else 10)}
            for index, message in DAILY.items()
        ]
        actions += [  # ECS documents that do name their service
            {"_index": f"ecs-{svc}-2026.11.28", "_source": log_doc(f"{svc} ecs", 5, service={"name": svc})}
            for svc in ("order", "order-api")
        ]
        helpers.bulk(es, actions, refresh=True)
        yield server.url
    finally:
        server.close()


def tools_over(url: str, pattern: str, service_field: str = "service") -> tuple[ElasticsearchLogs, Toolbox]:
    source = ElasticsearchLogs(
        es_client(url, plain_json=True), pattern, LogFields(service=service_field, level="log.level")
    )
    return source, Toolbox(LogTools(source, clock=lambda: NOW).specs())


def test_services_come_from_daily_index_names_when_documents_do_not_name_them(es_url: str) -> None:
    source, box = tools_over(es_url, "logs-{service}-*")
    order = call_tool(box, "query_logs", {"service": "order", "range": "2d"})
    every = call_tool(box, "query_logs", {"service": "*", "range": "2d"})
    assert source.services() == ["order", "order-api", "payment"]
    assert "matched 2 lines" in order.text and "order-api today" not in order.text  # its own indices only
    assert order.data is not None and {line.entry.service for line in order.data.newest} == {"order"}  # type: ignore[attr-defined]
    assert "matched 4 lines" in every.text


def test_a_service_field_still_filters_under_a_service_pattern(es_url: str) -> None:
    source, box = tools_over(es_url, "ecs-{service}-*", "service.name")
    result = call_tool(box, "query_logs", {"service": "order", "range": "1h"})
    assert source.services() == ["order", "order-api"]
    assert "matched 1 lines" in result.text and "order ecs" in result.text and "order-api ecs" not in result.text


def test_an_unknown_service_under_a_pattern_is_refused_with_the_known_ones(es_url: str) -> None:
    _, box = tools_over(es_url, "logs-{service}-*")
    result = call_tool(box, "query_logs", {"service": "ordr"})
    assert result.status == "error" and "Did you mean 'order'?" in result.text


@pytest.mark.parametrize(
    ("name", "family", "kind"),
    [
        ("logs-order-2026.12.05", "logs-order", "daily"),
        ("logs-order-api-2026-12-05", "logs-order-api", "daily"),
        ("logs-order-20261205", "logs-order", "daily"),
        ("logs-order-2026.12", "logs-order", "monthly"),
        ("logs-order-2026.12.05-000002", "logs-order", "daily"),
        ("logs-order-000003", "logs-order", "rollover"),
        ("applogs", "applogs", "single"),
    ],
)
def test_index_names_reduce_to_their_family(name: str, family: str, kind: str) -> None:
    assert index_name(name) == IndexName(name, family, kind)  # type: ignore[arg-type]


def test_a_resolve_reply_gives_data_streams_without_their_backing_indices() -> None:
    """`GET _resolve/index/logs-*` as Elasticsearch documents it: backing indices name their data stream."""
    reply = {
        "indices": [
            {
                "name": ".ds-logs-order-default-2026.12.05-000001",
                "attributes": ["open"],
                "data_stream": "logs-order-default",
            },
            {"name": "logs-legacy-2026.12.01", "attributes": ["open"]},
        ],
        "aliases": [],
        "data_streams": [
            {
                "name": "logs-order-default",
                "backing_indices": [".ds-logs-order-default-2026.12.05-000001"],
                "timestamp_field": "@timestamp",
            }
        ],
    }
    names = names_from_resolve(reply)
    assert [(n.name, n.family, n.kind) for n in names] == [
        ("logs-legacy-2026.12.01", "logs-legacy", "daily"),
        ("logs-order-default", "logs-order", "data stream"),
    ]
    assert [service_of(n, "logs-{service}-*") for n in names] == ["legacy", "order"]


def test_a_service_that_could_widen_the_pattern_is_refused() -> None:
    assert pattern_for("logs-{service}-*", "order") == "logs-order-*"
    assert pattern_for("logs-{service}-*", None) == "logs-*-*"
    with pytest.raises(ToolError):
        pattern_for("logs-{service}-*", "order,secret-*")
