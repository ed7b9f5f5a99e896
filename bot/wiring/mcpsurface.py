"""`opsbot mcp`: opsbot's own tools (never the ones it mounts from other MCP servers) served over stdio."""

from __future__ import annotations

from bot.config import Settings
from bot.safety.redact import redact
from bot.wiring.core import build_tool_specs
from tools.base import Toolbox


def build_served_toolbox(settings: Settings) -> Toolbox:
    """The tools `opsbot mcp` offers: settings.mcp.serve_tools (empty = all of opsbot's own), redacted."""
    own = settings.model_copy(update={"mcp": settings.mcp.model_copy(update={"servers": []})})
    wanted = set(settings.mcp.serve_tools)
    specs = [s for s in build_tool_specs(own) if not wanted or s.name in wanted]
    return Toolbox(specs, redact=redact)


def serve_mcp(settings: Settings) -> None:
    """Serve until the client disconnects; every call runs under the configured tool timeout."""
    from bot.mcpserver.server import build_mcp_server, serve_stdio  # the mcp package loads only for `opsbot mcp`

    server = build_mcp_server(
        build_served_toolbox(settings),
        timeout_s=settings.agent.tool_timeout_s,
        max_args_chars=settings.agent.max_args_chars,
    )
    serve_stdio(server)
