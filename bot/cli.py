"""`opsbot` command line. Thin: every command asks bot.wiring for ready objects and prints results."""

from __future__ import annotations

import json
import logging
import sys
from typing import Annotated, Any

import typer

from bot import wiring
from bot.agent.parser import parse_reply, parsed_to_dict

app = typer.Typer(no_args_is_help=True, add_completion=False, help="opsbot: incident diagnosis from chat.")


@app.callback()
def _setup(verbose: bool = typer.Option(False, "--verbose", "-v", help="DEBUG logging")) -> None:
    level = logging.DEBUG if verbose else getattr(logging, wiring.load_settings().log_level.upper(), logging.INFO)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s %(message)s")


@app.command("parse")
def parse_command(
    jsonl: bool = typer.Option(False, "--jsonl", help="each stdin line is a JSON string; one result line each"),
    tool: Annotated[list[str] | None, typer.Option(help="a known tool name (repeatable), to normalise names")] = None,
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


def main() -> None:
    app()
