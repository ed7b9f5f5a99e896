"""`opsbot parse` and `opsbot classify`: how opsbot reads a model's reply and routes a message, for prompt work."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from bot.engine.text.parser import parse_reply, parsed_to_dict


def parse_command(
    jsonl: Annotated[
        bool, typer.Option("--jsonl", help="each stdin line is a JSON string; one result line each")
    ] = False,
    tool: Annotated[
        list[str] | None, typer.Option(metavar="NAME", help="a known tool name (repeatable), to normalise names")
    ] = None,
) -> None:
    """Show how opsbot reads a raw model output from stdin: the action, the final answer, or the format error."""
    tools = tool or []
    if not jsonl:
        typer.echo(json.dumps(parsed_to_dict(parse_reply(sys.stdin.read(), tools)), ensure_ascii=False))
        return
    for number, line in enumerate(sys.stdin, start=1):
        if line.strip():
            typer.echo(json.dumps(_parse_jsonl_line(line, number, tools), ensure_ascii=False))


def _parse_jsonl_line(line: str, number: int, tools: list[str]) -> dict[str, Any]:
    """A bad input line still gives one output line, so results stay aligned with the input."""
    try:
        reply = json.loads(line)
    except json.JSONDecodeError:
        reply = None
    if not isinstance(reply, str):
        return {"kind": "error", "message": f"input line {number} is not a JSON string"}
    return parsed_to_dict(parse_reply(reply, tools))


def classify_command(
    text: Annotated[str, typer.Argument(help="the message to route; omit with --jsonl")] = "",
    jsonl: Annotated[
        bool, typer.Option("--jsonl", help="classify each stdin line; one JSON line out per line in")
    ] = False,
) -> None:
    """Show how the intent gate routes a message: route, confidence, tier (rules/model/default) and reason."""
    from bot import wiring
    from bot.routing.intent import intent_to_dict  # imports the LLM adapter (openai)

    classifier = wiring.build_classifier(wiring.load_settings())
    lines = [line.rstrip("\n") for line in sys.stdin if line.strip()] if jsonl else [text]
    for line in lines:
        typer.echo(json.dumps(intent_to_dict(classifier(line)), ensure_ascii=False))
