"""A configuration file read whole, as flat dotted keys: YAML (every document), JSON, TOML, .properties and .env.

Keys are named the way tools/analysis/configdiff.py names them when it reads a hunk, so a change reads the same
whichever way it was found: `spring.datasource.hikari.maximum-pool-size`, a named list item as
`spec.template.spec.containers[app].image`, an env var as `env FEATURE_X`, a container argument as
`flag --max-conns`. YAML scalars keep the text they were written with (`1.10` stays `1.10`, `on` stays `on`):
the file is composed into nodes, never loaded into Python values.
"""

from __future__ import annotations

import functools
import json
import re
import tomllib
from collections.abc import Iterator, Mapping
from datetime import date, datetime, time
from typing import Any

import yaml

YAML_SUFFIXES = (".yaml", ".yml")
STRUCTURED_SUFFIXES = (*YAML_SUFFIXES, ".json", ".toml", ".properties", ".env")
_MAX_DEPTH = 64  # YAML aliases can make a cycle; no real configuration nests this deep
# libyaml's parser when PyYAML was built with it: the same nodes, about ten times faster than the pure-Python one.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_PROPERTY_RX = re.compile(r"^\s*(?:export\s+)?(?P<key>[^\s=:#!][^=:\s]*)\s*[=:\s]\s*(?P<value>.*?)\s*$")


class ConfigParseError(ValueError):
    """The file cannot be read as its suffix says (a Helm template, a syntax error, an unknown format)."""


def flat_keys(path: str, text: str) -> Mapping[str, str]:
    """Every leaf of the file as dotted key -> value text, in file order. A deploy's new version is the next one's
    old version, so each text is read once (the result is shared: read it, do not change it)."""
    suffix = next((s for s in STRUCTURED_SUFFIXES if path.lower().endswith(s)), path.rsplit("/", 1)[-1])
    return _flat_keys(suffix, text)


@functools.lru_cache(maxsize=512)
def _flat_keys(suffix: str, text: str) -> Mapping[str, str]:
    name = suffix.lower()
    if name.endswith(YAML_SUFFIXES):
        tree = _yaml_tree(text)
    elif name.endswith(".json"):
        tree = _parsed(json.loads, text, "JSON")
    elif name.endswith(".toml"):
        tree = _parsed(tomllib.loads, text, "TOML")
    elif name.endswith((".properties", ".env")):
        return _property_keys(text)
    else:
        raise ConfigParseError(f"{suffix} is not a format read whole (YAML, JSON, TOML, properties, env)")
    return dict(_leaves(tree, []))


def dotted(parents: list[str], key: str) -> str:
    """`spec.containers[app].image`; under an env item only the variable: `env FEATURE_X` (its `value`)."""
    env = next((i for i in range(len(parents) - 1, -1, -1) if parents[i].startswith("env ")), None)
    if env is not None:
        rest = [*parents[env + 1 :], key] if key != "value" else parents[env + 1 :]
        return ".".join([parents[env], *rest])
    text = ""
    for part in [*parents, key]:
        text += part if part.startswith("[") or not text else f".{part}"
    return text


def _parsed(parse: Any, text: str, kind: str) -> Any:
    try:
        return parse(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ConfigParseError(f"not valid {kind}: {exc}") from exc


def _yaml_tree(text: str) -> Any:
    """The documents as dicts, lists and scalar text; several documents are keyed `Kind/name` (or their index)."""
    try:
        docs = [d for d in yaml.compose_all(text, Loader=_LOADER) if d is not None]
    except yaml.YAMLError as exc:
        raise ConfigParseError(f"not valid YAML: {' '.join(str(exc).split())[:200]}") from exc
    trees = [_from_node(d, 0) for d in docs]
    if len(trees) == 1:
        return trees[0]
    return {_document_name(tree, i): tree for i, tree in enumerate(trees)}


def _document_name(tree: Any, index: int) -> str:
    if isinstance(tree, dict) and isinstance(tree.get("metadata"), dict) and tree.get("kind"):
        return f"{tree['kind']}/{tree['metadata'].get('name', index)}"
    return f"[{index}]"


def _from_node(node: yaml.Node, depth: int) -> Any:
    if depth > _MAX_DEPTH:
        raise ConfigParseError("YAML nests deeper than any configuration (an alias cycle?)")
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode):  # `{{ .Values.x }}` reads as a mapping key: a template
                raise ConfigParseError(f"a key that is not text at line {key.start_mark.line + 1} (a template?)")
            if key.value == "<<":  # a merge key: the merged mapping's keys, overridden by the explicit ones
                merged = value.value if isinstance(value, yaml.SequenceNode) else [value]
                for item in merged:
                    out = {**_from_node(item, depth + 1), **out}
                continue
            out[str(key.value)] = _from_node(value, depth + 1)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_from_node(item, depth + 1) for item in node.value]
    text = str(node.value)
    return "null" if node.tag.endswith(":null") and text in ("", "~") else text


def _leaves(value: Any, parents: list[str]) -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        if not value and parents:
            yield dotted(parents[:-1], parents[-1]), "{}"
        for key, item in value.items():
            if key == "name" and parents and _is_named_item(parents[-1]):
                continue  # the item's name is in its key already
            yield from _leaves(item, [*parents, str(key)])
    elif isinstance(value, list):
        yield from _list_leaves(value, parents)
    elif parents:
        yield dotted(parents[:-1], parents[-1]), _scalar_text(value)


def _list_leaves(items: list[Any], parents: list[str]) -> Iterator[tuple[str, str]]:
    """Named items by name (`[app]`, `env X`), `--flag=value` arguments as flags, other scalars as one value."""
    plain = []
    for i, item in enumerate(items):
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            label = f"env {item['name']}" if parents and parents[-1] == "env" else f"[{item['name']}]"
            yield from _leaves(item, [*parents, label])
        elif isinstance(item, dict | list):
            yield from _leaves(item, [*parents, f"[{i}]"])
        elif isinstance(item, str) and item.startswith("--"):
            flag, _, value = item.partition("=")
            yield f"flag {flag}", value or "(set)"
        else:
            plain.append(_scalar_text(item))
    if (plain or not items) and parents:
        yield dotted(parents[:-1], parents[-1]), "[" + ", ".join(plain) + "]"


def _is_named_item(label: str) -> bool:
    return label.startswith(("[", "env ")) and not re.fullmatch(r"\[\d+\]", label)


def _scalar_text(value: Any) -> str:
    """JSON and TOML values as their files write them (true, null, 0.5); YAML's are text already."""
    if isinstance(value, str):
        return value
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    return json.dumps(value)


def _property_keys(text: str) -> dict[str, str]:
    found = {}
    for line in text.splitlines():
        if line.lstrip().startswith(("#", "!")) or not line.strip():
            continue
        match = _PROPERTY_RX.match(line)
        if match:
            found[match.group("key")] = match.group("value").strip("\"'")
    return found
