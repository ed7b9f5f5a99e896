"""Argument reading for text-ReAct actions: whatever the model wrote after `Action Input:` or inside `tool(...)`.

Broken JSON (comments, trailing commas, single quotes, Python literals, unquoted keys, a missing brace) is
repaired by json-repair, never by hand. `a="x", b=2` is read with `ast` as literals only (never evaluated),
and `key: value` lines as strings that the tool's argument model then validates and coerces.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from typing import Any

import json_repair

from bot.engine.text.labels import strip_fences

MAX_INPUT_CHARS = 20_000  # larger "arguments" are a runaway reply, not a tool call
# Native tool-call arguments that are not a JSON object land under this key, so the protocol can tell the
# model its arguments were unreadable instead of running the tool with nothing.
UNPARSED_ARGS_KEY = "_unparsed_arguments"
MAX_ARGS_DEPTH = 32  # real tool arguments nest two or three levels
_MAX_BRACKETS = 200  # real tool arguments nest a few levels; thousands of braces are a degenerate reply
_JSON_LITERALS = {"true": True, "false": False, "null": None}
_KEY_VALUE_LINE = re.compile(
    r"^[ \t]*(?:[-*][ \t]+)?[\"']?(?P<key>[A-Za-z_][\w-]*)[\"']?[ \t]*[:=][ \t]*(?P<value>.*?)"
    r"[ \t]*,?[ \t]*$"
)


class Unreadable(ValueError):
    """Arguments or an action that no lenient reading could make sense of; the message says which."""


def args_from_text(text: str | None, *, raw_ok: bool = False) -> Any:
    """Read an Action Input: repaired JSON, `a="x", b=2`, `key: value` lines, or (raw_ok) the plain text."""
    text = strip_fences(text or "")
    if not text:
        return {}
    if len(text) > MAX_INPUT_CHARS:
        raise Unreadable(f"the Action Input is {len(text):,} characters; send at most {MAX_INPUT_CHARS:,}")
    loaded = loads_lenient(text) if "{" in text else None
    if isinstance(loaded, dict):
        return loaded
    if isinstance(loaded, list) and loaded and isinstance(loaded[0], dict):
        return loaded[0]  # two JSON objects: the first is the call
    for reader in (_keywords_or_none, _key_values_or_none):
        args = reader(text)
        if args is not None:
            return args
    if raw_ok:
        return text
    raise Unreadable("the Action Input is not a JSON object")


def args_from_call(inner: str, opener: str) -> dict[str, Any]:
    """Arguments of `tool(a="x", b=2)`, `tool({...})` or `tool[{...}]`."""
    inner = inner.strip()
    if not inner:
        return {}
    if opener == "[" or inner.startswith("{"):
        args = args_from_text(inner)
        if isinstance(args, dict):
            return args
    keywords = _keywords_or_none(inner)
    if keywords is None:
        raise Unreadable("the call arguments are neither keyword arguments (name=value) nor a JSON object")
    return keywords


def answer_from_args(args: Any) -> str:
    """The answer of `Action: finish`: args["answer"], a lone string value, or the raw input text."""
    if isinstance(args, str):
        return args.strip()
    if isinstance(args, Mapping):
        if "answer" in args:
            return str(args["answer"]).strip()
        texts = [v for v in args.values() if isinstance(v, str)]
        if len(texts) == 1:
            return texts[0].strip()
    return ""


def loads_lenient(text: str) -> Any:
    """json-repair from the first brace; never raises. Runaway input is not tried (repair slows on it)."""
    start = text.find("{")
    if len(text) > MAX_INPUT_CHARS or text.count("{") + text.count("[") > _MAX_BRACKETS:
        return None
    try:
        return json_repair.loads(text[start:] if start >= 0 else text)
    except (ValueError, RecursionError):
        return None


def _keywords_or_none(text: str) -> dict[str, Any] | None:
    """`a="x", b=2` read with ast as literals only; None when it is not that shape."""
    try:
        tree = ast.parse(f"f({text})", mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    call = tree.body
    if not isinstance(call, ast.Call) or not call.keywords or call.args:
        return None
    try:
        return {kw.arg: _literal(kw.value) for kw in call.keywords if kw.arg}
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return None


def _literal(node: ast.expr) -> Any:
    """A Python literal as JSON would hold it, also accepting the JSON spellings true/false/null."""
    if isinstance(node, ast.Name) and node.id in _JSON_LITERALS:
        return _JSON_LITERALS[node.id]
    return _jsonable(ast.literal_eval(node))


def _jsonable(value: Any) -> Any:
    """Tuples and sets become lists, bytes and complex numbers strings: arguments must survive json.dumps."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [_jsonable(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, set | frozenset) else items
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value) if isinstance(value, complex) else value


def _key_values_or_none(text: str) -> dict[str, str] | None:
    """YAML-ish `service: order` lines (every line must be one); values stay strings."""
    lines = [line for line in text.split("\n") if line.strip()]
    matches = [_KEY_VALUE_LINE.match(line) for line in lines]
    if not lines or not all(matches):
        return None
    return {m["key"]: m["value"].strip("'\"") for m in matches if m}


def args_from_json(raw: str) -> dict[str, Any]:
    """Tool-call arguments as a dict; json-repair forgives small slips, anything else is kept for the model."""
    if not raw.strip():
        return {}
    if too_deeply_nested(raw):  # a format error the model is told about, never "LLM unavailable"
        return {UNPARSED_ARGS_KEY: f"nested deeper than {MAX_ARGS_DEPTH} levels: {raw[:200]}"}
    try:
        value = json.loads(raw)
    except (json.JSONDecodeError, RecursionError):
        try:
            value = json_repair.loads(raw)
        except (ValueError, RecursionError):
            value = None
    return value if isinstance(value, dict) else {UNPARSED_ARGS_KEY: raw}


def too_deeply_nested(raw: str, max_depth: int = MAX_ARGS_DEPTH) -> bool:
    """True when JSON-ish text opens more than `max_depth` brackets at once (counted before any parser recurses)."""
    depth = 0
    for char in raw:
        if char in "[{":
            depth += 1
            if depth > max_depth:
                return True
        elif char in "]}":
            depth = max(depth - 1, 0)
    return False
