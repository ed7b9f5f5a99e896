"""Incidents whose window crosses midnight UTC, and the eval's run clock (`opsbot eval --at`).

Over a window that spans two days the tools date their times (`change: 12-01 23:47 …`, `first 12-01 23:37:03`,
`example: 12-02 00:06:51 ERROR …`). Every reader of those lines (the playbook's evidence and confirmation, the
Slack findings) must read both forms: before this was tested, an incident at 23:35 lost its log confirmation and
its findings whenever the run happened just after midnight, and CI failed only then.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from typer.testing import CliRunner

from bot import wiring
from bot.cli import app
from bot.engine.types import Question
from bot.slack.delivery.answer import trace_to_blocks
from bot.slack.delivery.findings import finding_from_step, relative
from tests import toolresults
from tests.eval.harness import sandbox_settings
from tests.fakes.backends import RunningSandbox, start_sandbox
from tests.toolresults import series
from tools.timerange import TimeWindow


def _just_after_midnight() -> datetime:
    """00:05 UTC today: in the past (a sandbox holds data up to its clock), 30 min after a 23:35 incident."""
    return datetime.now(UTC).replace(hour=0, minute=5, second=0, microsecond=0)


@pytest.fixture(scope="module")
def midnight_box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningSandbox]:
    box = start_sandbox("two-deploys-earlier", tmp_path_factory.mktemp("midnight"), _just_after_midnight())
    yield box
    box.stop()


def test_an_incident_before_midnight_diagnosed_after_it_keeps_its_log_confirmation(midnight_box, tmp_path):
    box = midnight_box
    assert box.incident_at.date() < box.now.date()  # the window really crosses midnight
    router = wiring.build_responder(sandbox_settings(box, tmp_path), clock=lambda: box.now)
    trace = router(Question(box.scenario.question, source="slack"))
    logs = [s for s in trace.steps if s.action == "query_logs" and "first " in s.observation]
    assert logs and any(f"first {box.incident_at:%m-%d} " in s.observation for s in logs)  # dated stamps printed
    assert "commandTimeout" in trace.confirmed_by and "error log" in trace.confirmed_by, trace.answer
    body = trace_to_blocks(trace)[1]["text"]["text"]
    assert "• deploy: profile v3.3.0 (from v3.2.7)" in body and "commandTimeout 2000 → 20" in body
    assert "min after the deploy)" in body  # the log finding's dated first time was read and placed


def test_a_dated_change_line_is_a_finding_with_its_time() -> None:
    start = datetime(2026, 12, 1, 21, 36, tzinfo=UTC)
    window = TimeWindow(start, start + timedelta(hours=2, minutes=30))  # over midnight: times are dated
    profile = series("profile", changes=[(start + timedelta(minutes=122), 89.3, 698.0)], window=window)
    step = toolresults.step(1, "query_metrics", profile, service="profile", metric="p99_latency")
    assert "change: 12-01 23:38 89.3 ms -> 698 ms (x7.8)" in step.observation
    finding = finding_from_step(step, deploy_at="23:27")
    assert finding.kind == "change" and finding.at == "23:38"
    assert finding.text == "profile p99 latency 89.3 ms → 698 ms (x7.8) at 23:38 (11 min after the deploy)"


def test_minutes_from_a_deploy_count_across_midnight() -> None:
    assert relative("00:03", "23:58") == "00:03 (5 min after the deploy)"
    assert relative("23:58", "00:03") == "23:58 (5 min before the deploy)"
    assert relative("15:07", "15:02") == "15:07 (5 min after the deploy)"


def test_eval_at_refuses_a_time_that_is_not_one_or_is_in_the_future(tmp_path) -> None:
    env = {
        "OPSBOT_SANDBOX__DIR": str(tmp_path / "sandbox"),
        "OPSBOT_STORE__SQLITE_PATH": str(tmp_path / "t.db"),
        "OPSBOT_LLM__BASE_URL": None,
        "OPSBOT_LLM__API_KEY": None,
    }
    bad = CliRunner().invoke(app, ["eval", "--playbook", "--at", "half past", "--scenario", "hikari-pool"], env=env)
    assert bad.exit_code == 2 and "not a time" in bad.output
    later = (datetime.now(UTC) + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%MZ")
    future = CliRunner().invoke(app, ["eval", "--playbook", "--at", later, "--scenario", "hikari-pool"], env=env)
    assert future.exit_code == 2 and "in the future" in future.output


def test_eval_at_runs_a_scenario_at_that_clock(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    env = {
        "OPSBOT_SANDBOX__DIR": str(tmp_path / "sandbox"),
        "OPSBOT_STORE__SQLITE_PATH": str(tmp_path / "t.db"),
        "OPSBOT_LLM__BASE_URL": None,
        "OPSBOT_LLM__API_KEY": None,
        "OPSBOT_LOG_LEVEL": "WARNING",
    }
    result = CliRunner().invoke(
        app, ["eval", "--playbook", "--at", "00:05", "--scenario", "two-deploys-earlier"], env=env
    )
    assert result.exit_code == 0, result.output
    assert f"run clock {_just_after_midnight():%Y-%m-%d} 00:05 UTC" in result.output
    assert re.search(r"^TOTAL\s+1/1\s+1/1\s", result.output, re.MULTILINE), result.output
