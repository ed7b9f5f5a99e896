"""opsbot as the client of a real MCP server process (tests/fakes/mcp_server.py), over stdio and streamable HTTP:
the allowlist, redaction, the output cap, the server's errors and a slow tool, all through call_tool."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from mcp import StdioServerParameters

from bot.safety.redact import redact
from bot.sandbox.backends import free_port
from tools.base import Toolbox, call_tool
from tools.mcp.client import MCPConnection, MCPTools
from tools.toolset import Toolset

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = ["list_alerts", "get_oncall", "dump_dashboard", "broken_query", "slow_query"]


def stdio_target() -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "tests.fakes.mcp_server"], cwd=str(ROOT))


@pytest.fixture(scope="module")
def stdio_tools() -> Iterator[MCPTools]:
    connection = MCPConnection(stdio_target(), connect_timeout_s=60)
    yield MCPTools("pager", connection, ALLOWED, timeout_s=10, max_output_chars=500)
    connection.close()


@pytest.fixture(scope="module")
def pager(stdio_tools: MCPTools) -> Toolbox:
    return Toolbox(stdio_tools.specs(), redact=redact)


def test_only_allowlisted_tools_are_mounted_under_the_servers_name(pager: Toolbox) -> None:
    assert pager.names == [f"pager_{name}" for name in ALLOWED]
    result = call_tool(pager, "pager_silence_alert", {"alert": "x"})
    assert result.status == "error" and result.text.startswith("unknown tool 'pager_silence_alert'")


def test_a_remote_tool_answers_through_call_tool(pager: Toolbox) -> None:
    result = call_tool(pager, "pager_list_alerts", {"service": "order", "limit": 2})
    assert result.status == "ok"
    assert result.text.splitlines() == [
        "KubePodCrashLooping order pod order-7d9f-0 (firing since 15:00Z)",
        "KubePodCrashLooping order pod order-7d9f-1 (firing since 15:01Z)",
    ]


def test_the_remote_schema_validates_arguments_before_the_call(pager: Toolbox) -> None:
    result = call_tool(pager, "pager_list_alerts", {"limit": 2})
    assert result.status == "error" and "service: Field required" in result.text
    assert call_tool(pager, "pager_list_alerts", {"service": "a", "bogus": 1}).status == "error"


def test_secrets_in_a_remote_answer_are_redacted(pager: Toolbox) -> None:
    result = call_tool(pager, "pager_get_oncall", {"team": "payments"})
    assert "sk-live-0123456789abcdefABCDEF" not in result.text and "li.wei (primary)" in result.text


def test_a_long_answer_is_cut_with_a_marker(pager: Toolbox) -> None:
    result = call_tool(pager, "pager_dump_dashboard", {"uid": "d1"})
    assert len(result.text) < 600 and result.text.endswith("characters") and "cut at 500 of" in result.text


def test_the_servers_tool_error_is_an_error_observation_in_its_words(pager: Toolbox) -> None:
    result = call_tool(pager, "pager_broken_query", {"expr": "rate("})
    assert result.status == "error"
    assert result.text == (
        "pager broken_query failed: Error executing tool broken_query: "
        "bad_data: parse error at char 3: unexpected 'rate('"
    )


def test_a_slow_remote_tool_times_out_and_the_session_survives(pager: Toolbox) -> None:
    result = call_tool(pager, "pager_slow_query", {"seconds": 30}, timeout_s=1)
    assert result.status == "error" and "timed out after 1 s" in result.text
    assert call_tool(pager, "pager_list_alerts", {"service": "order", "limit": 1}).status == "ok"


def test_check_counts_mounted_tools_and_warns_without_an_allowlist(stdio_tools: MCPTools) -> None:
    ok = Toolset("mcp:pager", True, stdio_tools.specs, stdio_tools.check).check()
    assert (ok.state, ok.detail) == ("ok", f"5 of 6 tools mounted: {', '.join(ALLOWED)}")
    none = MCPTools("pager", stdio_tools.connection, [])
    assert Toolset("mcp:pager", True, none.specs, none.check).check().state == "warn"


def test_a_server_that_cannot_start_fails_its_check() -> None:
    broken = MCPTools(
        "gone", MCPConnection(StdioServerParameters(command="/nonexistent/mcp-server"), connect_timeout_s=10), ["*"]
    )
    status = Toolset("mcp:gone", True, broken.specs, broken.check).check()
    assert status.state == "fail" and "cannot connect to the MCP server /nonexistent/mcp-server" in status.detail


@pytest.fixture(scope="module")
def http_server() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.mcp_server", "http", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            requests.get(url, timeout=1)
            break
        except requests.ConnectionError:
            time.sleep(0.2)
    yield url
    proc.terminate()
    proc.wait(timeout=10)


def test_a_streamable_http_server_is_mounted_the_same_way(http_server: str) -> None:
    connection = MCPConnection(http_server, connect_timeout_s=30)
    try:
        box = Toolbox(MCPTools("dash", connection, ["list_alerts", "get_oncall"], timeout_s=10).specs(), redact=redact)
        assert box.names == ["dash_list_alerts", "dash_get_oncall"]
        result = call_tool(box, "dash_list_alerts", {"service": "payment", "limit": 1})
        assert result == call_tool(box, "dash_list_alerts", {"service": "payment", "limit": 1})
        assert result.text == "KubePodCrashLooping payment pod payment-7d9f-0 (firing since 15:00Z)"
    finally:
        connection.close()
