"""The two sources Settings reads besides pydantic-settings' own: the standard OPENAI_* variables, and the TOML
file that OPSBOT_CONFIG_FILE names (pydantic-settings' TomlConfigSettingsSource, strict about what it reads)."""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsError, TomlConfigSettingsSource

CONFIG_FILE_VARIABLE = "OPSBOT_CONFIG_FILE"


class OpenAIEnvSource(PydanticBaseSettingsSource):
    """Honours OPENAI_API_KEY and OPENAI_BASE_URL, the variables every OpenAI-compatible tool reads."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        llm = {
            key: os.environ[env]
            for key, env in (("api_key", "OPENAI_API_KEY"), ("base_url", "OPENAI_BASE_URL"))
            if os.environ.get(env)
        }
        return {"llm": llm} if llm else {}


class ConfigFileSource(TomlConfigSettingsSource):
    """A TOML file with the sections as tables, e.g. `[prometheus.metrics.p99_latency]`, `topology = {...}`,
    `[kubernetes]`, `[[mcp.servers]]`.

    Stricter than its base: a file that is not there is an error (the base skips it), and so is a top-level table
    that no setting has (Settings ignores unknown top-level keys, as .env also holds other tools' variables). An
    unknown key inside a section is the section's own error (bot/config/section.py)."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path | None) -> None:
        if path is not None and not path.is_file():
            raise FileNotFoundError(f"{CONFIG_FILE_VARIABLE} names {path}, which is not a file")
        super().__init__(settings_cls, toml_file=path)
        self.path = path
        unknown = sorted(set(self.toml_data) - set(settings_cls.model_fields))
        if unknown:
            named = [f"{name}{_closest(name, list(settings_cls.model_fields))}" for name in unknown]
            raise SettingsError(f"config file {path}: no such section: {', '.join(named)}")

    def __call__(self) -> dict[str, Any]:
        return {**super().__call__(), "config_file": self.path} if self.path is not None else {}


def _closest(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name.lower().replace("-", "_"), known, n=1, cutoff=0.75)
    return f" (did you mean [{close[0]}]?)" if close else ""


def config_file_path(*sources: PydanticBaseSettingsSource) -> Path | None:
    """The config file the first of the sources names (Settings(config_file=...), the environment, then .env)."""
    for source in sources:
        named = getattr(source, "init_kwargs", {}).get("config_file") or getattr(source, "env_vars", {}).get(
            CONFIG_FILE_VARIABLE.lower()
        )
        if named:
            return Path(named).expanduser()
    return None
