"""Settings: one class, OPSBOT_ prefix, nested sections, the standard OPENAI_* variables, and documented."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError
from pydantic_settings import SettingsError

from bot.config import Settings

ENV_EXAMPLE = Path(__file__).resolve().parents[1] / "deploy" / ".env.example"


def env_names(model: type[BaseModel], prefix: str = "OPSBOT_") -> list[str]:
    """Every environment variable name the Settings tree reads."""
    names = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            names += env_names(annotation, f"{prefix}{name.upper()}__")
        else:
            names.append(f"{prefix}{name.upper()}")
    return names


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    import os

    for key in list(os.environ):
        if key.startswith(("OPSBOT_", "OPENAI_")):
            monkeypatch.delenv(key)
    return monkeypatch


def test_every_setting_is_documented_in_env_example() -> None:
    documented = set(re.findall(r"^#?\s*(OPSBOT_[A-Z0-9_]+)=", ENV_EXAMPLE.read_text(), flags=re.M))
    missing = [name for name in env_names(Settings) if name not in documented]
    assert missing == []


def test_env_example_names_only_real_settings() -> None:
    documented = set(re.findall(r"^#?\s*(OPSBOT_[A-Z0-9_]+)=", ENV_EXAMPLE.read_text(), flags=re.M))
    assert documented - set(env_names(Settings)) == set()


def test_nested_sections_read_from_prefixed_env(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("OPSBOT_AGENT__MAX_STEPS", "5")
    clean_env.setenv("OPSBOT_TOPOLOGY", '{"order": ["payment", "mysql"]}')
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.agent.max_steps == 5
    assert settings.topology == {"order": ["payment", "mysql"]}


def test_standard_openai_variables_are_honoured(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("OPENAI_API_KEY", "sk-test")
    clean_env.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.llm.api_key.get_secret_value() == "sk-test"
    assert settings.llm.base_url == "http://127.0.0.1:1/v1"
    assert settings.llm.configured


def test_opsbot_variables_win_over_openai_ones(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    clean_env.setenv("OPSBOT_LLM__BASE_URL", "http://127.0.0.1:2/v1")
    assert Settings(_env_file=None).llm.base_url == "http://127.0.0.1:2/v1"  # type: ignore[call-arg]


def test_no_llm_configured_by_default(clean_env: pytest.MonkeyPatch) -> None:
    assert not Settings(_env_file=None).llm.configured  # type: ignore[call-arg]


def test_secrets_do_not_leak_in_repr(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("OPSBOT_SLACK__BOT_TOKEN", "xoxb-very-secret")
    assert "xoxb-very-secret" not in repr(Settings(_env_file=None))  # type: ignore[call-arg]


CONFIG_FILE = """
[agent]
max_steps = 6
time_budget_s = 66
token_budget = 6666
max_format_errors = 6

[llm]
base_url = "http://file:8000/v1"
api_key = "file-key"
"""


def test_init_beats_env_beats_dotenv_beats_openai_variables_beat_the_config_file_beats_defaults(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config, env_file = tmp_path / "opsbot.toml", tmp_path / ".env"
    config.write_text(CONFIG_FILE)
    env_file.write_text(
        f"OPSBOT_CONFIG_FILE={config}\n"
        "OPSBOT_AGENT__MAX_STEPS=5\nOPSBOT_AGENT__TIME_BUDGET_S=55\nOPSBOT_AGENT__TOKEN_BUDGET=5555\n"
    )
    clean_env.setenv("OPSBOT_AGENT__MAX_STEPS", "4")
    clean_env.setenv("OPSBOT_AGENT__TIME_BUDGET_S", "44")
    clean_env.setenv("OPENAI_BASE_URL", "http://openai:8000/v1")

    settings = Settings(_env_file=env_file, agent={"max_steps": 3})  # type: ignore[call-arg, arg-type]

    agent = settings.agent
    assert (agent.max_steps, agent.time_budget_s, agent.token_budget, agent.max_format_errors) == (3, 44, 5555, 6)
    assert agent.max_args_chars == 2_000  # no source sets it: the default
    assert settings.llm.base_url == "http://openai:8000/v1"  # OPENAI_* ranks above the file...
    assert settings.llm.api_key.get_secret_value() == "file-key"  # ...which still gives what nothing else sets
    assert settings.config_file == config  # named in .env, and read


def test_the_config_file_named_in_the_environment_beats_the_one_in_dotenv(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    chosen, other, env_file = tmp_path / "chosen.toml", tmp_path / "other.toml", tmp_path / ".env"
    chosen.write_text("[agent]\nmax_steps = 7\n")
    other.write_text("[agent]\nmax_steps = 9\n")
    env_file.write_text(f"OPSBOT_CONFIG_FILE={other}\n")
    clean_env.setenv("OPSBOT_CONFIG_FILE", str(chosen))

    assert Settings(_env_file=env_file).agent.max_steps == 7  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("where", "value"),
    [("environment", "OPSBOT_PROMETHEUS__URLL"), ("init", {"urll": "http://x"}), ("file", "[prometheus]\nurll = 1")],
)
def test_a_key_no_section_has_is_an_error_that_names_it(
    where: str, value: Any, clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    kwargs: dict[str, Any] = {"_env_file": None}
    if where == "environment":
        clean_env.setenv(value, "http://x")
    elif where == "init":
        kwargs["prometheus"] = value
    else:
        (tmp_path / "opsbot.toml").write_text(value)
        kwargs["config_file"] = tmp_path / "opsbot.toml"
    with pytest.raises(ValidationError) as raised:
        Settings(**kwargs)
    assert [(e["loc"], e["type"]) for e in raised.value.errors()] == [(("prometheus", "urll"), "extra_forbidden")]


def test_a_misspelt_table_in_the_config_file_is_an_error(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = tmp_path / "opsbot.toml"
    config.write_text('[promethus]\nurl = "http://prometheus:9090"\n')
    with pytest.raises(SettingsError, match=r"opsbot.toml: no such section: promethus"):
        Settings(_env_file=None, config_file=config)  # type: ignore[call-arg]


def test_other_tools_variables_in_dotenv_are_left_alone(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("COMPOSE_PROJECT_NAME=shop\nOPENAI_API_KEY=sk-elsewhere\nOPSBOT_LOG_LEVEL=debug\n")
    assert Settings(_env_file=env_file).log_level == "debug"  # type: ignore[call-arg]


def test_an_unknown_variable_is_reported_by_its_name(clean_env: pytest.MonkeyPatch) -> None:
    from bot.wiring.doctor import settings_problems

    clean_env.setenv("OPSBOT_SLACK__WORKER", "8")
    with pytest.raises(ValidationError) as raised:
        Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings_problems(raised.value) == [
        "environment variable OPSBOT_SLACK__WORKER: no such setting (did you mean OPSBOT_SLACK__WORKERS?)"
    ]
