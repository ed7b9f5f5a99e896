from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.cli import app
from bot.store.sqlite import SqliteTraceStore
from tests.store.known_traces import VOTES, known_traces, make_trace, step


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    path = tmp_path / "traces.db"
    store = SqliteTraceStore(path)
    for trace in known_traces():
        store.save(trace)
    for trace_id, user, vote in VOTES:
        store.record_feedback(trace_id, user, vote)
    store.close()
    monkeypatch.chdir(tmp_path)  # no developer .env is read
    return {"OPSBOT_STORE__BACKEND": "sqlite", "OPSBOT_STORE__SQLITE_PATH": str(path)}


def run(env: dict[str, str], *args: str) -> str:
    result = CliRunner().invoke(app, ["traces", *args], env=env)
    assert result.exit_code == 0, result.output
    return result.output


def test_traces_list_filters_long_runs(env: dict[str, str]) -> None:
    assert [line.split()[0] for line in run(env, "list", "--min-steps", "4").splitlines()] == ["t2"]
    assert len(run(env, "list", "--since", "", "--limit", "3").splitlines()) == 3


def test_traces_show_prints_steps_or_json(env: dict[str, str]) -> None:
    assert json.loads(run(env, "show", "t3", "--json"))["protocol"] == "playbook"
    assert "maximumPoolSize 50 -> 200" in run(env, "show", "t3")
    missing = CliRunner().invoke(app, ["traces", "show", "nope"], env=env)
    assert missing.exit_code == 1


def test_traces_show_prints_every_observation_line(env: dict[str, str]) -> None:
    """Slack's trimmed answer sends people here for the whole trace, so nothing is cut."""
    observation = "\n".join(f"line {n}" for n in range(1, 41))
    store = SqliteTraceStore(Path(env["OPSBOT_STORE__SQLITE_PATH"]))
    store.save(make_trace("t9", "2026-11-28T12:00:00Z", [step(1, "query_logs", observation=observation)]))
    store.close()
    shown = run(env, "show", "t9")
    assert "line 40" in shown and "more lines" not in shown


def test_traces_search_and_stats_answer_operators(env: dict[str, str]) -> None:
    assert run(env, "search", "checkout").split()[0] == "t2"
    stats = run(env, "stats", "--since", "")
    assert "runs: 5" in stats
    assert "p50 10.0 s   p95 90.0 s" in stats
    assert "1 up, 2 down (33% helpful)" in stats
    assert "query_logs" in stats and "100.0%" in stats


def test_traces_stats_rejects_an_unreadable_since(env: dict[str, str]) -> None:
    result = CliRunner().invoke(app, ["traces", "stats", "--since", "last tuesday"], env=env)
    assert result.exit_code == 2
    assert "--since" in result.output
