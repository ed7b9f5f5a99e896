"""query_metrics against the real Prometheus of the sandbox, and against a down, slow or failing one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot import wiring
from tests.eval.harness import sandbox_settings
from tests.fakes.faulty import closed_port_url, fake_backend
from tests.tools.conftest import tool_settings
from tools.analysis.changepoints import Spike
from tools.analysis.trends import Sawtooth, Trend
from tools.base import Toolbox, ToolError, call_tool
from tools.metrics.query import MetricQuery, MetricSeries, MetricStats, MetricsTools, render_series
from tools.metrics.series import series_summary
from tools.timerange import TimeWindow, iso_z


def interval(sandbox, before_h: float = 3, after_h: float = 3) -> str:
    at = sandbox.incident_at
    return f"{iso_z(at - timedelta(hours=before_h))}/{iso_z(at + timedelta(hours=after_h))}"


def test_latency_jump_is_reported_at_the_incident_minute_with_units_and_ratio(sandbox, sandbox_tools):
    result = call_tool(sandbox_tools, "query_metrics", {"service": "order", "metric": "p99_latency", "range": "48h"})
    assert result.status == "ok", result.text
    text = result.text
    assert (
        'promql: histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{service="order"}'
        in text
    )
    change = next(line for line in text.splitlines() if line.startswith("change:"))
    incident = sandbox.incident_at
    assert any(f"{incident + timedelta(minutes=m):%H:%M}" in change for m in (0, 1, 2)), change
    assert " ms -> " in change and "(x" in change
    assert "min " in text and "median " in text and "last " in text and " ms" in text
    assert "series (mean per" in text
    assert len(text) < 1_200  # a summary, never the 288-point dump


def test_series_gives_the_playbook_points_stats_and_change_points(sandbox):
    tools = wiring.build_metrics_tools(tool_settings(prometheus_url=sandbox.prometheus_url))
    series = tools.series("order", "p99_latency", interval(sandbox))
    assert series.unit == "ms" and series.summary.samples <= 288 and series.step_s == 120
    assert series.stats is not None and series.stats.max > 900 and series.stats.min < 300
    [change] = series.changes
    assert timedelta(0) <= change.at - sandbox.incident_at <= timedelta(minutes=2)
    assert change.before < 300 < 900 < change.after
    assert render_series(series).count("change:") == 1


def test_error_rate_is_shown_in_percent(sandbox, sandbox_tools):
    args = {"service": "order", "metric": "error_rate", "range": interval(sandbox)}
    text = call_tool(sandbox_tools, "query_metrics", args).text
    assert "%" in text.splitlines()[2] and "change:" in text


def test_unknown_service_lists_known_services_and_a_close_match(sandbox_tools):
    result = call_tool(sandbox_tools, "query_metrics", {"service": "ordr", "metric": "qps"})
    assert result.status == "error"
    assert "unknown service 'ordr'" in result.text and "known: " in result.text
    assert "payment" in result.text and "Did you mean 'order'?" in result.text


@pytest.mark.parametrize("service", ['order"} or vector(1) #', "order|payment", ".*"])
def test_service_text_never_reaches_promql_unchecked(sandbox_tools, service):
    result = call_tool(sandbox_tools, "query_metrics", {"service": service, "metric": "qps"})
    assert result.status == "error" and "unknown service" in result.text


def test_unknown_metric_names_the_catalogue(sandbox_tools):
    result = call_tool(sandbox_tools, "query_metrics", {"service": "order", "metric": "latency"})
    assert result.status == "error"
    for name in ("p99_latency", "qps", "error_rate", "cpu_usage"):
        assert name in result.text


def test_unknown_metric_called_directly_lists_the_catalogue(sandbox):
    tools = wiring.build_metrics_tools(tool_settings(prometheus_url=sandbox.prometheus_url))
    with pytest.raises(
        ToolError, match="the catalogue has: p99_latency, qps, error_rate, client_error_rate, rate_limited, cpu_usage"
    ):
        tools.series("order", "latency")


@pytest.mark.parametrize("bad_range", ["yesterday", "0h", "5y", "2026-11-28T16:00Z/2026-11-28T14:00Z"])
def test_bad_range_names_the_legal_forms(sandbox_tools, bad_range):
    result = call_tool(sandbox_tools, "query_metrics", {"service": "order", "metric": "qps", "range": bad_range})
    assert result.status == "error"
    assert "range" in result.text or "window" in result.text or "time" in result.text


def test_metric_without_samples_is_no_data_not_an_error(sandbox):
    catalogue = {"queue_depth": MetricQuery('sum(no_such_metric{$label="$service"})', "count", "queue depth")}
    tools = MetricsTools(wiring.build_prometheus(tool_settings(prometheus_url=sandbox.prometheus_url)), catalogue)
    result = tools.query_metrics("order", "queue_depth", "1h")
    assert result.status == "no_data"
    assert "no data" in result.text and "no_such_metric" in result.text


def test_promql_the_backend_rejects_comes_back_with_prometheus_own_text(sandbox):
    catalogue = {"broken": MetricQuery('sum(rate(http_requests_total{$label="$service"}[5x]))', "rps", "typo")}
    client = wiring.build_prometheus(tool_settings(prometheus_url=sandbox.prometheus_url))
    with pytest.raises(ToolError, match=r"Prometheus rejected the request: HTTP 400: .*parse error"):
        MetricsTools(client, catalogue).series("order", "broken")


def test_list_services_gives_one_line_per_service_with_its_downstream_services(sandbox):
    settings = tool_settings(prometheus_url=sandbox.prometheus_url, topology=sandbox.topology)
    box = wiring.build_toolbox(settings)
    result = call_tool(box, "list_services", {})
    assert result.status == "ok", result.text
    header, *lines = result.text.splitlines()
    known = wiring.build_metrics_tools(settings).known_services()
    assert header.startswith(f"{len(known)} services (label 'service')")
    assert [line.split(" -> ")[0] for line in lines] == known
    for caller, downstream in sandbox.topology.items():
        assert (f"{caller} -> {', '.join(downstream)}" if downstream else caller) in lines


def test_list_services_is_capped_and_says_how_many_it_left_out(sandbox):
    client = wiring.build_prometheus(tool_settings(prometheus_url=sandbox.prometheus_url))
    tools = MetricsTools(client, {"qps": MetricQuery("sum(up)", "count")}, max_services=2)
    text = tools.list_services().text
    total = len(tools.known_services())
    assert text.splitlines()[0].startswith(f"{total} services") and len(text.splitlines()) == 4
    assert text.splitlines()[-1].startswith(f"… and {total - 2} more not shown")


def test_list_services_with_prometheus_down_is_a_clear_observation():
    url = closed_port_url()
    result = call_tool(wiring.build_toolbox(tool_settings(prometheus_url=url)), "list_services", {})
    assert result.status == "error" and f"Prometheus at {url} is unreachable" in result.text


def test_prometheus_down_is_a_clear_observation():
    url = closed_port_url()
    box = wiring.build_toolbox(tool_settings(prometheus_url=url))
    result = call_tool(box, "query_metrics", {"service": "order", "metric": "qps"})
    assert result.status == "error"
    assert f"Prometheus at {url} is unreachable" in result.text


def test_prometheus_slow_is_a_clear_observation():
    with fake_backend(body={"status": "success", "data": []}, delay_s=3.0) as slow:
        box = wiring.build_toolbox(tool_settings(prometheus_url=slow.url, prometheus={"timeout_s": 0.3}))
        result = call_tool(box, "query_metrics", {"service": "order", "metric": "qps"})
    assert result.status == "error" and "did not answer in time" in result.text


def test_prometheus_500_keeps_the_backend_error_text():
    body = {"status": "error", "errorType": "internal", "error": "query processing would load too many samples"}
    with fake_backend(status=500, body=body) as failing:
        box = wiring.build_toolbox(tool_settings(prometheus_url=failing.url))
        result = call_tool(box, "query_metrics", {"service": "order", "metric": "qps"})
    assert result.status == "error"
    assert "HTTP 500: query processing would load too many samples" in result.text


def test_description_names_the_configured_catalogue_and_the_schema_restricts_metric(sandbox_tools):
    spec = sandbox_tools.get("query_metrics")
    assert spec is not None
    catalogue = ["p99_latency", "qps", "error_rate", "client_error_rate", "rate_limited", "cpu_usage"]
    for name in catalogue:
        assert name in spec.description
    assert spec.parameters["properties"]["metric"]["enum"] == catalogue
    assert spec.parameters["properties"]["by"]["enum"] == ["", "pod", "version", "peer"]


def test_a_broken_template_is_that_metrics_error_and_never_a_failure_to_start(sandbox):
    client = wiring.build_prometheus(tool_settings(prometheus_url=sandbox.prometheus_url))
    catalogue = {
        "qps": MetricQuery('sum(rate(http_requests_total{$label="$service"}[5m]))', "rps"),
        "pod_qps": MetricQuery('sum(rate(http_requests_total{pod="$pod"}[5m]))', "rps"),
    }
    tools = MetricsTools(client, catalogue)
    assert tools.problems == {
        "pod_qps": [
            "unknown placeholder $pod; a template may use $label and $service",
            "the template never names $service, so every service would get the same series",
        ]
    }
    broken = call_tool(Toolbox(tools.specs()), "query_metrics", {"service": "order", "metric": "pod_qps"})
    assert broken.status == "error" and "PromQL template is broken (unknown placeholder $pod" in broken.text
    assert tools.query_metrics("order", "qps", "1h").status == "ok"


def test_label_replace_dollar_groups_are_promql_not_placeholders(sandbox):
    promql = (
        'sum(label_replace(rate(http_requests_total{$label="$service"}[5m]), "code", "$1", "status", "(.)..")'
        ' and on (code) label_replace(vector(1), "code", "${1}", "x", "(5)"))'
    )
    client = wiring.build_prometheus(tool_settings(prometheus_url=sandbox.prometheus_url))
    tools = MetricsTools(client, {"server_errors": MetricQuery(promql, "rps")})
    assert tools.problems == {}
    series = tools.series("order", "server_errors", "48h")
    assert '"$1", "status"' in series.promql and 'service="order"' in series.promql


def test_spike_that_recovered_is_reported_over_a_long_window(make_sandbox):
    """cache-stampede: catalog p99 rises ~26x and decays within 35 minutes; over 24h that is 7 points."""
    box = make_sandbox("cache-stampede")
    tools = wiring.build_toolbox(tool_settings(prometheus_url=box.prometheus_url))
    text = call_tool(tools, "query_metrics", {"service": "catalog", "metric": "p99_latency", "range": "24h"}).text
    [spike] = [line for line in text.splitlines() if line.startswith("spike: ")]
    start, back = box.incident_at, box.incident_at + timedelta(minutes=box.scenario.resolved_minutes)
    assert spike.startswith(f"spike: {start:%m-%d %H:%M} 9"), spike  # pinned to the minute, not the 5m step
    assert " ms -> peak 2," in spike and "back to ~9" in spike, spike
    back_clock = spike.rsplit(" by ", 1)[1]
    # up to a 5m step plus the 5m rate window after the scenario's recovery
    assert back_clock in {f"{back + timedelta(minutes=m):%m-%d %H:%M}" for m in range(0, 11)}, spike


def test_spike_line_sits_beside_the_change_at_fine_resolution(make_sandbox):
    box = make_sandbox("cache-stampede")
    tools = wiring.build_metrics_tools(tool_settings(prometheus_url=box.prometheus_url))
    series = tools.series("catalog", "p99_latency", interval(box, 2, 1))
    [spike] = series.spikes
    assert spike.start == box.incident_at and 2000 < spike.peak < 2700 and 85 < spike.before < 100
    assert render_series(series).count("\nspike: ") == 1


def test_steady_service_has_no_spike(sandbox):
    tools = wiring.build_metrics_tools(tool_settings(prometheus_url=sandbox.prometheus_url))
    series = tools.series("order", "qps", interval(sandbox))
    assert series.spikes == () and "spike:" not in render_series(series)


def test_spike_from_zero_renders_without_an_invented_factor():
    at = datetime(2026, 11, 29, 16, 11, tzinfo=UTC)
    spike = Spike(at, 0.0, at + timedelta(minutes=4), 0.68, at + timedelta(minutes=5), 0.0)
    window = TimeWindow(at - timedelta(hours=1), at + timedelta(hours=1))
    points = ((at, 0.67), (at + timedelta(minutes=5), 0.0))
    stats = MetricStats(0.0, 0.0, 0.68, 0.0)
    series = MetricSeries(
        "fraud-check", "error_rate", "q", "%", window, 60, series_summary(points, 60), stats, (), 1, (spike,)
    )
    assert "\nspike: 16:11 0% -> peak 0.68% at 16:15 (from 0), back to ~0% by 16:16\n" in render_series(series)


def test_trend_and_sawtooth_render_as_compact_lines():
    at = datetime(2026, 11, 29, 9, 10, tzinfo=UTC)
    window = TimeWindow(at - timedelta(hours=2), at + timedelta(hours=4))
    points = ((at, 420.0), (at + timedelta(hours=4), 890.0))
    trend = Trend(at, at + timedelta(hours=4), 420.0, 890.0, 0.35)
    saw = Sawtooth((at + timedelta(minutes=30), at + timedelta(hours=4)), 420.0, 890.0)
    series = MetricSeries(
        "order",
        "memory_usage",
        "q",
        "MB",
        window,
        300,
        series_summary(points, 300),
        MetricStats(420, 600, 890, 890),
        (),
        1,
        (),
        (trend,),
        saw,
    )
    text = render_series(series)
    assert "\ntrend: +35 %/h since 09:10 (420 MB -> 890 MB, x2.1)\n" in text
    assert "\nsawtooth: 2 drops (restarts?) 09:40–13:10, 890 MB -> 420 MB (x2.1)\n" in text
    assert "none detected" not in text


def test_oom_loop_reads_as_a_sawtooth_of_restarts(make_sandbox, tmp_path):
    """cart's memory climbs to 2 GiB in 40 minutes and is OOM-killed, again and again, from 190 minutes ago."""
    box = make_sandbox("memory-leak-oom")
    tools = wiring.build_metrics_tools(sandbox_settings(box, tmp_path))  # the catalogue with memory_usage
    series = tools.series("cart", "memory_usage", interval(box, 4, 2))
    assert series.sawtooth is not None and len(series.sawtooth.drops) >= 3, render_series(series)
    assert series.sawtooth.drops[0] >= box.incident_at - timedelta(minutes=45)
    assert "\nsawtooth: " in render_series(series) and "(restarts?)" in render_series(series)


def test_too_few_points_read_as_not_checked_rather_than_nothing_found():
    at = datetime(2026, 11, 29, 16, 0, tzinfo=UTC)
    window = TimeWindow(at, at + timedelta(minutes=4))
    points = tuple((at + timedelta(minutes=i), v) for i, v in enumerate((100.0, 100.0, 900.0, 900.0)))
    summary = series_summary(points, 60)
    series = MetricSeries(
        "order", "p99_latency", "q", "ms", window, 60, summary, MetricStats(100, 500, 900, 900), (), 1
    )
    text = render_series(series)
    assert "change: not checked (only 4 points; detection needs 7)" in text and "none detected" not in text


def test_no_samples_say_nothing_was_checked():
    at = datetime(2026, 11, 29, 16, 0, tzinfo=UTC)
    series = MetricSeries(
        "order", "p99_latency", "q", "ms", TimeWindow(at, at), 60, series_summary((), 60), None, (), 0
    )
    assert "nothing was checked" in render_series(series) and "change:" not in render_series(series)
