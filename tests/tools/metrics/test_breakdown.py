"""query_metrics past one series: per pod and per version, limits beside memory and cpu, 4xx and 429 beside the 5xx,
and request counts for a low-traffic series; against the sandbox's real Prometheus."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest

from bot import wiring
from bot.sandbox.state import SANDBOX_METRIC_TEMPLATES
from tests.tools.conftest import tool_settings
from tools.base import call_tool
from tools.metrics.breakdown import grouped_by
from tools.metrics.catalogue import render
from tools.metrics.reading import read_counts
from tools.results import breakdown_of, series_of
from tools.timerange import iso_z

NEAR_LIMIT = str(Path(__file__).parent / "scenarios" / "memory-near-limit.toml")


def interval(box, before_h: float = 2, after_h: float = 1) -> str:
    at = box.incident_at
    return f"{iso_z(at - timedelta(hours=before_h))}/{iso_z(at + timedelta(hours=after_h))}"


def sandbox_catalogue_tools(box):
    """The tools with the default catalogue and the sandbox's memory and restarts entries, as `opsbot demo` has."""
    settings = tool_settings(prometheus_url=box.prometheus_url)
    metrics = {**{k: v.model_dump() for k, v in settings.prometheus.metrics.items()}, **SANDBOX_METRIC_TEMPLATES}
    return wiring.build_toolbox(tool_settings(prometheus_url=box.prometheus_url, prometheus={"metrics": metrics}))


@pytest.mark.parametrize(
    ("template", "grouped"),
    [
        ("histogram_quantile(0.99, sum by (le) (rate(x_bucket[5m])))", "sum by (le, pod) (rate(x_bucket[5m]))"),
        ("sum(rate(a[5m])) / sum(rate(b[5m]))", "sum by (pod) (rate(a[5m])) / sum by (pod) (rate(b[5m]))"),
        ("sum(rate(a[5m])) by (le)", "sum(rate(a[5m])) by (le, pod)"),
        ("max(process_resident_memory_bytes)", "max by (pod) (process_resident_memory_bytes)"),
        ("avg without (instance) (a)", "avg without (instance) (a)"),
        ('sum(rate(a{path="sum(x)"}[5m]))', 'sum by (pod) (rate(a{path="sum(x)"}[5m]))'),
        ("sum by (pod) (rate(a[5m]))", "sum by (pod) (rate(a[5m]))"),
    ],
)
def test_each_aggregation_keeps_the_breakdown_label_and_strings_are_left_alone(template, grouped):
    assert grouped in grouped_by(template, "pod")


def test_a_canary_on_one_of_seven_pods_leads_the_pod_breakdown(make_sandbox):
    """game-loadout-inventory: v4.2.0 on 1 pod fails ~26 % of its requests; the service moves ~x35 of 0.1 %."""
    box = make_sandbox("game-loadout-inventory")
    tools = wiring.build_toolbox(tool_settings(prometheus_url=box.prometheus_url))
    args = {"service": "inventory-svc", "metric": "error_rate", "range": interval(box), "by": "pod"}
    result = call_tool(tools, "query_metrics", args)
    found = breakdown_of(result)
    assert result.status == "ok" and found is not None and len(found.parts) == 7
    canary, *others = found.parts
    assert canary.new and 20 < canary.recent < 35 and canary.baseline < 0.2, canary
    assert all(0.05 < p.recent < 0.2 for p in others), others
    first_line = result.text.splitlines()[2]
    assert first_line.startswith(f"{canary.value}: 0.") and "new: first sample" in first_line, result.text
    assert abs(canary.change_at - box.incident_at) <= timedelta(minutes=5)


def test_the_version_breakdown_names_the_canary_version_first(make_sandbox):
    box = make_sandbox("game-loadout-inventory")
    tools = wiring.build_toolbox(tool_settings(prometheus_url=box.prometheus_url))
    args = {"service": "inventory-svc", "metric": "p99_latency", "range": interval(box), "by": "version"}
    text = call_tool(tools, "query_metrics", args).text
    lines = text.splitlines()
    assert "by version (label 'version')" in lines[0] and "2 versions" in lines[0]
    assert lines[2].startswith("v4.2.0: ") and lines[3].startswith("v4.1.3: "), text


def test_a_breakdown_by_a_label_the_service_lacks_is_no_data_and_says_so(make_sandbox):
    box = make_sandbox("game-loadout-inventory")
    tools = wiring.build_toolbox(tool_settings(prometheus_url=box.prometheus_url))
    args = {"service": "inventory-svc", "metric": "qps", "range": interval(box), "by": "peer"}
    result = call_tool(tools, "query_metrics", args)
    assert result.status == "no_data" and "no series with the label 'peer'" in result.text


def test_memory_reads_beside_its_limit_and_request_pod_by_pod(make_sandbox):
    box = make_sandbox(NEAR_LIMIT)
    tools = sandbox_catalogue_tools(box)
    args = {"service": "exporter", "metric": "memory_usage", "range": interval(box, 1, 0.5)}
    result = call_tool(tools, "query_metrics", args)
    seen = series_of(result)
    use = seen.resources if seen else None
    assert use is not None and use.resource == "memory" and use.pods == 3 and use.pod.startswith("exporter-")
    assert use.limit == pytest.approx(2048 * 1.048576, rel=0.01) and use.request == pytest.approx(1024 * 1.048576, 0.01)
    assert use.share is not None and 0.8 < use.share < 1.0, use
    [line] = [line for line in result.text.splitlines() if line.startswith("limits: ")]
    assert line.startswith("limits: memory 1,") and " limit (" in line and "the closest of 3; request 1,07" in line


def test_a_service_without_limits_says_no_limits_found(make_sandbox):
    box = make_sandbox(NEAR_LIMIT)
    tools = sandbox_catalogue_tools(box)
    text = call_tool(tools, "query_metrics", {"service": "quiet", "metric": "cpu_usage", "range": "1h"}).text
    assert "limits: no limits found for cpu" in text and "no request found" in text, text


def test_a_429_storm_shows_beside_the_5xx_error_rate(make_sandbox):
    """ticket-partner-listing-sync: partner-gateway answers 429 to the big partners; the 5xx share stays low."""
    box = make_sandbox("ticket-partner-listing-sync")
    tools = wiring.build_toolbox(tool_settings(prometheus_url=box.prometheus_url))
    args = {"service": "partner-gateway", "metric": "error_rate", "range": interval(box, 2, 2)}
    result = call_tool(tools, "query_metrics", args)
    seen = series_of(result)
    assert seen is not None
    related = {read.role: read for read in seen.related}
    assert set(related) == {"client_errors", "rate_limited"}
    limited = related["rate_limited"]
    assert limited.change is not None and limited.change.after > 10 * limited.change.before, limited
    assert abs(limited.change.at - box.incident_at) <= timedelta(minutes=10)
    [line] = [line for line in result.text.splitlines() if line.startswith("beside: ")]
    assert "rate_limited (429) median" in line and "client_error_rate (4xx)" in line, line


def test_a_latency_series_is_read_with_the_requests_behind_each_point(make_sandbox):
    """exporter serves 1.2 requests a second: at a 15 s step, about 18 requests behind each point."""
    box = make_sandbox(NEAR_LIMIT)
    metrics = wiring.build_metrics_tools(tool_settings(prometheus_url=box.prometheus_url))
    label, query = metrics.query_for("exporter", "p99_latency")
    window, step_s = metrics._window("1h")
    times = [window.start + timedelta(seconds=step_s * i) for i in range(20, 30)]
    counted = render(query.counts, label=label, service="exporter")
    counts = read_counts(metrics.client, counted, query.unit, window, step_s, times)
    assert counts is not None and not counts.share and step_s == 15
    assert all(10 < n < 30 for n in counts.requests), counts


CLIENT_METRICS = {
    "client_calls": {
        "promql": 'sum(rate(http_client_requests_seconds_count{$label="$service"}[5m]))',
        "unit": "rps",
        "description": "outbound calls per second",
        "role": "client_calls",
    },
    "client_retries": {
        "promql": 'sum(rate(http_client_retries_total{$label="$service"}[5m]))',
        "unit": "rps",
        "description": "outbound retries per second",
        "role": "client_retries",
    },
}


def test_a_retry_storm_between_two_services_shows_per_called_service(make_sandbox):
    """exporter calls quiet and ledger 20 times a second each; at the incident its retries to ledger go 0.2 -> 30/s."""
    box = make_sandbox(NEAR_LIMIT)
    tools = wiring.build_toolbox(
        tool_settings(prometheus_url=box.prometheus_url, prometheus={"metrics": CLIENT_METRICS})
    )
    calls = call_tool(tools, "query_metrics", {"service": "exporter", "metric": "client_calls", "by": "peer"})
    called = breakdown_of(calls)
    assert called is not None and sorted(p.value for p in called.parts) == ["ledger", "quiet"], calls.text
    assert all(15 < p.recent < 25 for p in called.parts), calls.text
    args = {"service": "exporter", "metric": "client_retries", "range": interval(box, 1, 0.5), "by": "peer"}
    retries = call_tool(tools, "query_metrics", args)
    retried = breakdown_of(retries)
    assert retried is not None
    [ledger] = retried.parts
    assert ledger.value == "ledger" and ledger.baseline < 0.5 and 25 < ledger.recent < 35, retries.text
    assert ledger.change_at is not None and abs(ledger.change_at - box.incident_at) <= timedelta(minutes=5)
    line = retries.text.splitlines()[2]
    # a window across midnight dates its times ("change at 12-05 23:41")
    shape = r"ledger: 0\.\d+ req/s -> \d\d(\.\d+)? req/s \(x[\d.,]+\), change at (\d\d-\d\d )?\d\d:\d\d"
    assert re.fullmatch(shape, line), line
