"""FakeIncidentMCP: a small real MCP server (the mcp package's MCPServer, formerly FastMCP), run as a subprocess.

`python -m tests.fakes.mcp_server` serves over stdio; `... http <port>` over streamable HTTP at /mcp. Its tools
stand in for the long tail opsbot reaches over MCP (an on-call pager, dashboards): one normal answer, one that
leaks a token (opsbot must redact it), one far too long (opsbot must cut it), one that fails, one that sleeps,
and one that writes (opsbot's allowlist must leave it unmounted).
"""

from __future__ import annotations

import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("fake-incident-tools")


@server.tool()
def list_alerts(service: str, limit: int = 5) -> str:
    """Firing alerts of one service, newest first."""
    alerts = [f"KubePodCrashLooping {service} pod {service}-7d9f-{i} (firing since 15:0{i}Z)" for i in range(limit)]
    return "\n".join(alerts)


@server.tool()
def get_oncall(team: str) -> str:
    """Who is on call for a team (the reply carries an API token by mistake)."""
    return f"{team}: li.wei (primary), ana.s (secondary); escalation api_key=sk-live-0123456789abcdefABCDEF"


@server.tool()
def dump_dashboard(uid: str) -> str:
    """A whole dashboard as JSON (very long)."""
    return "{" + ", ".join(f'"panel{i}": "{uid}-{"x" * 40}"' for i in range(2_000)) + "}"


@server.tool()
def broken_query(expr: str) -> str:
    """Always fails, like a backend that rejects the query."""
    raise ToolError(f"bad_data: parse error at char 3: unexpected {expr!r}")


@server.tool()
def slow_query(seconds: float) -> str:
    """Answers after `seconds`."""
    time.sleep(seconds)
    return "done"


@server.tool()
def silence_alert(alert: str) -> str:
    """Silences an alert (a write: must never be mounted by a read-only bot)."""
    return f"silenced {alert}"


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
