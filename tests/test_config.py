"""Settings: one class, OPSBOT_ prefix, nested sections, the standard OPENAI_* variables, and documented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel

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
