"""Strict configuration: a key no setting has is an error with a did-you-mean, every error names the source of the
bad value (the config file and key, or the variable), and `opsbot config` says where each value came from."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError

from bot.config import Settings
from bot.config.problems import UnknownSettings, settings_problems, unknown_variables
from bot.config.provenance import effective_settings, origin_of, origins
from tests.slack.intake.test_serve import OPSBOT


def problems_of(config: Path, environ: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(ValidationError) as raised:
        Settings(_env_file=None, config_file=config)  # type: ignore[call-arg]
    return settings_problems(raised.value, Settings, environ or {}, {}, config)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for key in list(os.environ):
        if key.startswith(("OPSBOT_", "OPENAI_")):
            monkeypatch.delenv(key)
    return monkeypatch


def test_misspelt_keys_in_the_config_file_name_the_file_the_table_and_the_key_they_meant(clean_env, tmp_path):
    config = tmp_path / "opsbot.toml"
    config.write_text('[prometheus]\nservice-label = "application"\n[prometheus.metric.p99]\npromql = "up"\n')
    assert problems_of(config) == [
        f"config file {config} [prometheus] service-label: no such setting (did you mean service_label?)",
        f"config file {config} [prometheus] metric: no such setting (did you mean metrics?)",
    ]


def test_a_bad_value_from_the_file_names_the_file_not_a_variable(clean_env, tmp_path):
    config = tmp_path / "opsbot.toml"
    config.write_text('[prometheus.services.inventory]\nnot_measured = "gc_pause"\n')
    [line] = problems_of(config)
    assert line.startswith(f"config file {config} [prometheus.services.inventory] not_measured = 'gc_pause': ")
    assert "OPSBOT_" not in line


def test_the_variable_wins_over_the_file_and_is_the_one_named(clean_env, tmp_path):
    config = tmp_path / "opsbot.toml"
    config.write_text("[agent]\nmax_steps = 5\n")
    clean_env.setenv("OPSBOT_AGENT__MAX_STEPS", "lots")
    with pytest.raises(ValidationError) as raised:
        Settings(_env_file=None, config_file=config)  # type: ignore[call-arg]
    environ = {"OPSBOT_AGENT__MAX_STEPS": "lots"}
    [line] = settings_problems(raised.value, Settings, environ, {}, config)
    assert line.startswith("environment variable OPSBOT_AGENT__MAX_STEPS=lots: Input should be a valid integer")


def test_an_opsbot_variable_that_names_no_setting_is_an_error_with_the_settings_it_may_mean():
    environ = {"OPSBOT_SERVICE_LABEL": "application", "OPSBOT_UPDATE_CATALOGUE": "1", "HOME": "/root"}
    dotenv = {"OPSBOT_LOGLEVEL": "debug"}
    assert unknown_variables(Settings, environ, dotenv) == [
        "environment variable OPSBOT_SERVICE_LABEL: no such setting (did you mean OPSBOT_PROMETHEUS__SERVICE_LABEL, "
        "OPSBOT_KUBERNETES__SERVICE_LABEL or OPSBOT_LOKI__SERVICE_LABEL?)",
        ".env entry OPSBOT_LOGLEVEL: no such setting (did you mean OPSBOT_LOG_LEVEL?)",
    ]
    assert settings_problems(UnknownSettings(["x"]), Settings, {}) == ["x"]


def opsbot(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPSBOT_", "OPENAI_"))}
    return subprocess.run(
        [OPSBOT, *args], env=clean | env, cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )


def test_every_command_refuses_an_unknown_variable_in_one_line(tmp_path):
    result = opsbot("config", cwd=tmp_path, OPSBOT_PROMETHEUS__SERVICELABEL="application")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        "opsbot: bad setting environment variable OPSBOT_PROMETHEUS__SERVICELABEL: no such setting "
        "(did you mean OPSBOT_PROMETHEUS__SERVICE_LABEL?)"
    )


def test_opsbot_config_prints_each_setting_with_its_source_and_masks_secrets(tmp_path):
    config = tmp_path / "opsbot.toml"
    config.write_text('[prometheus]\nservice_label = "application"\n[agent]\nmax_steps = 5\n')
    (tmp_path / ".env").write_text("OPSBOT_LOG_LEVEL=WARNING\n")
    result = opsbot(
        "config",
        "--json",
        cwd=tmp_path,
        OPSBOT_CONFIG_FILE=str(config),
        OPSBOT_AGENT__MAX_STEPS="6",
        OPSBOT_SLACK__BOT_TOKEN="xoxb-not-for-your-eyes",
        OPSBOT_REDIS__URL="redis://opsbot:hunter2@redis:6379/0",
    )
    assert result.returncode == 0, result.stderr
    rows = {row["setting"]: row for row in map(json.loads, result.stdout.splitlines())}
    assert rows["prometheus.service_label"] == {
        "setting": "prometheus.service_label",
        "value": "application",
        "from": f"config file {config} [prometheus] service_label",
    }
    assert rows["agent.max_steps"]["value"] == "6"
    assert rows["agent.max_steps"]["from"] == "environment variable OPSBOT_AGENT__MAX_STEPS"
    assert rows["log_level"]["from"] == ".env entry OPSBOT_LOG_LEVEL"
    assert rows["prometheus.url"]["from"] == "default"
    assert rows["slack.bot_token"]["value"] == "********"
    assert "xoxb" not in result.stdout and "hunter2" not in result.stdout


def test_a_json_variable_is_the_source_of_everything_below_it():
    claims = origins({"OPSBOT_PROMETHEUS__METRICS": '{"qps": {}}'}, {}, None)
    assert origin_of(("prometheus", "metrics", "qps", "promql"), claims) == (
        "environment variable OPSBOT_PROMETHEUS__METRICS"
    )
    assert origin_of(("prometheus", "url"), claims) == "default"
    paths = [path for path, _ in effective_settings(Settings(_env_file=None))]  # type: ignore[call-arg]
    assert ("prometheus", "metrics", "p99_latency", "promql") in paths and ("llm", "api_key") in paths
