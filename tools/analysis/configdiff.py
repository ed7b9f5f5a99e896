"""What a deploy's diff changed: config keys (old → new) and risky statements, read from a unified diff.

Config files give `-key: old` / `+key: new` pairs (dotted by YAML indentation; `.properties` and `.env`
files as `key=value`; Kubernetes env vars as `env NAME`, container args as `flag --name`); other files
(SQL migrations, scripts) give the risky statements they add (ALTER, CREATE INDEX, DROP, UPDATE ... SET...).
Pure functions over text: find_changes (tools/changes.py) and the playbook (bot/playbook) both read diffs here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass


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
    # Image tags only repeat the version; the keys an engineer changed by hand come first.
    return sorted(changes, key=lambda c: bool(re.search(r"(?i)tag|image|version", c.key)))


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
    return _dotted([p for _, p in parents], key), value


def _dotted(parents: list[str], key: str) -> str:
    """`spec.containers[app].image`; under an env item only the variable: `env FEATURE_X` (its `value`)."""
    env = next((i for i in range(len(parents) - 1, -1, -1) if parents[i].startswith("env ")), None)
    if env is not None:
        rest = [*parents[env + 1 :], key] if key != "value" else parents[env + 1 :]
        return ".".join([parents[env], *rest])
    text = ""
    for part in [*parents, key]:
        text += part if part.startswith("[") or not text else f".{part}"
    return text
