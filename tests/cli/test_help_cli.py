"""`opsbot --help` and every command's help: plain rows, and no heavy client imported just to print them."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from bot.cli import app

runner = CliRunner()

COMMANDS = [
    [],
    ["diagnose"],
    ["demo"],
    ["parse"],
    ["classify"],
    ["eval"],
    ["serve"],
    ["traces"],
    ["traces", "list"],
    ["traces", "show"],
    ["traces", "search"],
    ["traces", "stats"],
    ["sandbox"],
    ["sandbox", "up"],
    ["sandbox", "down"],
    ["sandbox", "status"],
    ["sandbox", "scenarios"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "opsbot")
def test_help_rows_name_values_not_types(command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"])

    assert result.exit_code == 0, result.output
    assert result.output.startswith("Usage: ")
    assert "<bool>" not in result.output and "<int>" not in result.output  # flags take no value; N, WHEN name it
    assert "╭" not in result.output  # plain text, as pasted into tickets and CI logs


def test_value_options_show_what_they_take() -> None:
    result = runner.invoke(app, ["traces", "list", "--help"])

    assert "--since WHEN" in result.output and "--limit N" in result.output


def test_help_starts_without_the_heavy_clients() -> None:
    code = (
        "import sys, bot.cli; "
        "print(sorted(m for m in ('openai', 'elasticsearch', 'slack_bolt', 'bot.wiring') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
