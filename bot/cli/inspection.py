"""`opsbot parse` and `opsbot classify`: how opsbot reads a model's reply and routes a message, for prompt work."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from bot.engine.types import Intent


def parse_command(
    jsonl: Annotated[
        bool, typer.Option("--jsonl", help="each stdin line is a JSON string; one result line each")
    ] = False,
    tool: Annotated[
        list[str] | None, typer.Option(metavar="NAME", help="a known tool name (repeatable), to normalise names")
    ] = None,
) -> None:
    """Show how opsbot reads a raw model output from stdin: the action, the final answer, or the format error."""
    from bot.engine.text.parser import parse_reply, parsed_to_dict  # the reader, for `parse` only (not `classify`)

    tools = tool or []
    if not jsonl:
        typer.echo(json.dumps(parsed_to_dict(parse_reply(sys.stdin.read(), tools)), ensure_ascii=False))
        return
    for number, line in enumerate(sys.stdin, start=1):
        if line.strip():
            typer.echo(json.dumps(_parse_jsonl_line(line, number, tools), ensure_ascii=False))


def _parse_jsonl_line(line: str, number: int, tools: list[str]) -> dict[str, Any]:
    """A bad input line still gives one output line, so results stay aligned with the input."""
    from bot.engine.text.parser import parse_reply, parsed_to_dict

    reply = _json_string(line)
    if reply is None:
        return {"kind": "error", "message": f"input line {number} is not a JSON string"}
    return parsed_to_dict(parse_reply(reply, tools))


def classify_command(
    text: Annotated[str, typer.Argument(help="the message to route; omit with --jsonl")] = "",
    jsonl: Annotated[
        bool, typer.Option("--jsonl", help="each stdin line is a JSON string; one result line each")
    ] = False,
) -> None:
    """Show how the intent gate routes a message: route, request kind, probability (confidence), tier
    (rules/classifier/model/default) and reason."""
    from bot import wiring
    from bot.cli.plainenv import gate_is_default

    default = gate_is_default()  # nothing set about the model or the gate: no Settings to load
    gate = wiring.build_default_classifier() if default else wiring.build_classifier(wiring.load_settings())
    read = _visible if default else _cleaned  # a configured model is sent the text: it is redacted first

    def classifier(message: str) -> Intent:
        return gate(read(message))

    if not jsonl:
        _write_json_line(_classified(classifier, text))
        return
    for number, raw in enumerate(sys.stdin.buffer, start=1):
        if raw.strip():
            _write_json_line(_classify_jsonl_line(classifier, raw, number))


def _classify_jsonl_line(classifier: Callable[[str], Intent], raw: bytes, number: int) -> dict[str, Any]:
    """One answer for every input line: a line that is not UTF-8, not JSON or not a string, or that the gate fails
    on, gets an error object naming its number, and the batch goes on."""
    try:
        message = _json_string(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return {"error": f"input line {number} is not UTF-8"}
    if message is None:
        return {"error": f"input line {number} is not a JSON string"}
    try:
        return _classified(classifier, message)
    except Exception as exc:  # the CLI is this surface's one catch: report the line, keep the batch
        return {"error": f"input line {number} could not be classified ({type(exc).__name__})"}


def _classified(classifier: Callable[[str], Intent], text: str) -> dict[str, Any]:
    from bot.routing.intent import intent_to_dict

    return intent_to_dict(classifier(text))


def _visible(text: str) -> str:
    """Text read as every surface reads it (a lone surrogate or a control character dropped, the length capped), so
    the CLI routes what the server would. Without a model nothing leaves the process, so nothing is redacted (and
    the redaction rules never compile)."""
    from bot.safety.inbound import MAX_INBOUND_CHARS, cap_chars, visible_text

    return cap_chars(visible_text(text), MAX_INBOUND_CHARS)


def _cleaned(text: str) -> str:
    """Text cleaned at the boundary as every surface cleans it, a pasted secret redacted before the model sees it."""
    from bot.safety.inbound import clean_inbound

    return clean_inbound(text)


def _write_json_line(result: dict[str, Any]) -> None:
    """One JSON line, always valid UTF-8 whatever the terminal's encoding (an unencodable character is replaced)."""
    line = json.dumps(result, ensure_ascii=False) + "\n"
    sys.stdout.buffer.write(line.encode("utf-8", "replace"))
    sys.stdout.buffer.flush()


def _json_string(line: str) -> str | None:
    try:
        value = json.loads(line)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, str) else None
