"""The config file `opsbot init` writes: each discovered setting with its evidence as a comment above it.

A finding's setting is a dotted Settings path (`prometheus.services.inventory.service_label`; a part that is not a
bare TOML key is quoted, `prometheus.services."api.v2".metrics.qps`). A dict value is a table of its own; any
other value is a key of its parent's table. Tables come in the order their first setting was found, so a
service's label sits next to its own templates. What was not found is listed at the top, for the reader to set, and
then what was seen and not used, each with how to read it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from tools.discovery import setting_parts

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


class Found(Protocol):
    """What the writer needs of a finding (tools/discovery.py Finding)."""

    @property
    def setting(self) -> str: ...

    @property
    def value(self) -> object: ...

    @property
    def evidence(self) -> str: ...

    @property
    def problems(self) -> tuple[str, ...]: ...

    @property
    def warnings(self) -> tuple[str, ...]: ...


def config_toml(findings: Sequence[Found], header: Sequence[str]) -> str:
    """The whole file: the header lines and what was not found as comments, then every table."""
    lines = [f"# {line}" for line in header]
    missing = [f for f in findings if f.problems]
    if missing:
        lines += ["#", "# Not found or not recognised (set these yourself, or fix the stack and run init again):"]
        lines += [f"# - {f.setting}: {problem}" for f in missing for problem in f.problems]
    seen = [warning for f in findings if f.value is None for warning in f.warnings]
    if seen:  # series that look like a service's but follow no known convention: never left out in silence
        lines += ["#", "# Seen, not used (each line says how to read it: a catalogue entry and its role):"]
        lines += [f"# - {warning}" for warning in seen]
    tables: dict[tuple[str, ...], list[str]] = {}
    for finding in (f for f in findings if f.value is not None):
        parts = tuple(setting_parts(finding.setting))
        comment = [f"# {line}" for line in _wrapped(finding.evidence)] + [f"# ! {w}" for w in finding.warnings]
        if isinstance(finding.value, Mapping):
            body = tables.setdefault(parts, [])
            body[:0] = comment  # the table's own evidence goes first, under its header
            body += [f"{_key(k)} = {_value(v)}" for k, v in finding.value.items()]
        else:
            tables.setdefault(parts[:-1], []).extend([*comment, f"{_key(parts[-1])} = {_value(finding.value)}"])
    for parts, body in sorted(tables.items(), key=lambda item: item[0] != ()):  # top-level keys before any table
        lines += ["", *([f"[{'.'.join(_key(p) for p in parts)}]"] if parts else []), *body]
    return "\n".join(lines).strip() + "\n"


def _wrapped(text: str, width: int = 116) -> Iterable[str]:
    """Evidence as comment lines of at most `width` characters, split at '; ' where it can be."""
    line = ""
    for piece in text.split("; ") if text else []:
        if line and len(line) + len(piece) + 2 > width:
            yield line + ";"
            line = piece
        else:
            line = f"{line}; {piece}" if line else piece
    if line:
        yield line


def _key(part: str) -> str:
    return part if _BARE_KEY.match(part) else json.dumps(part, ensure_ascii=False)


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        # a literal string keeps PromQL's quotes readable; a basic string when it holds a quote or a newline
        return f"'{value}'" if "'" not in value and "\n" not in value else json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_key(str(k))} = {_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, Iterable):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return json.dumps(str(value))
