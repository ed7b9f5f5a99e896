"""`opsbot toolsets` (each toolset's prerequisites check) and `opsbot mcp` (serve opsbot's tools over MCP)."""

from __future__ import annotations

from typing import Annotated

import typer

_MARKS = {"ok": "✓", "warn": "!", "fail": "✗", "off": "-"}


def toolsets_command(
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object per toolset")] = False,
) -> None:
    """Check every toolset (metrics, logs, deploys, kubernetes, runbooks, each MCP server): ok / warn / fail / off.

    Exits 1 when a toolset that is switched on fails its check.
    """
    import json
    from dataclasses import asdict

    from bot import wiring

    statuses = wiring.toolset_statuses(wiring.load_settings())
    for status in statuses:
        line = (
            json.dumps(asdict(status))
            if as_json
            else (f"{_MARKS[status.state]} {status.name:<14} {status.state:<5} {status.detail}")
        )
        typer.echo(line)
    if any(s.state == "fail" for s in statuses):
        raise typer.Exit(1)


def mcp_command() -> None:
    """Serve opsbot's read-only incident tools over MCP on stdin/stdout (for an IDE assistant); logs go to stderr."""
    from bot import wiring

    wiring.serve_mcp(wiring.load_settings())
