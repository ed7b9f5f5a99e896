"""The quick commands start without the heavy clients: a guard on what `opsbot --help`, `parse` and `classify` load.

Each command runs as a user runs it, in a fresh interpreter; an exit hook prints which heavy packages ended up in
sys.modules. openai alone is ~0.6 s of imports, Elasticsearch ~0.2 s, Slack Bolt and waitress ~0.1 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli.commands import TABLE

HEAVY = ("openai", "elasticsearch", "slack_bolt", "waitress", "prometheus_client", "kubernetes", "mcp", "redis")
PROBE = (
    "import atexit, json, sys\n"
    "atexit.register(lambda: print('LOADED=' + json.dumps(sorted(m for m in MODULES if m in sys.modules))))\n"
    "from bot.cli import main\n"
    "main()\n"
)
NO_MODEL = {"OPSBOT_LLM__BASE_URL": "", "OPSBOT_LLM__API_KEY": "", "OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}
COMMANDS = {
    "--help": (["--help"], ""),
    "diagnose --help": (["diagnose", "--help"], ""),
    "parse": (["parse"], 'Thought: t\nAction: query_logs\nAction Input: {"service": "order"}'),
    "classify without a model": (["classify", "why is order slow since 15:05?"], ""),
}


def _loaded_by(args: list[str], stdin: str, tmp_path: Path, modules: tuple[str, ...] = HEAVY) -> list[str]:
    """Which of `modules` a fresh interpreter has loaded when the command exits."""
    env = {**os.environ, **NO_MODEL, "OPSBOT_STORE__SQLITE_PATH": str(tmp_path / "traces.db")}
    done = subprocess.run([sys.executable, "-c", f"MODULES = {modules!r}\n{PROBE}", *args], input=stdin, env=env,
                          capture_output=True, text=True, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("LOADED="))
    return list(json.loads(line.removeprefix("LOADED=")))


@pytest.mark.parametrize("command", COMMANDS, ids=list(COMMANDS))
def test_quick_command_loads_no_heavy_client(command: str, tmp_path: Path) -> None:
    args, stdin = COMMANDS[command]

    assert _loaded_by(args, stdin, tmp_path) == []


def test_the_probe_sees_a_heavy_client_when_a_command_loads_one(tmp_path: Path) -> None:
    """The guard can fail: the module that builds the Elasticsearch client loads it."""
    env = {**os.environ, **NO_MODEL}
    code = f"MODULES = {HEAVY!r}\n" + PROBE.replace("from bot.cli import main\nmain()\n", "import bot.wiring.elastic\n")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                          cwd=tmp_path)
    assert "elasticsearch" in done.stdout


# What the command table (bot/cli/commands.py) and the light log-level read keep out: `--help` imports no command
# module and no pydantic; a command's `--help` and `parse` read no Settings (pydantic-settings, bot.config).
COMMAND_MODULES = tuple(entry.target.split(":")[0] for entry in TABLE.values())
KEPT_OUT = {
    "--help": (*COMMAND_MODULES, "pydantic", "pydantic_settings", "bot.config", "bot.wiring"),
    "diagnose --help": ("pydantic_settings", "bot.config", "bot.wiring"),  # help reads no Settings
    "parse": ("pydantic_settings", "bot.config", "bot.wiring", "bot.cli.diagnosis", "bot.cli.service"),
}


@pytest.mark.parametrize("command", KEPT_OUT, ids=list(KEPT_OUT))
def test_the_command_table_imports_only_the_command_that_runs(command: str, tmp_path: Path) -> None:
    args, stdin = COMMANDS[command]

    assert _loaded_by(args, stdin, tmp_path, KEPT_OUT[command]) == []


def test_a_command_still_gets_its_module_when_it_runs(tmp_path: Path) -> None:
    """The probe for the table can fail: `parse` does import its own module."""
    assert _loaded_by(COMMANDS["parse"][0], COMMANDS["parse"][1], tmp_path, ("bot.cli.inspection",)) == [
        "bot.cli.inspection"]
