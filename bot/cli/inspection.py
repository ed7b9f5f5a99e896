"""`opsbot parse` and `opsbot classify`: how opsbot reads a model's reply and routes a message, for prompt work."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer


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
    """Show how the intent gate routes a message: route, probability (confidence), tier
    (rules/classifier/model/default) and reason."""
    from bot import wiring
    from bot.cli.plainenv import gate_is_default
    from bot.routing.intent import intent_to_dict

    default = gate_is_default()  # nothing set about the model or the gate: no Settings to load
    classifier = wiring.build_default_classifier() if default else wiring.build_classifier(wiring.load_settings())
    if not jsonl:
        typer.echo(json.dumps(intent_to_dict(classifier(text)), ensure_ascii=False))
        return
    for number, line in enumerate(sys.stdin, start=1):
        if not line.strip():
            continue
        message = _json_string(line)
        result = (
            intent_to_dict(classifier(message))
            if message is not None
            else {"error": f"input line {number} is not a JSON string"}
        )
        typer.echo(json.dumps(result, ensure_ascii=False))


def _json_string(line: str) -> str | None:
    try:
        value = json.loads(line)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, str) else None
