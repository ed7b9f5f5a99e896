"""A deploy-events index as a CD system writes it with dynamic mapping: strings are text fields with a `.keyword`
sub-field (or, in an older index, text alone), with environment and status fields. Read from the mapping, so no
query gets Elasticsearch's HTTP 400 and `order` never matches `order-api`."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from elasticsearch import helpers
from osmem_server import OsmemServer

from bot import wiring
from bot.wiring.elastic import es_client
from tests.tools.conftest import tool_settings
from tools.base import Toolbox, call_tool
from tools.deploys.discovery import discover_deploys
from tools.deploys.elastic import DeployFields, ElasticsearchDeploys
from tools.results import deploys_of

NOW = datetime.now(UTC).replace(microsecond=0)
TEXT_WITH_KEYWORD = {"type": "text", "fields": {"keyword": {"type": "keyword", "ignore_above": 256}}}
DYNAMIC = {
    "properties": {
        "@timestamp": {"type": "date"},
        **{name: TEXT_WITH_KEYWORD for name in ("service", "version", "environment", "status", "author", "summary")},
        "diff": {"type": "text"},
    }
}
TEXT_ONLY = {"properties": {"@timestamp": {"type": "date"}, "service": {"type": "text"}, "version": {"type": "text"}}}
PATCH = "diff --git a/app.yaml b/app.yaml\n--- a/app.yaml\n+++ b/app.yaml\n@@ -1 +1 @@\n-pool: 20\n+pool: 4\n"


def event(minutes_ago: int, service: str, version: str, environment: str, status: str) -> dict[str, Any]:
    return {
        "@timestamp": (NOW - timedelta(minutes=minutes_ago)).isoformat(),
        "service": service,
        "version": version,
        "environment": environment,
        "status": status,
        "author": "ci",
        "summary": f"{service} {version}",
        "diff": PATCH,
    }


EVENTS = [
    event(40, "payment", "v3.0.0", "production", "succeeded"),
    event(30, "order", "v2.8.1", "production", "succeeded"),
    event(20, "order", "v2.9.0-rc1", "staging", "succeeded"),
    event(15, "order-api", "v5.0.0", "production", "succeeded"),
    event(10, "order", "v2.8.2", "production", "FAILED"),
]


@pytest.fixture(scope="module")
def es_url() -> Iterator[str]:
    server = OsmemServer.start(japanese=False)
    try:
        es = es_client(server.url, plain_json=True)
        es.indices.create(index="cd-events", mappings=DYNAMIC)
        es.indices.create(index="cd-legacy", mappings=TEXT_ONLY)
        actions = [{"_index": "cd-events", "_source": e} for e in EVENTS]
        legacy = [{k: v for k, v in e.items() if k not in ("environment", "status")} for e in EVENTS]
        actions += [{"_index": "cd-legacy", "_source": e} for e in legacy]
        helpers.bulk(es, actions, refresh=True)
        yield server.url
    finally:
        server.close()


def toolbox(es_url: str, index: str = "cd-events", **deploys: Any) -> Toolbox:
    settings = tool_settings(
        elasticsearch={"url": es_url, "plain_json": True},
        deploys={
            "source": "index",
            "index": index,
            "environment_field": "environment",
            "status_field": "status",
            **deploys,
        },
    )
    return wiring.build_toolbox(settings)


def test_text_fields_are_read_through_their_keyword_sub_field_without_an_http_400(es_url: str) -> None:
    result = call_tool(toolbox(es_url), "query_deploy_records", {"service": "order", "range": "2h"})
    found = deploys_of(result)
    assert result.status == "ok" and found is not None, result.text
    assert [r.version for r in found.records] == ["v2.9.0-rc1", "v2.8.1"]  # not order-api's v5.0.0
    assert (found.records[0].environment, found.records[0].status) == ("staging", "succeeded")
    assert "left out 1 deploy that did not succeed (order/v2.8.2 FAILED)" in result.text
    source = ElasticsearchDeploys(es_client(es_url, plain_json=True), "cd-events")
    assert source.services() == ["order", "order-api", "payment"]  # a terms aggregation on service.keyword
    assert [f.evidence for f in source.check()][
        1
    ] == "service is text: matched on its keyword sub-field service.keyword"


def test_staging_and_failed_deploys_are_left_out_and_named(es_url: str) -> None:
    box = toolbox(es_url, environments=["Production"])
    result = call_tool(box, "query_deploy_records", {"service": "*", "range": "2h"})
    found = deploys_of(result)
    assert found is not None
    assert [f"{r.service}/{r.version}" for r in found.records] == ["order-api/v5.0.0", "order/v2.8.1", "payment/v3.0.0"]
    assert "left out 1 deploy outside Production (order/v2.9.0-rc1 in staging): not suspects there" in result.text
    assert "left out 1 deploy that did not succeed (order/v2.8.2 FAILED)" in result.text


def test_a_text_field_without_keyword_is_matched_by_phrase_then_exactly(es_url: str) -> None:
    result = call_tool(
        toolbox(es_url, "cd-legacy", environment_field="", status_field=""),
        "query_deploy_records",
        {"service": "order", "range": "2h"},
    )
    found = deploys_of(result)
    assert found is not None and {r.service for r in found.records} == {"order"}
    assert "service is text with no keyword sub-field: matched with match_phrase, then exactly" in result.text
    diff = call_tool(toolbox(es_url, "cd-legacy"), "query_deploy_diff", {"version": "v2.8.1", "service": "order"})
    assert diff.status == "ok" and "+pool: 4" in diff.text
    source = ElasticsearchDeploys(es_client(es_url, plain_json=True), "cd-legacy")
    assert source.services() == ["order", "order-api", "payment"]  # read from the events, not aggregated


def test_a_field_the_mapping_lacks_is_named_with_its_setting(es_url: str) -> None:
    result = call_tool(toolbox(es_url, service_field="servce"), "query_deploy_records", {"service": "*"})
    assert result.status == "error"
    assert "deploys.service_field 'servce' is not a field of cd-events" in result.text
    assert "Did you mean 'service'?" in result.text


def test_discovery_reads_the_fields_and_their_values_from_the_index(es_url: str) -> None:
    found = discover_deploys(es_client=es_client(es_url, plain_json=True), index="cd-events")
    assert found.settings == {
        "source": "index",
        "index": "cd-events",
        "timestamp_field": "@timestamp",
        "service_field": "service",
        "version_field": "version",
        "environment_field": "environment",
        "status_field": "status",
        "author_field": "author",
        "summary_field": "summary",
        "diff_field": "diff",
    }
    status = next(f for f in found.findings if f.setting == "deploys.status_field")
    assert "FAILED" in status.evidence and "succeeded" in status.evidence
    assert any(m.startswith("no commit field in cd-events") for m in found.missing)
    legacy = discover_deploys(es_client=es_client(es_url, plain_json=True), index="cd-legacy")
    assert any("no environment field" in m and "the environment filter cannot apply" in m for m in legacy.missing)


def test_fields_default_to_none_for_environment_and_status() -> None:
    assert (DeployFields().environment, DeployFields().status) == ("", "")
