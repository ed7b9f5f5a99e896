"""The command table lists every command with its own summary, and builds each one as typer would."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.cli import app, log_level_name
from bot.cli.commands import TABLE, command_from_target, target_of

runner = CliRunner()


@pytest.mark.parametrize("name", TABLE)
def test_the_table_summary_is_the_commands_own_first_paragraph(name: str) -> None:
    command = command_from_target(name, target_of(TABLE[name]))

    first_paragraph = " ".join((command.help or "").split("\n\n")[0].split())
    assert TABLE[name].summary == first_paragraph


def test_help_lists_the_table_in_order_and_a_command_runs_from_it() -> None:
    listing = runner.invoke(app, ["--help"], terminal_width=200).output
    rows = [line.split()[0] for line in listing.split("Commands:")[1].splitlines() if line.strip()]

    parsed = runner.invoke(app, ["parse"], input="Thought: t\nFinal Answer: pool exhausted.")

    assert rows == list(TABLE)
    assert parsed.exit_code == 0 and '"answer": "pool exhausted."' in parsed.output


def test_an_unknown_command_is_refused_with_usage() -> None:
    result = runner.invoke(app, ["diagnoze"])

    assert result.exit_code == 2 and "No such command" in result.output


def test_the_light_log_level_reads_the_environment_then_the_env_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("# comment\nOPSBOT_LLM__MODEL=x\nexport OPSBOT_LOG_LEVEL='warning'  # quiet\n")
    monkeypatch.delenv("OPSBOT_LOG_LEVEL", raising=False)

    from_file = log_level_name(env_file)
    missing = log_level_name(tmp_path / "absent.env")
    monkeypatch.setenv("OPSBOT_LOG_LEVEL", "DEBUG")

    assert (from_file, missing, log_level_name(env_file)) == ("warning", "INFO", "DEBUG")


def test_text_options_arrive_as_typer_gives_them_and_other_types_keep_typers_checks() -> None:
    """str, bool and list[str] values skip typer's pydantic check (bot/cli/commands.py): repeated --tool values
    still arrive as a list (both names are known, so "QUERY_LOGS" is normalised); an int option is still checked."""
    reply = 'Thought: t\nAction: QUERY_LOGS\nAction Input: {"service": "order"}'
    parsed = runner.invoke(app, ["parse", "--tool", "query_metrics", "--tool", "query_logs"], input=reply)
    bad_int = runner.invoke(app, ["traces", "list", "--min-steps", "many"])

    assert parsed.exit_code == 0 and '"action": "query_logs"' in parsed.output
    assert bad_int.exit_code == 2 and "valid integer" in bad_int.output
