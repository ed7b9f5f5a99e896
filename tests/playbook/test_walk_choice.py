"""Which changed dependency the walk follows: the most telling change (a stop over a x2 rise over a x1.5 wobble),
then the earliest of that kind. A near-zero error ratio that wobbles is noise, not a change a caller feels."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.playbook.evidence import change_points_of, spikes_of, stops_of
from bot.playbook.findings import NOT_FELT, STOPPED, STRONG, WEAK, Findings, ServiceHealth
from bot.playbook.probes import ProbeRun, Window
from bot.playbook.servicewalk import follow_downstream
from tests.playbook.canned import change, metrics_toolbox, series, spike, steady, stop
from tools.metrics.series import MetricSeries

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
ROLES = {"latency": "p99_latency", "errors": "error_rate", "traffic": "qps"}
Key = tuple[str, str]


def steady_ms(service: str) -> MetricSeries:
    return steady(NOW, service, "p99_latency", "ms", 45)


def steady_ratio(service: str) -> MetricSeries:
    return steady(NOW, service, "error_rate", "%", 0.1)


def steady_qps(service: str) -> MetricSeries:
    return steady(NOW, service, "qps", "req/s", 100)


def caller_errors() -> MetricSeries:
    return series(NOW, "shop", "error_rate", "%", (0.1, 0.1, 52, 50), changes=[change(NOW, "11:30", 0.1, 48)])


def tiny_ratio_wobble(service: str) -> MetricSeries:
    wobble = change(NOW, "11:23", 0.0072, 0.012)
    return series(NOW, service, "error_rate", "%", (0.0049, 0.0073, 0.015, 0.012), changes=[wobble])


def latency_wobble(service: str) -> MetricSeries:
    return series(NOW, service, "p99_latency", "ms", (11, 12, 19, 18), changes=[change(NOW, "11:20", 12.1, 18.4)])


def stopped(service: str, metric: str, unit: str, before: float) -> MetricSeries:
    levels = (before * 0.8, before, before * 1.1, before)
    return series(NOW, service, metric, unit, levels, stopped=stop(NOW, "11:29", before))


def collapsed_qps(service: str) -> MetricSeries:
    return series(NOW, service, "qps", "req/s", (1, 60, 72, 1.7), changes=[change(NOW, "11:28", 61, 1.7)])


def blipping_ratio(service: str) -> MetricSeries:
    """The few requests a dependency still gets once its traffic collapsed: its errors fall to 0, then blip."""
    blip = spike(NOW, "11:38", 0, ("11:42", 0.39), ("11:47", 0))
    return series(
        NOW, service, "error_rate", "%", (0, 0.1, 0.39, 0), changes=[change(NOW, "11:30", 0.1, 0)], spikes=[blip]
    )


def _walk(found: dict[Key, MetricSeries], topology: dict[str, list[str]]) -> tuple[list[str], ProbeRun]:
    run = ProbeRun(metrics_toolbox(found), None, Window("6h", "the last 6 hours", NOW))
    findings = Findings(window_label="the last 6 hours", roles=dict(ROLES))
    run.read_metric("errors", findings.health.setdefault("shop", ServiceHealth("shop")), "error_rate")
    return follow_downstream(run, findings, topology, "shop"), run


def test_a_stopped_dependency_is_followed_over_a_tiny_error_ratio_that_wobbled_earlier():
    path, _ = _walk(
        {
            ("shop", "error_rate"): caller_errors(),
            ("shop-db", "p99_latency"): steady_ms("shop-db"),
            ("shop-db", "error_rate"): tiny_ratio_wobble("shop-db"),
            ("shop-db", "qps"): steady_qps("shop-db"),
            ("payments", "p99_latency"): stopped("payments", "p99_latency", "ms", 183),
            ("payments", "error_rate"): stopped("payments", "error_rate", "%", 0.1),
        },
        {"shop": ["shop-db", "payments"]},
    )
    assert path == ["payments"]


def test_a_collapse_is_followed_over_a_latency_wobble_that_came_first_and_the_noisy_errors_do_not_hide_it():
    path, run = _walk(
        {
            ("shop", "error_rate"): caller_errors(),
            ("shop-db", "p99_latency"): latency_wobble("shop-db"),
            ("shop-db", "error_rate"): steady_ratio("shop-db"),
            ("shop-db", "qps"): steady_qps("shop-db"),
            ("resizer", "p99_latency"): steady_ms("resizer"),
            ("resizer", "error_rate"): blipping_ratio("resizer"),
            ("resizer", "qps"): collapsed_qps("resizer"),
        },
        {"shop": ["shop-db", "resizer"]},
    )
    assert path == ["resizer"]
    read = [(s.args["service"], s.args["metric"]) for s in run.steps]
    assert ("resizer", "qps") in read  # the blip from 0 % stays under the floor: the traffic is read
    assert "only a small rise" in run.steps[read.index(("shop-db", "qps"))].thought


def test_a_tiny_error_ratio_that_wobbled_alone_is_not_followed():
    path, _ = _walk(
        {
            ("shop", "error_rate"): caller_errors(),
            ("shop-db", "p99_latency"): steady_ms("shop-db"),
            ("shop-db", "error_rate"): tiny_ratio_wobble("shop-db"),
            ("shop-db", "qps"): steady_qps("shop-db"),
        },
        {"shop": ["shop-db"]},
    )
    assert path == []


def test_a_weak_latency_rise_alone_is_still_followed():
    path, _ = _walk(
        {
            ("shop", "error_rate"): caller_errors(),
            ("shop-db", "p99_latency"): latency_wobble("shop-db"),
            ("shop-db", "error_rate"): steady_ratio("shop-db"),
            ("shop-db", "qps"): steady_qps("shop-db"),
        },
        {"shop": ["shop-db"]},
    )
    assert path == ["shop-db"]


def test_between_two_strong_rises_the_earlier_is_followed():
    later = series(NOW, "a", "p99_latency", "ms", (40, 45, 900, 880), changes=[change(NOW, "11:31", 45, 880)])
    earlier = series(NOW, "b", "p99_latency", "ms", (40, 45, 200, 190), changes=[change(NOW, "11:25", 45, 190)])
    path, _ = _walk(
        {
            ("shop", "error_rate"): caller_errors(),
            ("a", "p99_latency"): later,
            ("a", "error_rate"): steady_ratio("a"),
            ("b", "p99_latency"): earlier,
            ("b", "error_rate"): steady_ratio("b"),
        },
        {"shop": ["a", "b"]},
    )
    assert path == ["b"]


def test_each_change_is_weighed_by_what_it_says_about_a_dependency():
    findings = Findings(window_label="the last 6 hours", roles=dict(ROLES))
    [wobble] = change_points_of(tiny_ratio_wobble("shop-db"))
    [small_rise] = change_points_of(latency_wobble("shop-db"))
    [collapse] = change_points_of(collapsed_qps("resizer"))
    [(blip, _)] = spikes_of(blipping_ratio("resizer"))
    [errors_up] = change_points_of(caller_errors())
    ms_rise = series(NOW, "x", "p99_latency", "ms", (0, 0, 0, 0), changes=[change(NOW, "11:20", 0.0072, 0.012)])
    [a_ms_rise] = change_points_of(ms_rise)
    [stop_point] = stops_of(stopped("payments", "p99_latency", "ms", 183))
    assert findings.weight("error_rate", wobble) == NOT_FELT  # 0.007 % -> 0.012 %: under the floor both sides
    assert findings.weight("error_rate", blip) == NOT_FELT
    assert findings.weight("error_rate", errors_up) == STRONG
    assert findings.weight("p99_latency", small_rise) == WEAK
    assert findings.weight("p99_latency", a_ms_rise) == WEAK  # the floor is for ratios only
    assert findings.weight("qps", collapse) == STOPPED
    assert findings.weight("p99_latency", stop_point) == STOPPED
