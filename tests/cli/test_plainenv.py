"""`opsbot classify` skips Settings only when nothing about the model or the intent gate is set, and then routes
exactly as the gate built from Settings would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot import wiring
from bot.cli.plainenv import dotenv_entries, gate_is_default, log_level_name
from bot.config import Settings

NO_MODEL = {"OPSBOT_LLM__BASE_URL": "", "OPSBOT_LLM__API_KEY": "", "OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}
MESSAGES = ["why is order slow since 15:05?", "thanks!", "what is the p99 of checkout now?", "order 服务 P99 飙升"]


@pytest.fixture
def no_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.upper().startswith(("OPSBOT_", "OPENAI_")):
            monkeypatch.delenv(key)


@pytest.fixture
def no_gate_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.upper().startswith(("OPSBOT_LLM", "OPSBOT_INTENT", "OPSBOT_CONFIG_FILE", "OPENAI_")):
            monkeypatch.delenv(key)


def test_empty_model_variables_leave_the_gate_default(
    no_gate_settings: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("OPSBOT_LOG_LEVEL=debug\nOPSBOT_LLM__MODEL=gpt-x\nOPSBOT_LLM__BASE_URL=http://llm:8000/v1\n")
    monkeypatch.setenv("OPSBOT_LLM__BASE_URL", "")  # the environment wins over .env, as in Settings

    assert gate_is_default(env_file)


@pytest.mark.parametrize(
    "line",
    [
        "OPENAI_API_KEY=sk-test",
        "export OPSBOT_LLM__BASE_URL='http://llm:8000/v1'",
        "opsbot_intent__unsure_below=0.7",
        "OPSBOT_INTENT__USE_MODEL=false",
        "OPSBOT_CONFIG_FILE=/etc/opsbot.toml",
        'OPSBOT_LLM={"api_key": "k"}',
    ],
)
def test_a_model_gate_or_config_file_in_the_env_file_needs_settings(
    line: str, no_gate_settings: None, tmp_path: Path
) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text(f"# local\n{line}\n")

    assert not gate_is_default(env_file)


def test_a_model_in_the_environment_needs_settings(
    no_gate_settings: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://llm:8000/v1")

    assert not gate_is_default(tmp_path / "absent.env")


def test_the_env_file_reader_keeps_keys_upper_and_values_bare(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text('# OPSBOT_X=1\nexport opsbot_a="b"  # note\nnot a setting\nOPSBOT_EMPTY=\n')

    assert dotenv_entries(env_file) == {"OPSBOT_A": "b", "OPSBOT_EMPTY": ""}


def test_a_hash_inside_quotes_is_part_of_the_value_as_settings_read_it(no_settings: None, tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text('OPSBOT_LOG_LEVEL="warning" # quiet\nOPSBOT_LLM__API_KEY="sk-a1 #b2"  # the team key\n')
    settings = Settings(_env_file=env_file)  # type: ignore[call-arg]

    assert log_level_name(env_file) == settings.log_level == "warning"
    assert dotenv_entries(env_file)["OPSBOT_LLM__API_KEY"] == settings.llm.api_key.get_secret_value() == "sk-a1 #b2"


def test_a_quoted_value_over_several_lines_is_one_value_as_settings_read_it(no_settings: None, tmp_path: Path) -> None:
    """A later line of the value that looks like a gate setting is part of the value, not a setting."""
    env_file = tmp_path / ".env"
    env_file.write_text(
        'OPSBOT_TOPOLOGY=\'{"order": ["payment",\n  "orders-db"]}\'\n'
        'OPSBOT_SLACK__ALERT_CHANNEL="alerts\nOPSBOT_INTENT__USE_MODEL=false"\n'
    )
    settings = Settings(_env_file=env_file)  # type: ignore[call-arg]
    entries = dotenv_entries(env_file)

    assert json.loads(entries["OPSBOT_TOPOLOGY"]) == settings.topology == {"order": ["payment", "orders-db"]}
    assert entries["OPSBOT_SLACK__ALERT_CHANNEL"] == settings.slack.alert_channel
    assert gate_is_default(env_file) and settings.intent.use_model


@pytest.mark.parametrize("llm_url", ["", "http://llm:8000/v1"])
def test_a_variable_in_a_value_is_expanded_as_settings_expand_it(
    llm_url: str, no_settings: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LLM_URL", llm_url)
    monkeypatch.setenv("LEVEL", "error")
    env_file = tmp_path / ".env"
    env_file.write_text("OPSBOT_LLM__BASE_URL=${LLM_URL}\nOPSBOT_LOG_LEVEL=${LEVEL}\n")
    settings = Settings(_env_file=env_file)  # type: ignore[call-arg]

    assert log_level_name(env_file) == settings.log_level == "error"
    assert dotenv_entries(env_file)["OPSBOT_LLM__BASE_URL"] == settings.llm.base_url == llm_url
    assert gate_is_default(env_file) is not settings.llm.configured


def test_the_default_gate_is_the_one_settings_build_without_a_model(no_gate_settings: None) -> None:
    from_settings = wiring.build_classifier(Settings(_env_file=None))  # type: ignore[call-arg]
    default = wiring.build_default_classifier()

    assert (default.func, default.keywords) == (from_settings.func, from_settings.keywords)  # type: ignore[attr-defined]
    assert [default(m) for m in MESSAGES] == [from_settings(m) for m in MESSAGES]


def _classify(tmp_path: Path, extra_env: dict[str, str]) -> tuple[dict[str, object], bool]:
    """(the printed intent, whether Settings were loaded) of `opsbot classify` in a fresh interpreter."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.upper().startswith(("OPSBOT_INTENT", "OPSBOT_CONFIG_FILE"))
    }
    code = (
        "import atexit, sys\natexit.register(lambda: print('SETTINGS=' + str('bot.config' in sys.modules)))\n"
        "from bot.cli import main\nmain()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "classify", "thanks, that fixed it"],
        cwd=tmp_path,
        env={**env, **NO_MODEL, **extra_env},
        capture_output=True,
        text=True,
        check=True,
    )
    intent, loaded = done.stdout.splitlines()
    return json.loads(intent), loaded == "SETTINGS=True"


def test_classify_loads_settings_only_when_the_gate_is_configured(tmp_path: Path) -> None:
    plain, plain_loaded = _classify(tmp_path, {})
    tuned, tuned_loaded = _classify(tmp_path, {"OPSBOT_INTENT__UNSURE_BELOW": "0.99"})

    assert (plain_loaded, tuned_loaded) == (False, True)
    assert plain["route"] == tuned["route"] == "chitchat"
