"""Which changed dependency the walk follows: the most telling change (a stop over a x2 rise over a x1.5 wobble),
then the earliest of that kind. A near-zero error ratio that wobbles is noise, not a change a caller feels."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.playbook.evidence import change_points_from_text, spikes_from_text
from bot.playbook.findings import NOT_FELT, STOPPED, STRONG, WEAK, Findings, ServiceHealth
from bot.playbook.probes import ProbeRun, Window
from bot.playbook.servicewalk import follow_downstream
from tools.base import Toolbox, ToolResult, tool

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
ROLES = {"latency": "p99_latency", "errors": "error_rate", "traffic": "qps"}
NONE = "change: none detected (no level shift, spike, trend or sawtooth)"
STEADY_MS = f"min 40 ms · median 45 ms · max 50 ms · last 44 ms\n{NONE}"
STEADY_RATIO = f"min 0.08% · median 0.1% · max 0.12% · last 0.1%\n{NONE}"
STEADY_QPS = f"min 90 req/s · median 100 req/s · max 110 req/s · last 100 req/s\n{NONE}"
CALLER_ERRORS = "min 0.1% · median 0.1% · max 52% · last 50%\nchange: 11:30 0.1% -> 48% (x480.0)"
TINY_RATIO_WOBBLE = "min 0.0049% · median 0.0073% · max 0.015% · last 0.012%\nchange: 11:23 0.0072% -> 0.012% (x1.7)"
LATENCY_WOBBLE = "min 11 ms · median 12 ms · max 19 ms · last 18 ms\nchange: 11:20 12.1 ms -> 18.4 ms (x1.5)"
STOPPED_MS = (
    "min 150 ms · median 176 ms · max 194 ms · last 184 ms\n"
    "stopped: no samples after 11:29 (last 183 ms), 31m to the window's end: no requests were measured"
)
STOPPED_RATIO = (
    "min 0.08% · median 0.1% · max 0.12% · last 0.1%\n"
    "stopped: no samples after 11:29 (last 0.1%), 31m to the window's end: no requests were measured"
)
COLLAPSED_QPS = (
    "min 1 req/s · median 60 req/s · max 72 req/s · last 1.7 req/s\nchange: 11:28 61 req/s -> 1.7 req/s (x0.03)"
)
# the few requests a dependency still gets once its traffic collapsed: its errors fall to 0, then blip
BLIPPING_RATIO = (
    "min 0% · median 0.1% · max 0.39% · last 0%\nchange: 11:30 0.1% -> 0% (to 0)\n"
    "spike: 11:38 0% -> peak 0.39% at 11:42 (from 0), back to ~0% by 11:47"
)


def _walk(series: dict[tuple[str, str], str], topology: dict[str, list[str]]) -> tuple[list[str], ProbeRun]:
    def query_metrics(service: str, metric: str, range: str = "6h") -> ToolResult | str:
        """Canned observations in the tool's own line forms (tests only)."""
        text = series.get((service, metric))
        return text if text is not None else ToolResult("no_data", "no data: the query returned no samples")

    run = ProbeRun(Toolbox([tool(query_metrics)]), None, Window("6h", "the last 6 hours", NOW))
    findings = Findings(window_label="the last 6 hours", roles=dict(ROLES))
    run.read_metric("errors", findings.health.setdefault("shop", ServiceHealth("shop")), "error_rate")
    return follow_downstream(run, findings, topology, "shop"), run


def test_a_stopped_dependency_is_followed_over_a_tiny_error_ratio_that_wobbled_earlier():
    path, _ = _walk(
        {
            ("shop", "error_rate"): CALLER_ERRORS,
            ("shop-db", "p99_latency"): STEADY_MS,
            ("shop-db", "error_rate"): TINY_RATIO_WOBBLE,
            ("shop-db", "qps"): STEADY_QPS,
            ("payments", "p99_latency"): STOPPED_MS,
            ("payments", "error_rate"): STOPPED_RATIO,
        },
        {"shop": ["shop-db", "payments"]},
    )
    assert path == ["payments"]


def test_a_collapse_is_followed_over_a_latency_wobble_that_came_first_and_the_noisy_errors_do_not_hide_it():
    path, run = _walk(
        {
            ("shop", "error_rate"): CALLER_ERRORS,
            ("shop-db", "p99_latency"): LATENCY_WOBBLE,
            ("shop-db", "error_rate"): STEADY_RATIO,
            ("shop-db", "qps"): STEADY_QPS,
            ("resizer", "p99_latency"): STEADY_MS,
            ("resizer", "error_rate"): BLIPPING_RATIO,
            ("resizer", "qps"): COLLAPSED_QPS,
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
            ("shop", "error_rate"): CALLER_ERRORS,
            ("shop-db", "p99_latency"): STEADY_MS,
            ("shop-db", "error_rate"): TINY_RATIO_WOBBLE,
            ("shop-db", "qps"): STEADY_QPS,
        },
        {"shop": ["shop-db"]},
    )
    assert path == []


def test_a_weak_latency_rise_alone_is_still_followed():
    path, _ = _walk(
        {
            ("shop", "error_rate"): CALLER_ERRORS,
            ("shop-db", "p99_latency"): LATENCY_WOBBLE,
            ("shop-db", "error_rate"): STEADY_RATIO,
            ("shop-db", "qps"): STEADY_QPS,
        },
        {"shop": ["shop-db"]},
    )
    assert path == ["shop-db"]


def test_between_two_strong_rises_the_earlier_is_followed():
    later = "min 40 ms · median 45 ms · max 900 ms · last 880 ms\nchange: 11:31 45 ms -> 880 ms (x19.6)"
    earlier = "min 40 ms · median 45 ms · max 200 ms · last 190 ms\nchange: 11:25 45 ms -> 190 ms (x4.2)"
    path, _ = _walk(
        {
            ("shop", "error_rate"): CALLER_ERRORS,
            ("a", "p99_latency"): later,
            ("a", "error_rate"): STEADY_RATIO,
            ("b", "p99_latency"): earlier,
            ("b", "error_rate"): STEADY_RATIO,
        },
        {"shop": ["a", "b"]},
    )
    assert path == ["b"]


def test_each_change_is_weighed_by_what_it_says_about_a_dependency():
    findings = Findings(window_label="the last 6 hours", roles=dict(ROLES))
    [wobble] = change_points_from_text(TINY_RATIO_WOBBLE, NOW)
    [small_rise] = change_points_from_text(LATENCY_WOBBLE, NOW)
    [collapse] = change_points_from_text(COLLAPSED_QPS, NOW)
    [blip] = spikes_from_text(BLIPPING_RATIO, NOW)
    [errors_up] = change_points_from_text(CALLER_ERRORS, NOW)
    [a_ms_rise] = change_points_from_text("change: 11:20 0.0072 ms -> 0.012 ms (x1.7)", NOW)
    assert findings.weight("error_rate", wobble) == NOT_FELT  # 0.007 % -> 0.012 %: under the floor both sides
    assert findings.weight("error_rate", blip) == NOT_FELT
    assert findings.weight("error_rate", errors_up) == STRONG
    assert findings.weight("p99_latency", small_rise) == WEAK
    assert findings.weight("p99_latency", a_ms_rise) == WEAK  # the floor is for ratios only
    assert findings.weight("qps", collapse) == STOPPED
