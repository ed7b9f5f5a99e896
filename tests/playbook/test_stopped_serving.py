"""A dependency that stopped serving: its traffic collapses and its latency and error series stop. Both are
significant changes the walk follows to its deploy; a series with no samples is "no samples", never "no change"."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.eval import fact_named
from bot.eval.scoring import headline_from_answer
from bot.playbook.evidence import NO_SAMPLES, change_points_of, stops_of
from bot.playbook.findings import Findings, ServiceHealth
from bot.playbook.probes import ProbeRun, Window
from bot.playbook.servicewalk import follow_downstream
from bot.playbook.verdict import conclusion_from_findings
from tests.playbook.canned import change, metrics_toolbox, series, steady, stop
from tests.playbook.test_playbook import _diagnose

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
ROLES = {"latency": "p99_latency", "errors": "error_rate", "traffic": "qps"}
SERIES = {
    ("search", "p99_latency"): steady(NOW, "search", "p99_latency", "ms", 45),
    ("search", "error_rate"): series(
        NOW, "search", "error_rate", "%", (0.1, 0.1, 55, 54), changes=[change(NOW, "11:21", 0.098, 54.7)]
    ),
    ("ranker", "p99_latency"): steady(NOW, "ranker", "p99_latency", "ms", 45),
    ("ranker", "error_rate"): steady(NOW, "ranker", "error_rate", "%", 45),
    ("ranker", "qps"): series(NOW, "ranker", "qps", "req/s", (0, 150, 180, 0), changes=[change(NOW, "11:20", 152, 0)]),
    ("cache", "p99_latency"): steady(NOW, "cache", "p99_latency", "ms", 45),
    ("cache", "error_rate"): steady(NOW, "cache", "error_rate", "%", 45),
    ("cache", "qps"): series(NOW, "cache", "qps", "req/s", (80, 100, 120, 70), changes=[change(NOW, "11:40", 100, 70)]),
}


def _run() -> ProbeRun:
    return ProbeRun(metrics_toolbox(SERIES), None, Window("6h", "the last 6 hours", NOW))


def test_a_dependency_whose_traffic_collapsed_is_followed_although_its_latency_and_errors_look_steady():
    findings = Findings(window_label="the last 6 hours", roles=dict(ROLES))
    run = _run()
    run.read_metric("search errors", findings.health.setdefault("search", ServiceHealth("search")), "error_rate")
    path = follow_downstream(run, findings, {"search": ["ranker", "cache"]}, "search")
    assert path == ["ranker"]  # a 30 % dip in cache's traffic is no collapse
    read = [(s.args["service"], s.args["metric"]) for s in run.steps]
    assert ("ranker", "qps") in read and "stopped serving" in run.steps[read.index(("ranker", "qps"))].thought
    assert findings.first_change("ranker") == ("qps", datetime(2026, 12, 1, 11, 20, tzinfo=UTC))


def test_a_fall_to_zero_is_the_biggest_change_not_none():
    [point] = change_points_of(SERIES[("ranker", "qps")])
    assert point.ratio == 0 and point.strength > 10 and point.after_text == "0 req/s" and point.factor == ""
    findings = Findings(window_label="the last 6 hours", roles=dict(ROLES))
    assert findings.collapsed("qps", point) and not findings.collapsed("p99_latency", point)


def test_a_series_that_stopped_is_a_change_to_no_samples_and_worded_so():
    stopped = series(NOW, "ranker", "p99_latency", "ms", (47, 49, 60, 56), stopped=stop(NOW, "11:24", 55.9))
    [point] = stops_of(stopped)
    assert point.after_text == NO_SAMPLES and point.at == datetime(2026, 12, 1, 11, 24, tzinfo=UTC)
    health = ServiceHealth("ranker", {"p99_latency": [point]})
    assert health.changed("p99_latency") == point  # significant: never "no change"
    worded = health.describe("p99_latency", point)
    assert worded == (
        "ranker p99 latency stopped at 11:24 UTC: no samples since (last 55.9 ms), so no requests were measured "
        "(whether the service or the metrics collection stopped is unknown)"  # its cause was not checked
    )


def test_a_metric_with_no_samples_at_all_is_reported_as_no_samples_not_as_no_change():
    findings = Findings(window_label="the last 6 hours", roles=dict(ROLES), service="search")
    run = _run()
    health = findings.health.setdefault("ledger", ServiceHealth("ledger"))
    run.read_metric("ledger latency", health, "p99_latency")
    assert health.silent == {"p99_latency"} and run.steps[-1].status == "no_data"
    answer, _ = conclusion_from_findings(findings)
    assert "ledger p99_latency: no samples in the last 6 hours" in answer
    assert "ledger: no significant change" not in answer


def test_a_dependency_whose_pods_are_all_down_is_diagnosed_as_its_deploy(make_sandbox, tmp_path):
    box = make_sandbox("dependency-pods-down")
    trace = _diagnose(box, tmp_path)
    missing = [f for f in box.scenario.must_name if not fact_named(f, headline_from_answer(trace.answer))]
    assert not missing, trace.answer
    assert any(s.args.get("service") == "ranker" and s.action == "query_deploy_records" for s in trace.steps)


# It missed at some run clocks (04:30, 04:40, 05:40): the walk followed orders-db's earlier x1.5 latency wobble
# instead of fulfilment-worker's collapse. The walk now follows the most telling change (test_walk_choice.py).
def test_a_consumer_that_stopped_consuming_is_diagnosed_as_its_config_change(make_sandbox, tmp_path):
    box = make_sandbox("consumer-stopped-topic")
    trace = _diagnose(box, tmp_path)
    missing = [f for f in box.scenario.must_name if not fact_named(f, headline_from_answer(trace.answer))]
    assert not missing, trace.answer
