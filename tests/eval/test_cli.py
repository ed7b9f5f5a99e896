"""`opsbot demo` and `opsbot eval` end to end: a fresh sandbox on a free port, the real CLI, no developer env."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from bot import wiring
from bot.cli import app
from bot.config import Settings, StoreSettings
from bot.sandbox.scenario import incident_time
from tests.eval.harness import replay_for
from tests.eval.test_suite import intent_or
from tests.fakes.backends import free_port

runner = CliRunner()


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str | None]]:
    """A clean environment: state under tmp_path, the sandbox on a free port, no LLM, no ./.env."""
    monkeypatch.chdir(tmp_path)
    env: dict[str, str | None] = {
        "OPSBOT_SANDBOX__DIR": str(tmp_path / "sandbox"),
        "OPSBOT_SANDBOX__PROMETHEUS_PORT": str(free_port()),
        "OPSBOT_STORE__SQLITE_PATH": str(tmp_path / "traces.db"),
        "OPSBOT_LOG_LEVEL": "WARNING",
        "OPENAI_API_KEY": None,
        "OPENAI_BASE_URL": None,
        "OPSBOT_LLM__BASE_URL": None,
        "OPSBOT_LLM__API_KEY": None,
    }
    yield env
    runner.invoke(app, ["sandbox", "down"], env=env)  # stops the demo's Prometheus by its recorded PID


def test_demo_from_nothing_diagnoses_the_default_incident_with_the_playbook(cli_env):
    result = runner.invoke(app, ["demo"], env=cli_env)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "No LLM configured" in out and "without a model" in out
    assert out.index("[1] query_metrics(") < out.index("[7] query_deploy_records(") < out.index("== complete")
    assert "Thought: order p99_latency changed at" in out
    assert "v2.8.1" in out and "maximumPoolSize 50 → 200" in out
    trace_id = out.rsplit("opsbot traces show ", 1)[1].strip()
    shown = runner.invoke(app, ["traces", "show", trace_id], env=cli_env)
    assert shown.exit_code == 0 and "maximumPoolSize" in shown.output


def test_demo_uses_the_configured_llm_and_prints_its_steps(cli_env, scripted_llm):
    incident = incident_time("yesterday 15:05", datetime.now(UTC))
    scripted_llm.responder = intent_or(replay_for("hikari-pool", SimpleNamespace(incident_at=incident)))
    env = {
        **cli_env,
        "OPSBOT_LLM__BASE_URL": scripted_llm.base_url,
        "OPSBOT_LLM__API_KEY": "test",
        "OPSBOT_LLM__MODEL": "scripted-model",
        "OPSBOT_LLM__MAX_RETRIES": "0",
    }
    result = runner.invoke(app, ["demo"], env=env)
    assert result.exit_code == 0, result.output
    assert "LLM: scripted-model" in result.output
    assert "[3] query_deploy_diff(" in result.output and "Root cause: deploy order v2.8.1" in result.output
    assert "== complete · stop: finish" in result.output


def test_eval_cli_reports_json_and_keeps_the_run_in_the_store(cli_env, tmp_path):
    result = runner.invoke(app, ["eval", "--scenario", "hikari-pool", "--playbook", "--json"], env=cli_env)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["mode"] == "playbook" and report["totals"]["hits"] == 1
    [row] = report["scenarios"]
    assert row["scenario"] == "hikari-pool" and row["hit"] and row["protocol"] == "playbook"
    settings = Settings(_env_file=None, store=StoreSettings(sqlite_path=tmp_path / "traces.db"))  # type: ignore[call-arg]
    store = wiring.build_store(settings)
    assert store.eval_runs(limit=1)[0]["run_id"] == report["run_id"]
    assert store.get(row["trace_id"]) is not None  # the scored trace can be read back
    assert not (tmp_path / "sandbox" / "eval" / "hikari-pool" / "state.json").exists()
    history = runner.invoke(app, ["eval", "--history", "5"], env=cli_env)
    assert history.exit_code == 0 and report["run_id"][:8] in history.output and "1/1" in history.output


def test_eval_cli_names_the_known_scenarios_for_an_unknown_one(cli_env):
    result = runner.invoke(app, ["eval", "--scenario", "nope"], env=cli_env)
    assert result.exit_code == 2
    assert "hikari-pool" in result.output


def test_eval_runs_a_teams_own_scenario_folder_and_reports_headline_and_evidence(cli_env, tmp_path):
    folder = tmp_path / "ours"
    folder.mkdir()
    source = Path(__file__).resolve().parents[2] / "bot" / "sandbox" / "scenarios" / "hikari-pool.toml"
    (folder / "pool.toml").write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    result = runner.invoke(app, ["eval", "--scenarios", str(folder), "--playbook"], env=cli_env)
    assert result.exit_code == 0, result.output
    assert f"· {folder} ·" in result.stdout and "headline" in result.stdout and "evidence" in result.stdout
    assert re.search(r"^TOTAL\s+1/1\s+1/1\s", result.stdout, re.MULTILINE), result.stdout


def test_eval_heldout_runs_only_the_held_out_set(cli_env):
    result = runner.invoke(
        app, ["eval", "--heldout", "--scenario", "heldout/healthy-quiet", "--playbook", "--json"], env=cli_env
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert [r["scenario"] for r in report["scenarios"]] == ["healthy-quiet"]
    assert {"headline_hits", "evidence_hits"} <= set(report["totals"])


def test_a_stored_trace_is_replayed_against_the_configured_model_without_any_backend(cli_env, scripted_llm):
    recorded = runner.invoke(app, ["eval", "--scenario", "hikari-pool", "--playbook", "--json"], env=cli_env)
    trace_id = json.loads(recorded.stdout)["scenarios"][0]["trace_id"]
    incident = incident_time("yesterday 15:05", datetime.now(UTC))
    scripted_llm.responder = intent_or(replay_for("hikari-pool", SimpleNamespace(incident_at=incident)))
    env = {
        **cli_env,
        "OPSBOT_LLM__BASE_URL": scripted_llm.base_url,
        "OPSBOT_LLM__API_KEY": "test",
        "OPSBOT_LLM__MODEL": "scripted-model",
        "OPSBOT_LLM__MAX_RETRIES": "0",
        "OPSBOT_PROMETHEUS__URL": "http://127.0.0.1:9",
    }  # the sandbox is down: only recorded observations exist
    result = runner.invoke(
        app, ["eval", "--from-trace", trace_id, "--expect", "v2.8.1", "--expect", "maximumPoolSize", "--json"], env=env
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["trace_id"] == trace_id and summary["replayed"]["protocol"] == "native"
    assert summary["replayed"]["tools"] and summary["score"]["headline_hit"] is True
    assert summary["replayed"]["answer"].startswith("Root cause: deploy order v2.8.1")
