"""The default scenario in the real Prometheus, the git repo and osmem, through the session fixtures."""

from __future__ import annotations

import subprocess
from datetime import timedelta

import requests
from prometheus_api_client import PrometheusConnect

P99 = 'histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{service="%s"}[5m])))'


def _value_at(sandbox, promql: str, when) -> float:
    client = PrometheusConnect(url=sandbox.prometheus_url, disable_ssl=True)
    result = client.custom_query(promql, params={"time": when.timestamp()})
    assert result, f"no data for {promql} at {when}"
    return float(result[0]["value"][1])


def test_order_p99_jumps_from_200ms_to_1200ms_at_the_incident(sandbox):
    incident = sandbox.incident_at
    before = _value_at(sandbox, P99 % "order", incident - timedelta(minutes=20))
    after = _value_at(sandbox, P99 % "order", incident + timedelta(minutes=20))
    assert 0.17 < before < 0.24
    assert 1.05 < after < 1.4


def test_incident_is_yesterday_1505_utc(sandbox):
    assert sandbox.incident_at.date() == (sandbox.now - timedelta(days=1)).date()
    assert (sandbox.incident_at.hour, sandbox.incident_at.minute) == (15, 5)


def test_instant_query_at_wall_clock_now_sees_data(sandbox):
    client = PrometheusConnect(url=sandbox.prometheus_url, disable_ssl=True)
    result = client.custom_query('sum(rate(http_requests_total{service="order"}[5m]))')
    assert float(result[0]["value"][1]) > 50


def test_git_repo_tags_the_pool_change_at_1502(sandbox):
    repo = str(sandbox.git_repo)
    tagger_date = subprocess.run(
        ["git", "-C", repo, "for-each-ref", "--format=%(creatordate:iso-strict)", "refs/tags/order/v2.8.1"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert tagger_date.startswith(sandbox.incident_at.strftime("%Y-%m-%dT15:02"))
    diff = subprocess.run(
        ["git", "-C", repo, "diff", "order/v2.8.0", "order/v2.8.1", "--", "services/order"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "-      maximumPoolSize: 50" in diff
    assert "+      maximumPoolSize: 200" in diff


def test_topology_names_the_database(sandbox):
    assert "orders-db" in sandbox.topology["order"]


def test_osmem_holds_logs_and_deploy_events(es_sandbox):
    hits = requests.post(
        f"{es_sandbox}/logs-sandbox/_search",
        json={"query": {"match_phrase": {"message": "Connection is not available"}}, "size": 1},
        timeout=10,
    ).json()
    assert hits["hits"]["total"]["value"] > 100
    deploys = requests.post(
        f"{es_sandbox}/deploys/_search", json={"query": {"term": {"version": "v2.8.1"}}}, timeout=10
    ).json()
    event = deploys["hits"]["hits"][0]["_source"]
    assert event["previous_version"] == "v2.8.0"
    assert "maximumPoolSize: 200" in event["diff"]
