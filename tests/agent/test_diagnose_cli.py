"""`opsbot diagnose`: the readable trace and --json, over the real CLI, LLM adapter and toolbox."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.cli import app
from tests.fakes.llm import ScriptedLLM

runner = CliRunner()


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scripted_llm: ScriptedLLM) -> dict[str, str]:
    """Environment for a CLI run: the ScriptedLLM, and every state path in a temp dir (no developer .env)."""
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith(("OPSBOT_", "OPENAI_"))]:
        monkeypatch.delenv(name)
    return {
        "OPSBOT_LLM__BASE_URL": scripted_llm.base_url,
        "OPSBOT_LLM__API_KEY": "test",
        "OPSBOT_LLM__MAX_RETRIES": "0",
        "OPSBOT_LOGS__SQLITE_PATH": str(tmp_path / "logs.db"),
        "OPSBOT_DEPLOYS__GIT_REPO": str(tmp_path / "deploys"),
        "OPSBOT_STORE__SQLITE_PATH": str(tmp_path / "traces.db"),
    }


def script_calculation(scripted: ScriptedLLM) -> None:
    scripted.script(
        {
            "content": "Compute the error budget burn.",
            "tool_calls": [{"name": "calculate", "arguments": {"expression": "(1 - 0.999) * 30 * 24 * 60"}}],
        },
        {"content": "Thought: computed.\nFinal Answer: a 99.9% SLO allows 43.2 minutes of downtime in 30 days."},
    )


def test_diagnose_prints_steps_then_the_answer(cli_env: dict[str, str], scripted_llm: ScriptedLLM) -> None:
    script_calculation(scripted_llm)
    result = runner.invoke(
        app, ["diagnose", "how many minutes of downtime does a 99.9% SLO allow in 30 days?"], env=cli_env
    )

    assert result.exit_code == 0, result.output
    assert "[1] calculate(expression=" in result.output
    assert "Thought: Compute the error budget burn." in result.output
    assert "43.2" in result.output
    assert "complete" in result.output and "stop: finish" in result.output
    assert result.output.index("[1] calculate") < result.output.index("43.2 minutes")


def test_diagnose_json_prints_the_trace(cli_env: dict[str, str], scripted_llm: ScriptedLLM) -> None:
    script_calculation(scripted_llm)
    result = runner.invoke(app, ["diagnose", "--json", "SLO downtime?"], env=cli_env)

    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data) >= {"trace_id", "question", "protocol", "steps", "answer", "complete", "stop_reason", "totals"}
    assert data["steps"][0]["action"] == "calculate" and data["steps"][0]["status"] == "ok"
    assert data["complete"] is True and data["totals"]["tokens"] > 0


def test_diagnose_shows_a_partial_label_when_the_llm_is_down(
    cli_env: dict[str, str], scripted_llm: ScriptedLLM
) -> None:
    scripted_llm.script({"status": 500})
    result = runner.invoke(app, ["diagnose", "why is order slow?"], env=cli_env)

    assert result.exit_code == 0, result.output
    assert "PARTIAL" in result.output and "stop: llm_unavailable" in result.output
    assert "The LLM was unavailable" in result.output


def test_diagnose_without_an_llm_says_how_to_configure_one(cli_env: dict[str, str]) -> None:
    env = {k: v for k, v in cli_env.items() if not k.startswith("OPSBOT_LLM__")}
    result = runner.invoke(app, ["diagnose", "why is order slow?"], env=env)

    assert result.exit_code == 2
    assert "No LLM is configured" in result.output
