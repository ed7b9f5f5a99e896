"""`opsbot diagnose`: the readable trace and --json, over the real CLI, LLM adapter and toolbox."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from bot.cli import app
from bot.routing.respond import NO_MODEL_NOTE
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
        "OPSBOT_PROMETHEUS__URL": "http://127.0.0.1:9",  # closed: never a sandbox someone left running
    }


DIAGNOSIS: list[dict[str, Any]] = [
    {
        "content": "How much of the 99.9% error budget did the 12 minutes at 1,180 ms burn? Compute it.",
        "tool_calls": [{"name": "calculate", "arguments": {"expression": "12 / ((1 - 0.999) * 30 * 24 * 60)"}}],
    },
    {"content": "Thought: computed.\nFinal Answer: the slow 12 minutes burned 0.2777 of the monthly error budget."},
]


def script_diagnosis(scripted: ScriptedLLM) -> None:
    """The diagnosis replies in order; the intent classifier (if it asks the model) is told "diagnose"."""
    replies = iter(DIAGNOSIS)

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        if "You route messages" in body["messages"][0]["content"]:
            return {"content": '{"route": "diagnose", "confidence": 0.95, "reason": "asks why"}'}
        return next(replies)

    scripted.responder = reply


QUESTION = "why is order p99 at 1,180 ms for 12 minutes, and how much error budget did that burn?"


def test_diagnose_prints_steps_then_the_answer(cli_env: dict[str, str], scripted_llm: ScriptedLLM) -> None:
    script_diagnosis(scripted_llm)
    result = runner.invoke(app, ["diagnose", QUESTION], env=cli_env)

    assert result.exit_code == 0, result.output
    assert "[1] calculate(expression=" in result.output
    assert "Thought: How much of the 99.9% error budget" in result.output
    assert "0.2777" in result.output  # the observation
    assert "complete" in result.output and "stop: finish" in result.output
    assert result.output.index("[1] calculate") < result.output.index("burned 0.2777")


def test_diagnose_json_prints_the_stored_trace(cli_env: dict[str, str], scripted_llm: ScriptedLLM) -> None:
    script_diagnosis(scripted_llm)
    result = runner.invoke(app, ["diagnose", "--json", QUESTION], env=cli_env)

    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) >= {"trace_id", "question", "protocol", "steps", "answer", "complete", "stop_reason", "totals"}
    assert data["steps"][0]["action"] == "calculate" and data["steps"][0]["status"] == "ok"
    assert data["complete"] is True and data["totals"]["tokens"] > 0
    shown = runner.invoke(app, ["traces", "show", data["trace_id"]], env=cli_env)
    assert shown.exit_code == 0 and "burned 0.2777" in shown.output


def test_diagnose_shows_a_partial_label_when_the_llm_is_down(
    cli_env: dict[str, str], scripted_llm: ScriptedLLM
) -> None:
    scripted_llm.responder = lambda body: {"status": 500}
    result = runner.invoke(app, ["diagnose", QUESTION], env=cli_env)

    assert result.exit_code == 0, result.output
    assert "The LLM was unavailable" in result.output


def test_diagnose_without_an_llm_still_answers_and_says_why(cli_env: dict[str, str]) -> None:
    env = {k: v for k, v in cli_env.items() if not k.startswith("OPSBOT_LLM__")}
    result = runner.invoke(app, ["diagnose", "why is order slow?"], env=env)

    assert result.exit_code == 0, result.output
    assert "No LLM configured" in result.stderr
    assert "playbook" in result.stdout
    assert result.stdout.count(NO_MODEL_NOTE) == 1  # in the answer, not repeated as a trailing note
