"""Where a service's folder is in a deploy repository: `services/{service}`, `envs/{env}/{service}`,
`clusters/{env}/{service}`, `apps/{service}/overlays/{env}`; several patterns may be given, comma-separated.

`{service}` and `{env}` stand for one path segment each, `*` for any one segment. A file belongs to the first
pattern whose folder holds it; the folder's `{env}` is the deploy's environment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SEGMENT = r"[^/]+"


@dataclass(frozen=True)
class Place:
    """A service folder: which service, which environment ("" when the layout has none), and its path."""

    service: str
    environment: str
    folder: str


class Layout:
    """One or more folder patterns."""

    def __init__(self, patterns: str) -> None:
        self.patterns = [p.strip().strip("/") for p in patterns.split(",") if p.strip().strip("/")]
        if not self.patterns:
            raise ValueError("service_path is empty; give a folder pattern such as services/{service}")
        for pattern in self.patterns:
            if pattern.count("{service}") != 1 or pattern.count("{env}") > 1:
                raise ValueError(f"service_path {pattern!r} needs {{service}} once (e.g. envs/{{env}}/{{service}})")
        self._rx = [re.compile("^" + _regex(p) + "(?:/|$)") for p in self.patterns]

    def __str__(self) -> str:
        return ", ".join(self.patterns)

    @property
    def has_environments(self) -> bool:
        return any("{env}" in p for p in self.patterns)

    def place(self, path: str) -> Place | None:
        """The service folder that holds `path` (a file or a folder), or None when it is in none."""
        for rx in self._rx:
            match = rx.match(path)
            if match:
                groups = match.groupdict()
                return Place(groups["service"], groups.get("env") or "", match.group(0).rstrip("/"))
        return None

    def pathspecs(self, service: str | None = None) -> list[str]:
        """git pathspecs for one service's folders in every environment (every service's folders for None)."""
        specs = []
        for pattern in self.patterns:
            glob = pattern.replace("{env}", "*").replace("{service}", service if service else "*")
            specs.append(f":(glob){glob}/**")
        return specs


def _regex(pattern: str) -> str:
    out = []
    for segment in pattern.split("/"):
        if segment == "*":
            out.append(_SEGMENT)
            continue
        parts = re.split(r"(\{service\}|\{env\})", segment)
        out.append("".join(_part(p) for p in parts))
    return "/".join(out)


def _part(part: str) -> str:
    if part == "{service}":
        return r"(?P<service>[A-Za-z0-9][A-Za-z0-9._-]*)"
    if part == "{env}":
        return rf"(?P<env>{_SEGMENT})"
    return re.escape(part)
