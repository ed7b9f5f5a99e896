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
from tests.safety.secret_shapes import SECRETS

HEAVY = (
    "openai",
    "elasticsearch",
    "slack_bolt",
    "waitress",
    "prometheus_client",
    "kubernetes",
    "mcp",
    "redis",
    "matplotlib",  # the chart: only the worker that draws one
)
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
    done = subprocess.run(
        [sys.executable, "-c", f"MODULES = {modules!r}\n{PROBE}", *args],
        input=stdin,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
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
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert "elasticsearch" in done.stdout


# What the command table (bot/cli/commands.py) and the light log-level read keep out: `--help` imports no command
# module and no pydantic; a command's `--help` and `parse` read no Settings (pydantic-settings, bot.config).
COMMAND_MODULES = tuple(entry.target.split(":")[0] for entry in TABLE.values())
# Nor numeric or HTTP libraries: `parse` (typer's options skip its pydantic check, bot/cli/commands.py) loads no
# pydantic, and `classify` with nothing set about the model or the gate reads no Settings (bot/cli/plainenv.py) and
# loads neither the LLM adapter nor the text-ReAct reader.
NUMERIC_AND_HTTP = ("numpy", "requests", "urllib3")
KEPT_OUT = {
    "--help": (*COMMAND_MODULES, "pydantic", "pydantic_settings", "bot.config", "bot.wiring", *NUMERIC_AND_HTTP),
    "diagnose --help": ("pydantic_settings", "bot.config", "bot.wiring", *NUMERIC_AND_HTTP),  # help reads no Settings
    "parse": (
        "pydantic",
        "pydantic_settings",
        "bot.config",
        "bot.wiring",
        "bot.cli.diagnosis",
        "bot.cli.service",
        *NUMERIC_AND_HTTP,
    ),
    # nor the redaction rules (compiled when the first log record is written), the prompt loader (the model is not
    # asked) or the version-1 artifact reader (base64)
    "classify without a model": (
        "pydantic_settings",
        "bot.config",
        "bot.engine.llm",
        "bot.engine.context",
        "bot.engine.text.parser",
        "json_repair",
        "bot.safety.redact",
        "bot.engine.prompts",
        "base64",
        *NUMERIC_AND_HTTP,
    ),
}


@pytest.mark.parametrize("command", KEPT_OUT, ids=list(KEPT_OUT))
def test_the_command_table_imports_only_the_command_that_runs(command: str, tmp_path: Path) -> None:
    args, stdin = COMMANDS[command]

    assert _loaded_by(args, stdin, tmp_path, KEPT_OUT[command]) == []


def test_a_command_still_gets_its_module_when_it_runs(tmp_path: Path) -> None:
    """The probe for the table can fail: `parse` does import its own module."""
    assert _loaded_by(COMMANDS["parse"][0], COMMANDS["parse"][1], tmp_path, ("bot.cli.inspection",)) == [
        "bot.cli.inspection"
    ]


# Building the responder (what every surface does at start) loads no numeric library, no HTTP client and no
# metrics exporter: the Prometheus client (prometheus-api-client over requests) comes with the first query; numpy
# with the first series analysed.
# Nor what only answering needs: the engine loop, the LLM adapter and the context (only with a model configured),
# the playbook, the quick lookup and the series detectors, the redaction and grounding rules, and the intent gate.
ANSWER_MODULES = (
    "bot.engine.loop",
    "bot.engine.llm",
    "bot.engine.context",
    "bot.engine.text.parser",
    "json_repair",
    "bot.playbook.diagnosis",
    "bot.routing.lookup",
    "bot.playbook.confirmation",
    "bot.safety.redact",
    "bot.safety.grounding",
    "bot.routing.intent",
    "bot.routing.model",
    "tools.analysis.changepoints",
    "tools.analysis.trends",
)
BUILD_KEPT_OUT = ("numpy", "requests", "urllib3", "prometheus_api_client", "prometheus_client", *HEAVY, *ANSWER_MODULES)
BUILD = "from bot import wiring\nwiring.build_responder(wiring.load_settings())\n"


def _loaded_by_code(code: str, modules: tuple[str, ...], tmp_path: Path) -> list[str]:
    """Which of `modules` a fresh interpreter has loaded after running `code` (Prometheus unreachable)."""
    env = {
        **os.environ,
        **NO_MODEL,
        "OPSBOT_STORE__SQLITE_PATH": str(tmp_path / "traces.db"),
        "OPSBOT_PROMETHEUS__URL": "http://127.0.0.1:9",
        "OPSBOT_PROMETHEUS__TIMEOUT_S": "1",
    }
    probe = f"MODULES = {modules!r}\n" + PROBE.replace("from bot.cli import main\nmain()\n", code)
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=False, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("LOADED="))
    return list(json.loads(line.removeprefix("LOADED=")))


def test_building_the_responder_loads_no_numeric_or_http_library(tmp_path: Path) -> None:
    assert _loaded_by_code(BUILD, BUILD_KEPT_OUT, tmp_path) == []


def test_the_first_question_brings_what_answering_it_needs(tmp_path: Path) -> None:
    """The probe for the build can fail: the built responder, asked a question with no model (Prometheus down),
    routes it, runs the playbook, grounds and redacts the answer, and so loads those modules then."""
    code = (
        "from bot import wiring\nfrom bot.engine.types import Question\n"
        "wiring.build_responder(wiring.load_settings())(Question('why is order slow since 15:05?'))\n"
    )
    loaded = (
        "bot.routing.intent",
        "bot.playbook.diagnosis",
        "bot.playbook.confirmation",
        "bot.safety.grounding",
        "bot.safety.redact",
        "bot.engine.loop",
    )
    assert _loaded_by_code(code, loaded, tmp_path) == sorted(set(loaded) - {"bot.engine.loop"})  # no model: no loop


def test_the_first_metric_query_brings_the_prometheus_client_and_analysis_brings_numpy(tmp_path: Path) -> None:
    """The probe for the build can fail: a query through the built metrics tool loads prometheus-api-client and
    requests (Prometheus is unreachable, so it fails; the client loads all the same). Analysing a series loads numpy
    (the detectors' numeric work)."""
    code = (
        "from bot import wiring\nfrom tools.analysis.changepoints import detect_changes, detect_spikes\n"
        "from tools.analysis.trends import detect_sawtooth, detect_trends\nfrom tools.base import ToolError\n"
        "from datetime import UTC, datetime, timedelta\n"
        "tools = wiring.build_metrics_tools(wiring.load_settings())\n"
        "try:\n    tools.known_services()\nexcept ToolError:\n    pass\n"
        "t = [datetime(2026, 12, 1, tzinfo=UTC) + timedelta(minutes=5 * i) for i in range(288)]\n"
        "v = [1.0 + (i % 7) / 50 + (2.0 if i > 150 else 0.0) for i in range(288)]\n"
        "assert detect_changes(t, v)\ndetect_spikes(t, v)\ndetect_trends(t, v)\ndetect_sawtooth(t, v)\n"
    )
    client = ("prometheus_api_client", "requests", "urllib3")
    assert _loaded_by_code(code, ("numpy", *client), tmp_path) == sorted(("numpy", *client))


def _run_code(code: str, tmp_path: Path) -> str:
    env = {
        **os.environ,
        **NO_MODEL,
        "OPSBOT_STORE__SQLITE_PATH": str(tmp_path / "traces.db"),
        "OPSBOT_PROMETHEUS__URL": "http://127.0.0.1:9",
        "OPSBOT_PROMETHEUS__TIMEOUT_S": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def test_building_the_responder_leaves_the_cue_patterns_to_the_first_message(tmp_path: Path) -> None:
    """The intent gate's cue patterns (~20 ms to compile) are compiled by the first classified message, not by
    importing the gate; and then they are."""
    code = (
        f"{BUILD}from bot.routing.cues import compiled_cues\nprint('built', compiled_cues.cache_info().currsize)\n"
        "from bot.routing.intent import classify\nclassify('why is order slow since 15:05?')\n"
        "print('classified', compiled_cues.cache_info().currsize)\n"
    )
    out = _run_code(code, tmp_path)
    assert "built 0" in out and "classified 1" in out


def test_log_redaction_loads_its_rules_with_the_first_record_and_still_redacts(tmp_path: Path) -> None:
    """install_log_redaction defers bot.safety.redact to the first record written: a command that logs nothing
    never loads it, and a secret logged later is redacted all the same."""
    secret, line = SECRETS["postgres_url"]
    code = (
        "import logging, sys\nlogging.basicConfig(level=logging.INFO, format='%(message)s')\n"
        "from bot import wiring\nwiring.install_log_redaction()\n"
        "print('loaded before a record:', 'bot.safety.redact' in sys.modules)\n"
        f"logging.getLogger('probe').warning('backend said: %s', {line!r})\n"
        "print('loaded after:', 'bot.safety.redact' in sys.modules)\n"
    )
    out = _run_code(code, tmp_path)
    assert "loaded before a record: False" in out and "loaded after: True" in out
    assert "backend said" in out and secret not in out
