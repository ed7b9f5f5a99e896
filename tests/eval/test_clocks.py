"""The eval at several run clocks: a scenario is a hit only when it hits at every clock, and each clock shows."""

from __future__ import annotations

import itertools
import json
import re
from datetime import UTC, datetime, timedelta

from typer.testing import CliRunner

from bot.cli import app
from bot.engine.types import StopReason, Totals, Trace
from bot.eval import EvalCase, clocks_to_dict, clocks_to_table, run_clocks, spread_clocks

RIGHT = "Root cause: deploy order v2.8.1 raised maximumPoolSize.\nEvidence:\n- x"
WRONG = "Root cause: payment is slow.\nEvidence:\n- x"


def test_clocks_spread_evenly_over_the_day_that_ends_at_the_last():
    last = datetime(2026, 11, 29, 16, 11, 42, tzinfo=UTC)
    clocks = spread_clocks(6, last)
    assert clocks[0] == last.replace(second=0) and len(clocks) == 6
    assert all(a - b == timedelta(hours=4) for a, b in itertools.pairwise(clocks))


def test_a_scenario_that_misses_at_one_clock_is_a_miss():
    clocks = spread_clocks(3, datetime(2026, 11, 29, 16, 0, tzinfo=UTC))
    cases = [EvalCase("steady", "why?", ("v2.8.1",)), EvalCase("fragile", "why?", ("v2.8.1",))]

    def diagnoser(clock: datetime):
        def diagnose(case: EvalCase) -> Trace:
            wrong = case.name == "fragile" and clock.hour == 0  # only the 00:00 build of it fails
            return Trace(
                "t", case.question, "playbook", (), WRONG if wrong else RIGHT, True, StopReason.FINISH, Totals()
            )

        return diagnose

    report = run_clocks(cases, diagnoser, clocks, mode="playbook")
    assert [run.report.hits for run in report.runs] == [2, 2, 1] and report.hits == 1
    assert report.hit("steady") and not report.hit("fragile")
    table = clocks_to_table(report)
    assert re.search(r"^fragile\s+yes\s+yes\s+NO\s+NO$", table, re.MULTILINE), table
    assert re.search(r"^TOTAL\s+2/2\s+2/2\s+1/2\s+1/2$", table, re.MULTILINE), table
    assert "miss fragile at 11-29 00:00: headline misses: v2.8.1" in table
    data = clocks_to_dict(report)
    assert data["totals"]["hits"] == 1 and list(data["totals"]["per_clock"].values()) == [2, 2, 1]
    assert data["scenarios"][1] == {
        "scenario": "fragile",
        "hit": False,
        "clocks": dict(zip(data["clocks"], [True, True, False], strict=True)),
    }
    json.dumps(data)


def test_eval_clocks_runs_a_scenario_at_each_clock_and_prints_the_verdict(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = {
        "OPSBOT_SANDBOX__DIR": str(tmp_path / "sandbox"),
        "OPSBOT_STORE__SQLITE_PATH": str(tmp_path / "t.db"),
        "OPSBOT_LLM__BASE_URL": None,
        "OPSBOT_LLM__API_KEY": None,
        "OPSBOT_LOG_LEVEL": "WARNING",
    }
    args = ["eval", "--playbook", "--clocks", "2", "--at", "00:05", "--scenario", "hikari-pool"]
    result = CliRunner().invoke(app, args, env=env)
    assert result.exit_code == 0, result.output
    assert re.search(r"^hikari-pool\s+yes\s+yes\s+yes$", result.output, re.MULTILINE), result.output
    assert "2 run clocks" in result.output and "12:05" in result.output and "00:05" in result.output
    history = CliRunner().invoke(app, ["eval", "--history", "5"], env=env)
    assert history.output.count("1/1") == 2  # each clock's run is kept


def test_eval_clocks_refuses_a_list_with_at_and_a_bad_count(tmp_path):
    env = {"OPSBOT_SANDBOX__DIR": str(tmp_path / "s"), "OPSBOT_STORE__SQLITE_PATH": str(tmp_path / "t.db")}
    both = CliRunner().invoke(app, ["eval", "--playbook", "--clocks", "01:00,02:00", "--at", "03:00"], env=env)
    assert both.exit_code == 2 and "leave it out" in both.output
    zero = CliRunner().invoke(app, ["eval", "--playbook", "--clocks", "0"], env=env)
    assert zero.exit_code == 2 and "between 1 and 48" in zero.output
