"""A configuration that does not load, in lines a person can act on: each names the source of the bad value (the
environment variable, the .env entry, or the config file with its table and key) and, for a key no setting has,
the setting it most likely meant.

Unknown keys are errors everywhere: inside a section pydantic refuses them (bot/config/section.py), a top-level
table of the config file is refused by its source (bot/config/sources.py), and an OPSBOT_ variable that names no
setting is found by `unknown_variables` (Settings itself ignores unknown top-level names, as .env may hold other
tools' variables).
"""

from __future__ import annotations

import difflib
import json
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from bot.config.provenance import PREFIX, file_place, origins, variable_name, variable_path

# Variables of opsbot's own development tools that are not settings.
NOT_SETTINGS = frozenset({"OPSBOT_UPDATE_CATALOGUE", "OPSBOT_VENV", "OPSBOT_COMPAT_VENV"})


class UnknownSettings(ValueError):
    """OPSBOT_ variables that name no setting; `lines` says which, each with the nearest setting."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("; ".join(lines))
        self.lines = lines


def closest(name: str, known: list[str]) -> str:
    """' (did you mean X?)' for the closest known name, ignoring case, '-' and '_'; '' when none is close."""

    def folded(text: str) -> str:
        return text.lower().replace("-", "").replace("_", "")

    by_fold = {folded(k): k for k in known}
    close = difflib.get_close_matches(folded(name), list(by_fold), n=1, cutoff=0.75)
    return f" (did you mean {by_fold[close[0]]}?)" if close else ""


def fields_at(model: type[BaseModel], path: tuple[str, ...]) -> list[str] | None:
    """The field names of the section at `path` (None when the path ends at a value, or leaves the tree). A
    part below a dict or list of sections (a metric's name, a server's index) is a key, not a field."""
    current: Any = model
    for part in path:
        if isinstance(current, tuple):  # the key into a dict or list of sections
            current = current[1]
            continue
        field = current.model_fields.get(part)
        if field is None:
            return None
        annotation, args = field.annotation, typing.get_args(field.annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            current = annotation
        elif args and isinstance(args[-1], type) and issubclass(args[-1], BaseModel):
            current = ("items", args[-1])
        else:
            return None
    return list(current.model_fields) if not isinstance(current, tuple) else None


def unknown_variables(model: type[BaseModel], environ: Mapping[str, str], dotenv: Mapping[str, str]) -> list[str]:
    """One line per OPSBOT_ variable (environment or .env) whose first part names no setting."""
    lines = []
    known = list(model.model_fields)
    for source, names in (("environment variable", environ), (".env entry", dotenv)):
        for name in sorted(n for n in names if n.startswith(PREFIX) and n not in NOT_SETTINGS):
            top = variable_path(name)[0]
            if top not in known:
                hint = _variable_hint(model, name)
                lines.append(f"{source} {name}: no such setting{hint}")
    return lines


def _variable_hint(model: type[BaseModel], name: str) -> str:
    """The nearest setting's variable, top-level or one section down (OPSBOT_SERVICE_LABEL -> ..PROMETHEUS__..)."""
    candidates = [variable_name((f,)) for f in model.model_fields]
    for section in model.model_fields:
        inner = fields_at(model, (section,))
        candidates += [variable_name((section, f)) for f in inner or []]
    by_tail = [c for c in candidates if c.endswith("__" + name[len(PREFIX) :])]
    if by_tail:
        listed = ", ".join(by_tail[:-1]) + (" or " if len(by_tail) > 1 else "") + by_tail[-1]
        return f" (did you mean {listed}?)"
    return closest(name, candidates)


def settings_problems(
    exc: Exception,
    model: type[BaseModel],
    environ: Mapping[str, str],
    dotenv: Mapping[str, str] | None = None,
    config_file: Path | None = None,
) -> list[str]:
    """One line per problem in what Settings() raised, naming where the bad value came from."""
    if isinstance(exc, UnknownSettings):
        return exc.lines
    claims = origins(environ, dotenv or {}, config_file)
    errors = getattr(exc, "errors", None)
    if callable(errors):
        return [_problem_line(error, model, claims, environ, dotenv or {}, config_file) for error in errors()]
    if str(exc).startswith("config file"):  # the file's own source already named the file and the table
        return [str(exc)]
    broken = [name for name, value in environ.items() if name.startswith(PREFIX) and not _json_ok(value)]
    if broken:
        return [f"{name}: not valid JSON ({_json_error(environ[name])})" for name in broken]
    return [f"configuration: {exc}"]


def _problem_line(
    error: Mapping[str, Any],
    model: type[BaseModel],
    claims: list[Any],
    environ: Mapping[str, str],
    dotenv: Mapping[str, str],
    config_file: Path | None,
) -> str:
    loc = tuple(str(part) for part in error["loc"])
    place, text, inside = _source(loc, claims, environ, dotenv, config_file)
    if error["type"] == "extra_forbidden":
        hint = closest(loc[-1], fields_at(model, loc[:-1]) or [])
        if hint and text is not None and not inside:  # a variable: name the variable to set instead
            field = hint.removeprefix(" (did you mean ").removesuffix("?)")
            hint = f" (did you mean {variable_name((*loc[:-1], field))}?)"
        return f"{place}{inside}: no such setting{hint}"
    value = f"={text:.60}" if text is not None else f" = {error.get('input')!r:.60}"
    return f"{place}{value}{inside}: {error['msg']}"


def _source(
    loc: tuple[str, ...],
    claims: list[Any],
    environ: Mapping[str, str],
    dotenv: Mapping[str, str],
    config_file: Path | None,
) -> tuple[str, str | None, str]:
    """Where the value at `loc` came from: (the place, a variable's text or None, where inside a JSON value). The
    variable that holds it first (the deepest parts of a JSON value are inside it), else the config file's key."""
    for cut in range(len(loc), 0, -1):
        name = variable_name(loc[:cut])
        inside = f" (at {'.'.join(loc[cut:])})" if cut < len(loc) else ""
        for source, names in (("environment variable", environ), (".env entry", dotenv)):
            if name in names:
                return f"{source} {name}", names[name], inside
    if config_file is not None and any(c.rank == 3 and c.path[: len(loc)] == loc for c in claims):
        return file_place(config_file, loc), None, ""
    return variable_name(loc), None, ""


def _json_ok(value: str) -> bool:
    return not value.lstrip().startswith(("{", "[")) or not _json_error(value)


def _json_error(value: str) -> str:
    try:
        json.loads(value)
    except ValueError as exc:
        return str(exc)
    return ""
