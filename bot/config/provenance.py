"""Where each setting's value came from: an environment variable, ./.env, the standard OPENAI_* variables, the
config file (and which table and key), or the default. `opsbot config` prints it; a bad value's error and a
doctor finding name it, so the reader fixes the right place.

The sources rank as Settings ranks them (bot/config/__init__.py): environment, .env, OPENAI_*, config file,
default. A JSON value (`OPSBOT_PROMETHEUS__METRICS={...}`) covers every setting below its path.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, SecretStr

PREFIX = "OPSBOT_"
MASK = "********"
OPENAI = {"OPENAI_API_KEY": ("llm", "api_key"), "OPENAI_BASE_URL": ("llm", "base_url")}


@dataclass(frozen=True)
class Origin:
    """One source's claim on a setting path: what to call it in a message, and its rank (lower wins)."""

    path: tuple[str, ...]
    where: str
    rank: int


def variable_path(name: str) -> tuple[str, ...]:
    """OPSBOT_PROMETHEUS__SERVICE_LABEL -> ("prometheus", "service_label")."""
    return tuple(part.lower() for part in name[len(PREFIX) :].split("__"))


def variable_name(path: tuple[str, ...]) -> str:
    return PREFIX + "__".join(part.upper() for part in path)


def origins(environ: Mapping[str, str], dotenv: Mapping[str, str], config_file: Path | None) -> list[Origin]:
    """Every source's claims, best rank first."""
    found = [Origin(variable_path(n), f"environment variable {n}", 0) for n in environ if n.startswith(PREFIX)]
    found += [Origin(variable_path(n), f".env entry {n}", 1) for n in dotenv if n.startswith(PREFIX)]
    found += [Origin(path, f"environment variable {n}", 2) for n, path in OPENAI.items() if environ.get(n)]
    if config_file is not None and config_file.is_file():
        data = tomllib.loads(config_file.read_text(encoding="utf-8"))
        found += [Origin(path, file_place(config_file, path), 3) for path in _leaf_paths(data)]
    return sorted(found, key=lambda o: o.rank)


def file_place(config_file: Path, path: tuple[str, ...]) -> str:
    """`config file /etc/opsbot.toml [prometheus.metrics.x] promql` (a top-level key has no table)."""
    table = f"[{'.'.join(path[:-1])}] " if len(path) > 1 else ""
    return f"config file {config_file} {table}{path[-1]}"


def origin_of(path: tuple[str, ...], claims: list[Origin]) -> str:
    """Where the setting at `path` came from: the best source whose path is it or a part above or below it."""
    for claim in claims:
        shorter = min(len(claim.path), len(path))
        if claim.path[:shorter] == path[:shorter]:
            return claim.where
    return "default"


def _leaf_paths(data: Mapping[str, Any], above: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for key, value in data.items():
        if isinstance(value, Mapping) and value:
            yield from _leaf_paths(value, (*above, key))
        else:
            yield (*above, key)


def effective_settings(settings: BaseModel) -> Iterator[tuple[tuple[str, ...], str]]:
    """(path, value as text) of every setting, secrets masked."""
    yield from _flattened(settings, ())


def _flattened(value: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], str]]:
    if isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from _flattened(getattr(value, name), (*path, name))
    elif isinstance(value, Mapping) and value and all(isinstance(v, BaseModel | Mapping) for v in value.values()):
        for key, inner in value.items():
            yield from _flattened(inner, (*path, str(key)))
    elif isinstance(value, SecretStr):
        yield path, MASK if value.get_secret_value() else ""
    else:
        yield path, _masked_text(value)


def _masked_text(value: Any) -> str:
    text = "" if value is None else str(value) if not isinstance(value, list | dict) else repr(value)
    return _without_password(text)


def _without_password(text: str) -> str:
    """A URL's password (redis://user:secret@host) is a secret too."""
    if "://" in text and "@" in text.split("://", 1)[1].split("/", 1)[0]:
        scheme, rest = text.split("://", 1)
        login, host = rest.split("@", 1)
        user = login.split(":", 1)[0]
        return f"{scheme}://{user}:{MASK}@{host}"
    return text


def dotenv_entries(env_file: Path = Path(".env")) -> dict[str, str]:
    """The .env entries Settings reads (names upper-cased), without loading Settings."""
    if not env_file.is_file():
        return {}
    from dotenv import dotenv_values

    return {key.upper(): value for key, value in dotenv_values(env_file).items() if value is not None}


def environment() -> dict[str, str]:
    """The process environment, names upper-cased as Settings matches them (case-insensitively)."""
    return {key.upper(): value for key, value in os.environ.items()}
