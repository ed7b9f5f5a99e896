"""What a deploy's diff changed: config keys (old → new) and risky statements.

Keys come from both versions of each config file when the source can read them (`key_changes_from_versions`):
the full path, `spring.datasource.hikari.maximum-pool-size`, however far `spring:` is from the changed line.
Otherwise, and for files that do not parse, they come from the unified diff's hunks (`key_changes_from_diff`:
dotted by YAML indentation inside the hunk; `.properties` and `.env` files as `key=value`; Kubernetes env vars as
`env NAME`, container args as `flag --name`), and the caller is told so. Other files (SQL migrations, scripts) give
the risky statements they add (ALTER, CREATE INDEX, DROP, UPDATE ... SET...).
Pure functions over text: the deploy sources (tools/deploys), find_changes and the playbook read diffs here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from tools.analysis.configtree import STRUCTURED_SUFFIXES, ConfigParseError, dotted, flat_keys


@dataclass(frozen=True)
class KeyChange:
    """One configuration key changed by a deploy diff."""

    key: str
    old: str
    new: str
    path: str = ""  # file the change is in


_DIFF_KEY_RX = re.compile(r"^(?P<indent>\s*)(?:-\s+)?(?P<key>[\w.\-/\"']+)\s*[:=]\s*(?P<value>.*?)\s*$")

_CONFIG_SUFFIXES = (".yaml", ".yml", ".properties", ".env", ".conf", ".toml")
# Statements in a migration or script that can make a query slow or data disappear.
_RISKY_LINE_RX = re.compile(
    r"\b(DROP|ALTER|TRUNCATE|DELETE FROM|RENAME|CREATE (UNIQUE )?INDEX|FLUSH\w*|REINDEX|VACUUM FULL|LOCK TABLE"
    r"|UPDATE \w+ SET)\b",
    re.I,
)
ABSENT = "(absent)"


@dataclass(frozen=True)
class FileVersions:
    """One file before and after a deploy (None: it did not exist on that side)."""

    path: str
    old: str | None
    new: str | None


def is_config(path: str) -> bool:
    """A file whose `key: value` lines are settings (YAML, JSON, TOML, properties, env, conf)."""
    return path.lower().endswith((*_CONFIG_SUFFIXES, ".json"))


def key_changes_from_versions(
    versions: Sequence[FileVersions], hunks: str | Callable[[list[str]], str]
) -> tuple[list[KeyChange], list[str]]:
    """Full-path key changes of every config file read whole; for a config file that cannot be (a Helm template,
    a syntax error, a format not read whole) the keys its hunks show, with a note naming it.

    `hunks` is the unified diff, or a function that gives the diff of the paths it is passed (called only when a
    file needs its hunks)."""
    changes: list[KeyChange] = []
    notes: list[str] = []
    failing: list[str] = []
    for fv in versions:
        if not is_config(fv.path):
            continue
        try:
            changes += file_key_changes(fv)
        except ConfigParseError as exc:
            failing.append(fv.path)
            notes.append(f"{fv.path}: keys read from the diff's hunks, not the whole file ({exc})")
    if isinstance(hunks, str):  # config files the diff shows but whose versions were not supplied
        supplied = {fv.path for fv in versions}
        unread = [p for p in dict.fromkeys(c.path for c in key_changes_from_diff(hunks)) if p not in supplied]
        failing += unread
        notes += [f"{p}: keys read from the diff's hunks (the file's versions were not read)" for p in unread]
    if failing:
        diff = hunks if isinstance(hunks, str) else hunks(failing)
        changes += [c for c in key_changes_from_diff(diff) if c.path in failing]
        notes.append("keys read from hunks may lack a parent key that lies outside the hunk's context lines")
    return _ordered(changes), notes


def file_key_changes(versions: FileVersions) -> list[KeyChange]:
    """Every key whose value differs between the two versions of one file (ConfigParseError when one side does
    not parse, or the format is not read whole)."""
    if not versions.path.lower().endswith(STRUCTURED_SUFFIXES):
        raise ConfigParseError("this format is not read whole")
    old = flat_keys(versions.path, versions.old) if versions.old is not None else {}
    new = flat_keys(versions.path, versions.new) if versions.new is not None else {}
    return [
        KeyChange(key, old.get(key, ABSENT), new.get(key, ABSENT), versions.path)
        for key in dict.fromkeys([*old, *new])
        if old.get(key) != new.get(key)
    ]


def _ordered(changes: list[KeyChange]) -> list[KeyChange]:
    """Image tags only repeat the version; the keys an engineer changed by hand come first."""
    return sorted(changes, key=lambda c: bool(re.search(r"(?i)tag|image|version", c.key)))


def key_changes_from_diff(diff: str) -> list[KeyChange]:
    """Config keys a unified diff changes, added or removes; keys are dotted by YAML indentation."""
    removed: dict[str, tuple[str, str]] = {}
    added: dict[str, tuple[str, str]] = {}
    for path, sign, key, value in _config_lines(diff):
        (removed if sign == "-" else added)[key] = (value, path)
    changes = [
        KeyChange(
            key,
            removed.get(key, (ABSENT, ""))[0],
            added.get(key, (ABSENT, ""))[0],
            added.get(key, removed.get(key, ("", "")))[1],
        )
        for key in dict.fromkeys([*removed, *added])
        if removed.get(key, (None,))[0] != added.get(key, (None,))[0]
    ]
    return _ordered(changes)


def _config_lines(diff: str) -> Iterator[tuple[str, str, str, str]]:
    """(path, "+"/"-", dotted key, value) of every changed `key: value` line in a config file."""
    path = ""
    parents: list[tuple[int, str]] = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            name = line[4:].strip().removeprefix("b/").removeprefix("a/")
            path = name if name != "/dev/null" else path
            parents = []
        elif line.startswith("@@"):
            parents = []
            _key_value(line.rpartition("@@")[2][1:], parents)  # git names the enclosing block: "@@ ... @@ spring:"
        elif line[:1] in (" ", "+", "-") and path.endswith(_CONFIG_SUFFIXES):
            key_value = _key_value(line[1:], parents)
            if key_value is not None and line[0] != " ":
                yield path, line[0], *key_value


def risky_lines_from_diff(diff: str) -> list[str]:
    """Added lines outside config files that drop, alter or flush something (migrations, scripts)."""
    path, found = "", []
    for line in diff.splitlines():
        if line.startswith("+++"):
            path = line[4:].strip().removeprefix("b/")
        elif line.startswith("+") and not path.endswith((*_CONFIG_SUFFIXES, ".md")) and _RISKY_LINE_RX.search(line):
            found.append(f"{path}: {' '.join(line[1:].split())}")
    return found


def _key_value(text: str, parents: list[tuple[int, str]]) -> tuple[str, str] | None:
    """Track YAML nesting in `parents` and return (dotted key, value) for a `key: value` line.

    Kubernetes lists read as people write them: `- name: FEATURE_X` / `value: "true"` under `env:` is the key
    `env FEATURE_X`; another named item is `containers[app]`; a `- --flag=value` argument is `flag --flag`."""
    match = _DIFF_KEY_RX.match(text)
    if not match or text.lstrip().startswith(("#", "!")):
        return None
    indent, key, value = len(match.group("indent")), match.group("key").strip("\"'"), match.group("value")
    while parents and parents[-1][0] >= indent:
        parents.pop()
    value = re.sub(r"\s+#", " #", value).strip("\"'")
    if key.startswith("--"):
        return f"flag {key}", value
    if key == "name" and value and text.lstrip().startswith("-"):  # a named list item: it names what follows
        listed = parents[-1][1] if parents else ""
        parents.append((indent, f"env {value}" if listed == "env" else f"[{value}]"))
        return None
    if not value or value in ("|", ">"):
        parents.append((indent, key))
        return None
    return dotted([p for _, p in parents], key), value
