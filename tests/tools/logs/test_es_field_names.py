"""Elasticsearch logs and deploy events whose documents use other field names, read through the settings.

The index here looks like an ECS shipper's (nested `log.level`, `host.name`) and a CD system's release events
(`deployed_at`, `app`, `release`); the tools read them only because the configured field names say so.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from elasticsearch import helpers
from osmem_server import OsmemServer

from bot import wiring
from bot.wiring.elastic import es_client
from tests.tools.conftest import tool_settings
from tools.base import Toolbox, call_tool

NOW = datetime.now(UTC).replace(microsecond=0)
KEYWORD, TEXT, DATE = {"type": "keyword"}, {"type": "text"}, {"type": "date"}
LOG_FIELDS = {
    "timestamp_field": "ts",
    "service_field": "svc",
    "level_field": "log.level",
    "message_field": "msg",
    "stack_field": "error.stack",
    "trace_field": "trace.id",
    "logger_field": "log.logger",
    "host_field": "host.name",
}
DEPLOY_FIELDS = {
    "timestamp_field": "deployed_at",
    "service_field": "app",
    "version_field": "release",
    "previous_version_field": "replaces",
    "author_field": "deployer",
    "commit_field": "sha",
    "summary_field": "title",
    "diff_field": "patch",
}
DIFF = "--- a/services/order/app.yaml\n+++ b/services/order/app.yaml\n@@ -1 +1 @@\n-pool: 50\n+pool: 200\n"


def log_doc(minutes_ago: int, level: str, message: str) -> dict[str, object]:
    return {
        "ts": (NOW - timedelta(minutes=minutes_ago)).isoformat(),
        "svc": "order",
        "msg": message,
        "log": {"level": level, "logger": "com.acme.order.PoolWatcher"},
        "host": {"name": "order-7f9c-2"},
        "trace": {"id": f"t{minutes_ago}"},
    }


def deploy_doc(minutes_ago: int, release: str, replaces: str, patch: str) -> dict[str, str]:
    return {
        "deployed_at": (NOW - timedelta(minutes=minutes_ago)).isoformat(),
        "app": "order",
        "release": release,
        "replaces": replaces,
        "deployer": "li.wei",
        "sha": "abc1234",
        "title": f"order {release}",
        "patch": patch,
    }


@pytest.fixture(scope="module")
def es_url() -> Iterator[str]:
    server = OsmemServer.start(japanese=False)
    try:
        es = es_client(server.url, plain_json=True)
        es.indices.create(
            index="ecs-logs-1",
            mappings={
                "properties": {
                    "ts": DATE,
                    "svc": KEYWORD,
                    "msg": TEXT,
                    "error": {"properties": {"stack": TEXT}},
                    "log": {"properties": {"level": KEYWORD, "logger": KEYWORD}},
                    "host": {"properties": {"name": KEYWORD}},
                    "trace": {"properties": {"id": KEYWORD}},
                }
            },
        )
        es.indices.create(
            index="releases",
            mappings={
                "properties": {
                    "deployed_at": DATE,
                    "app": KEYWORD,
                    "release": KEYWORD,
                    "replaces": KEYWORD,
                    "deployer": KEYWORD,
                    "sha": KEYWORD,
                    "title": TEXT,
                    "patch": TEXT,
                }
            },
        )
        logs = [log_doc(10 - i, "ERROR", "Connection is not available, request timed out") for i in range(3)]
        logs.append(log_doc(20, "INFO", "GET /orders -> 200"))
        deploys = [deploy_doc(30, "v2.8.1", "v2.8.0", DIFF), deploy_doc(600, "v2.8.0", "v2.7.9", "")]
        actions = [{"_index": "ecs-logs-1", "_source": d} for d in logs]
        actions += [{"_index": "releases", "_source": d} for d in deploys]
        helpers.bulk(es, actions, refresh=True)
        yield server.url
    finally:
        server.close()


@pytest.fixture
def toolbox(es_url: str) -> Toolbox:
    settings = tool_settings(
        elasticsearch={"url": es_url, "plain_json": True},
        logs={"backend": "elasticsearch", "index_pattern": "ecs-logs-*", **LOG_FIELDS},
        deploys={"source": "index", "index": "releases", **DEPLOY_FIELDS},
    )
    return wiring.build_toolbox(settings)


def test_logs_with_configured_field_names_show_level_host_and_logger(toolbox: Toolbox) -> None:
    result = call_tool(toolbox, "query_logs", {"service": "order", "range": "1h"})
    assert result.status == "ok", result.text
    assert "ERROR 3" in result.text and "INFO 1" in result.text
    assert "Connection is not available" in result.text
    assert "order-7f9c-2" in result.text and "PoolWatcher" in result.text


def test_deploys_with_configured_field_names_give_records_and_diff(toolbox: Toolbox) -> None:
    records = call_tool(toolbox, "query_deploy_records", {"service": "order"})
    assert records.status == "ok", records.text
    assert "order/v2.8.1 (from v2.8.0) by li.wei" in records.text
    diff = call_tool(toolbox, "query_deploy_diff", {"version": "v2.8.1", "service": "order"})
    assert diff.status == "ok" and "+pool: 200" in diff.text


def test_a_deploy_timestamp_field_without_times_is_an_observation_naming_it(es_url: str) -> None:
    wrong = tool_settings(
        elasticsearch={"url": es_url, "plain_json": True},
        deploys={"source": "index", "index": "releases", **DEPLOY_FIELDS, "timestamp_field": "deployer"},
    )
    result = call_tool(wiring.build_toolbox(wrong), "query_deploy_diff", {"version": "v2.8.1", "service": "order"})
    assert result.status == "error"
    assert "no ISO time in field 'deployer'" in result.text and "timestamp field" in result.text
