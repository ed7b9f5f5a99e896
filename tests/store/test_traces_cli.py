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


def _store_partial(env: dict[str, str], trace_id: str) -> None:
    """A run that stored its stub and one step, then never its answer (still running, or its replica died)."""
    store = SqliteTraceStore(Path(env["OPSBOT_STORE__SQLITE_PATH"]))
    store.append_step(trace_id, "why is checkout timing out?", None)
    store.append_step(trace_id, "why is checkout timing out?", step(1, "query_logs", observation="timeout x40"))
    store.close()


def test_a_partial_run_is_listed_and_found_as_partial_never_with_an_empty_answer(env: dict[str, str]) -> None:
    _store_partial(env, "p1")
    [listed] = [line for line in run(env, "list", "--since", "").splitlines() if line.startswith("p1 ")]
    assert listed.split()[2] == "partial" and "interrupted" not in listed
    [found] = [line for line in run(env, "search", "checkout").splitlines() if line.startswith("p1 ")]
    assert "-> ''" not in found
    assert "[partial: no final answer stored, 1 steps kept; still running, or its replica stopped]" in found
    finished = [line for line in run(env, "list", "--since", "").splitlines() if line.startswith("t2 ")]
    assert finished[0].split()[2] == "max_steps"  # a finished run still shows its stop reason


def test_a_partial_run_whose_job_is_running_on_a_replica_is_listed_as_running(
    env: dict[str, str], redis_url: str
) -> None:
    import redis

    _store_partial(env, "p2")
    _store_partial(env, "p3")
    redis.Redis.from_url(redis_url).hset("opsbot:job:p2", mapping={"status": "running", "owner": "host-1"})
    env = env | {"OPSBOT_REDIS__URL": redis_url}
    states = {line.split()[0]: line.split()[2] for line in run(env, "list", "--since", "").splitlines()}
    assert states["p2"] == "running" and states["p3"] == "partial"  # p3's job is unknown to the queue
    [found] = [line for line in run(env, "search", "checkout").splitlines() if line.startswith("p2 ")]
    assert "[running: no answer yet, 1 steps so far]" in found
