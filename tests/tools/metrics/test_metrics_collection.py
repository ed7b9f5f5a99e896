"""A series that stopped, against the real Prometheus: did the service stop, or the collection? The `stopped:`
line says which (tools/metrics/collection.py), and "unknown"/"not checked" when the checks could not tell."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from bot import wiring
from bot.sandbox.scenario import load_scenario
from tests.fakes.backends import RunningSandbox
from tests.tools.conftest import tool_settings
from tools.base import call_tool
from tools.metrics.query import MetricQuery, MetricsTools

ROOT = Path(__file__).resolve().parents[3]


def _stopped_line(sandbox: RunningSandbox, service: str, metric: str = "p99_latency", **prometheus: object) -> str:
    settings = tool_settings(prometheus_url=sandbox.prometheus_url, prometheus=prometheus)
    result = call_tool(
        wiring.build_toolbox(settings), "query_metrics", {"service": service, "metric": metric, "range": "2h"}
    )
    assert result.status == "ok", result.text
    return next(line for line in result.text.splitlines() if line.startswith("stopped:"))


@pytest.fixture(scope="module")
def gap(make_sandbox: Callable[[str], RunningSandbox]) -> RunningSandbox:
    return make_sandbox("collection-gap")


@pytest.fixture(scope="module")
def one_lost(make_sandbox: Callable[[str], RunningSandbox], tmp_path_factory: pytest.TempPathFactory) -> RunningSandbox:
    """The collection-gap scenario, but only checkout's series end (its scrape target lost); the others go on."""
    text = (ROOT / "bot/sandbox/scenarios/collection-gap.toml").read_text(encoding="utf-8")
    lost = 'collection_gap_minutes = 0\ncollection_gap_services = ["checkout"]'
    text = text.replace("collection_gap_minutes = 0", lost)
    path = tmp_path_factory.mktemp("scenario") / "one-lost.toml"
    path.write_text(text.replace('name = "collection-gap"', 'name = "one-lost"'), encoding="utf-8")
    assert load_scenario(str(path)).collection_gap_services == ("checkout",)
    return make_sandbox(str(path))


def test_a_gap_in_every_series_is_a_collection_gap_not_the_service(gap):
    line = _stopped_line(gap, "checkout")
    print(line)
    incident = gap.incident_at  # the gap begins at the incident: the last raw sample is the minute before
    assert f"(its last sample {incident - timedelta(minutes=1):%H:%M})" in line
    after = [incident + timedelta(minutes=m) for m in range(6)]  # a window across midnight dates its times
    assert any(f"no samples after {t:%H:%M}" in line or f"no samples after {t:%m-%d %H:%M}" in line for t in after)
    assert "cause: collection gap" in line
    assert "all 3 others' http_request_duration_seconds_bucket ended at the same minute (its last sample" in line
    assert "up ended with it" in line


def test_one_service_whose_series_ended_while_the_others_report_is_the_service(one_lost):
    line = _stopped_line(one_lost, "checkout", "qps")
    print(line)
    assert "cause: the service" in line
    assert "0 of 3 others' http_requests_total ended at the same minute (its last sample" in line
    assert "3 still report it" in line


def test_up_zero_says_prometheus_cannot_scrape_the_service(make_sandbox):
    box = make_sandbox("dependency-pods-down")
    line = _stopped_line(box, "ranker")
    print(line)
    assert "cause: the service" in line
    assert "up == 0: Prometheus cannot scrape it" in line
    assert "its own http_request_duration_seconds_bucket is still collected" in line


def test_no_up_series_at_all_is_not_checked_never_a_verdict_on_its_own(gap):
    line = _stopped_line(gap, "checkout", up_metric="opsbot_no_such_up")
    print(line)
    assert "scrape health: not checked (no opsbot_no_such_up series for it" in line
    assert "cause: collection gap" in line  # the other services still tell


def test_with_neither_check_able_to_run_the_cause_is_unknown(gap):
    catalogue = {
        "p99": MetricQuery(
            "histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket"
            '{$label=~"$service"}[5m])))',
            "s",
        )
    }
    tools = MetricsTools(
        wiring.build_prometheus(tool_settings(prometheus_url=gap.prometheus_url)), catalogue, up_metric=""
    )
    text = tools.query_metrics("checkout", "p99", "2h").text
    line = next(line for line in text.splitlines() if line.startswith("stopped:"))
    assert "cause: unknown" in line and "scrape health: not checked" in line and "other services: not checked" in line
    assert "the service stopped" not in line


class RecordingClient:
    """The real Prometheus client, recording each range query it sends (to count the checks' extra queries)."""

    def __init__(self, client: object) -> None:
        self.client = client
        self.sent: list[str] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self.client, name)

    def query_range(self, promql: str, *args: object) -> object:
        self.sent.append(promql)
        return self.client.query_range(promql, *args)  # type: ignore[attr-defined]


def test_the_checks_cost_two_queries_shared_by_every_series_that_stopped_in_the_gap(gap):
    client = RecordingClient(wiring.build_prometheus(tool_settings(prometheus_url=gap.prometheus_url)))
    catalogue = {
        "p99": MetricQuery(
            'histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{$label="$service"}[5m])))',
            "s",
        )
    }
    tools = MetricsTools(client, catalogue)  # type: ignore[arg-type]
    lines = [tools.query_metrics(service, "p99", "2h") for service in ("checkout", "payment", "search", "gateway")]
    assert all("cause: collection gap" in result.text for result in lines)
    checks = [q for q in client.sent if "timestamp(" in q or q.startswith("max by (service) (up{")]
    assert len(checks) == 2, checks  # one up, one raw series, for the four series that stopped


def test_a_configured_up_metric_that_is_not_a_metric_name_is_refused_at_start_up(gap):
    client = wiring.build_prometheus(tool_settings(prometheus_url=gap.prometheus_url))
    with pytest.raises(ValueError, match="invalid Prometheus metric name"):
        MetricsTools(
            client,
            {"qps": MetricQuery('sum(rate(http_requests_total{$label="$service"}[5m]))', "rps")},
            up_metric='up{job="x"} or vector(1)',
        )
