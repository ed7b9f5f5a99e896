"""An MCP server (the mcp package's low-level Server) over a Toolbox: tools/list and tools/call, nothing else.

Every call goes through call_tool(), so arguments are validated, a slow backend costs at most the timeout and
every answer is redacted, exactly as in a diagnosis. The tools are marked read-only; none of opsbot's writes.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from tools.base import Toolbox, ToolResult, call_tool

log = logging.getLogger(__name__)


def build_mcp_server(toolbox: Toolbox, *, timeout_s: float = 20.0, max_args_chars: int = 2_000) -> Server[Any]:
    """A Server whose tools are the toolbox's specs, each answered by call_tool on a worker thread."""
    listed = [
        types.Tool(
            name=spec.name,
            description=spec.description,
            input_schema=spec.parameters,
            annotations=types.ToolAnnotations(read_only_hint=True, destructive_hint=False),
        )
        for spec in toolbox
    ]

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def answer(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        result: ToolResult = await anyio.to_thread.run_sync(
            lambda: call_tool(toolbox, params.name, arguments, max_args_chars=max_args_chars, timeout_s=timeout_s)
        )
        log.info("mcp tool %s: %s", params.name, result.status)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.text)],
            is_error=result.status in ("error", "refused"),
        )

    return Server(
        "opsbot",
        version="1",
        on_list_tools=list_tools,
        on_call_tool=answer,
        instructions="opsbot's read-only incident tools: metrics, logs, deploys and more.",
    )


def serve_stdio(server: Server[Any]) -> None:
    """Serve one client on stdin/stdout until it disconnects (logs go to stderr)."""

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)
