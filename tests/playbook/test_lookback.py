"""A problem older than the playbook's window, or constant across it, is not "no incident".

The sandbox scenarios here are time-independent: their incidents are set in minutes before the run clock
(hikari-pool-30h at -1800m, constant-export-denied with errors from before the metrics begin). Where the onset
falls in its hour still moves the lookback's 1 h points, so run clocks that once placed it hours late are pinned.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot import wiring
from bot.engine.types import Question
from bot.playbook.evidence import ChangePoint, LogSignature
from bot.playbook.findings import Findings, Lookback, ServiceHealth
from bot.playbook.flatline import HEAVY_ERROR_LINES
from bot.playbook.onset import day_of, ongoing_shift, start_of
from bot.playbook.probes import Window
from bot.playbook.verdict import conclusion_from_findings
from tests.eval.harness import sandbox_settings
from tests.fakes.backends import RunningSandbox, run_clock_at, start_sandbox

NOW = datetime(2026, 12, 1, 21, 23, tzinfo=UTC)
WINDOW_START = NOW - timedelta(hours=24)
ROLES = {"latency": "p99_latency", "errors": "error_rate", "traffic": "qps"}


def _flat(signature: LogSignature | None, level: str = "ERROR") -> Findings:
    health = ServiceHealth("order", {"p99_latency": [], "error_rate": [], "qps": []})
    findings = Findings(
        "the last 24h",
        service="order",
        roles=ROLES,
        health={"order": health},
        lookback=Lookback("the last 7d", "the last 24h", NOW - timedelta(hours=34)),
    )
    if signature is not None:
        findings.signatures["order"] = [signature]
        findings.log_levels["order"] = level
    return findings


POOL = LogSignature(
    121,
    "HikariPool-<n> - Connection is not available, request timed out after <n>ms",
    "HikariPool-1 - Connection is not available, request timed out after 30000ms",
)


def test_flat_metrics_with_heavy_errors_say_the_problem_is_older_or_constant_not_no_incident() -> None:
    answer, complete = conclusion_from_findings(_flat(POOL))
    headline = answer.split("\n\n")[0]
    assert not complete and "No incident found" not in answer
    assert "121x HikariPool-1 - Connection is not available" in headline
    assert "older than the metrics or constant" in headline and "nor over the last 7d" in headline
    unknown = answer.split("Still unknown:")[1]
    assert "nothing specific" not in unknown
    assert "not checked: anything before 11-30 11:23 UTC" in unknown


def test_flat_metrics_with_few_errors_or_only_warnings_are_no_incident_and_still_say_what_is_open() -> None:
    for findings in (
        _flat(None),
        _flat(LogSignature(HEAVY_ERROR_LINES - 1, "x failed")),
        _flat(LogSignature(500, "slow call"), level="WARN"),
    ):
        answer, complete = conclusion_from_findings(findings)
        assert not complete and answer.startswith(
            "No incident found: order's metrics show no significant change over the last 24h, nor over the last 7d"
        ), answer
        unknown = answer.split("Still unknown:")[1]
        assert "nothing specific" not in unknown and "not checked: anything before" in unknown


def test_no_named_service_and_nothing_changed_reads_without_a_double_negative() -> None:
    health = ServiceHealth("order", {"p99_latency": [], "error_rate": [], "qps": []})
    findings = Findings("the last 24h", service="", roles=ROLES, health={"order": health})
    answer, complete = conclusion_from_findings(findings)
    assert not complete and answer.startswith(
        "No incident found: no service shows a significant change over the last 24h."
    ), answer


def _point(hours_ago: float, before: float, after: float, spike: bool = False) -> ChangePoint:
    return ChangePoint(NOW - timedelta(hours=hours_ago), before, after, "ms", after / before, spike=spike)


def test_a_shift_before_the_window_that_still_holds_is_the_onset() -> None:
    health = ServiceHealth("order", {"p99_latency": [_point(30, 200, 1200)]})
    found = ongoing_shift(health, WINDOW_START)
    assert found is not None and found[0] == "p99_latency" and found[2] == "1,200 ms"


def test_a_past_spike_a_shift_undone_later_or_one_inside_the_window_is_not_an_onset() -> None:
    spike = ServiceHealth("order", {"p99_latency": [_point(30, 200, 2000, spike=True)]})
    undone = ServiceHealth("order", {"p99_latency": [_point(30, 200, 1200), _point(27, 1200, 210)]})
    recent = ServiceHealth("order", {"p99_latency": [_point(3, 200, 1200)]})
    assert [ongoing_shift(h, WINDOW_START) for h in (spike, undone, recent)] == [None, None, None]


def test_the_onset_day_is_a_word_or_month_day_never_a_number_of_hours() -> None:
    assert day_of(NOW - timedelta(hours=30), NOW) == "yesterday" and day_of(NOW - timedelta(hours=2), NOW) == "today"
    assert day_of(NOW - timedelta(hours=60), NOW) == "on 11-29"


def test_the_window_start_is_read_from_a_duration_or_an_iso_interval() -> None:
    assert start_of(Window("24h", "the last 24h", NOW)) == WINDOW_START
    interval = Window("2026-11-30T13:05:00Z/2026-11-30T17:05:00Z", "13:05 → 17:05", NOW)
    assert start_of(interval) == datetime(2026, 11, 30, 13, 5, tzinfo=UTC)
    assert start_of(Window("soon", "?", NOW)) is None  # unreadable: no wider look rather than a wrong one


def _diagnose(box, tmp_path, text: str = ""):
    settings = sandbox_settings(box, tmp_path, toolsets=True)
    tools = wiring.build_toolbox(settings, clock=lambda: box.now)  # the sandbox's clock, as the playbook's
    return wiring.build_playbook(settings)(Question(text or box.scenario.question), tools, now=box.now)


def test_an_incident_older_than_the_window_is_found_with_its_real_start_and_diagnosed(make_sandbox, tmp_path):
    _assert_found_with_its_real_start_and_diagnosed(make_sandbox("hikari-pool-30h"), tmp_path)


@pytest.mark.parametrize("clock", ["13:58", "13:59"])
def test_an_older_incident_late_in_its_hour_is_found_at_its_real_start(clock, tmp_path):
    # the onset (07:58 or 07:59, 30 h back) falls late in its hour at the lookback's 1 h step: both the latency and
    # the error change were placed 2 h late (10:00) at these run clocks, and the onset with them
    hour, minute = (int(part) for part in clock.split(":"))
    box = start_sandbox("hikari-pool-30h", tmp_path / "sandbox", run_clock_at(hour, minute))
    try:
        _assert_found_with_its_real_start_and_diagnosed(box, tmp_path)
    finally:
        box.stop()


def _assert_found_with_its_real_start_and_diagnosed(box: RunningSandbox, tmp_path: Path) -> None:
    trace = _diagnose(box, tmp_path)
    onset = box.incident_at
    headline = trace.answer.split("Evidence:")[0]
    assert trace.complete, trace.answer
    # 30 h back is "yesterday" after 06:00 UTC and "on MM-DD" (two days back) before it
    started = re.search(
        r"^Started (yesterday|on \d\d-\d\d) at (\d{2}):(\d{2}) UTC, before the last 24h", headline, re.MULTILINE
    )
    assert started is not None, trace.answer
    day, hour, minute = started.group(1), int(started.group(2)), int(started.group(3))
    said = box.now.replace(hour=hour, minute=minute) - timedelta(days=1 if day == "yesterday" else 2)
    assert day in ("yesterday", f"on {onset:%m-%d}") and abs(said - onset) <= timedelta(minutes=5), headline
    assert "still going on" in trace.answer and "v2.8.1" in trace.answer and "maximumPoolSize 50 → 200" in trace.answer
    wide = [s for s in trace.steps if s.action == "query_metrics" and s.args.get("range") == "7d"]
    assert wide and "a problem that began earlier is flat there too" in wide[0].thought
    # every change the wide look finds in order (latency, errors) is placed at the onset, not hours after it
    changes = [
        (s.args["metric"], _dated(m.group(1), box.now))
        for s in wide
        if s.args["service"] == "order" and (m := re.search(r"^change: (\d\d-\d\d \d\d:\d\d)", s.observation, re.M))
    ]
    assert {metric for metric, _ in changes} >= {"p99_latency", "error_rate"}, changes
    assert all(abs(at - onset) <= timedelta(minutes=5) for _, at in changes), (onset, changes)
    deploys = next(s for s in trace.steps if s.action == "query_deploy_records" and s.args["service"] == "order")
    assert deploys.args["start"] < f"{onset:%Y-%m-%dT%H:%M}" < deploys.args["end"]  # run against that onset


def _dated(text: str, now: datetime) -> datetime:
    """A tool's "MM-DD HH:MM" (it prints no year) as its latest occurrence at or before `now`."""
    moment = datetime.strptime(f"{now.year}-{text}", "%Y-%m-%d %H:%M").replace(tzinfo=UTC)
    return moment if moment <= now else moment.replace(year=now.year - 1)


def test_errors_constant_across_all_the_metrics_are_reported_not_called_no_incident(make_sandbox, tmp_path):
    trace = _diagnose(make_sandbox("constant-export-denied"), tmp_path)
    headline, unknown = trace.answer.split("Evidence:")[0], trace.answer.split("Still unknown:")[1]
    assert not trace.complete and "No incident found" not in trace.answer
    assert "AccessDenied" in headline and "older than the metrics or constant" in headline
    assert "not checked: anything before" in unknown and "nothing specific" not in unknown


def test_a_healthy_service_is_still_no_incident_after_the_wider_look(make_sandbox, tmp_path):
    trace = _diagnose(make_sandbox("no-incident"), tmp_path)
    assert "No incident found" in trace.answer and "nor over the last 7d" in trace.answer, trace.answer
    assert "nothing specific" not in trace.answer


def test_a_service_the_bot_does_not_know_in_a_quiet_window_is_named_as_unknown(make_sandbox, tmp_path):
    # found as a new user: a service not in the topology, nothing changed, and the answer said "no service is named"
    trace = _diagnose(make_sandbox("no-incident"), tmp_path, "zebra-svc has been slow for half an hour, why?")
    unknowns = trace.answer.split("Still unknown:")[1]
    assert "the question names no service I know (" in unknowns and "name the service to check it" in unknowns
    assert "no service is named" not in unknowns
