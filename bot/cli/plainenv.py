"""The few settings a quick command needs, read as Settings would read them but without loading Settings.

pydantic-settings and the Settings class are ~0.3 s of imports, more than `opsbot parse` or `opsbot classify` cost
without them. A quick command reads OPSBOT_LOG_LEVEL here, and `classify` asks whether anything about the model or
the intent gate is set at all: when nothing is, the gate is the one default Settings build (bot.wiring's
build_default_classifier); when anything is, it loads Settings as every other command does.
"""

from __future__ import annotations

import os
from pathlib import Path

# Any of these set (in the environment or ./.env) can change what `classify` does: a model, the gate's settings, a
# config file that may hold either. OPENAI_* and the two LLM fields count only when not empty, as in Settings.
GATE_PREFIXES = ("OPSBOT_INTENT", "OPSBOT_CONFIG_FILE")
MODEL_SECTION = "OPSBOT_LLM"  # the whole section as JSON
MODEL_KEYS = ("OPSBOT_LLM__BASE_URL", "OPSBOT_LLM__API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL")


def dotenv_entries(env_file: Path) -> dict[str, str]:
    """The entries of a .env file as Settings reads them, keys upper-cased; a key without a value is left out.

    python-dotenv reads it, as pydantic-settings does: a `#` inside quotes is part of the value, a quoted value may
    span lines, and `${VAR}` is expanded. A missing file is no entries (and no import of the reader)."""
    if not env_file.is_file():
        return {}
    from dotenv import dotenv_values

    entries = dotenv_values(env_file, encoding="utf-8")
    return {key.upper(): value for key, value in entries.items() if value is not None}


def log_level_name(env_file: Path = Path(".env")) -> str:
    """OPSBOT_LOG_LEVEL as Settings would read it (the environment first, then ./.env), without loading Settings."""
    found = [value for key, value in os.environ.items() if key.upper() == "OPSBOT_LOG_LEVEL" and value]
    if found:
        return found[0]
    return dotenv_entries(env_file).get("OPSBOT_LOG_LEVEL") or "INFO"


def gate_is_default(env_file: Path = Path(".env")) -> bool:
    """True when neither the environment nor ./.env sets a model, the intent gate or a config file."""
    entries = {**dotenv_entries(env_file), **{key.upper(): value for key, value in os.environ.items()}}
    for key, value in entries.items():
        if key.startswith(GATE_PREFIXES) or key == MODEL_SECTION or (key in MODEL_KEYS and value):
            return False
    return True
