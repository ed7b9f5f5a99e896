"""A real MCP client (the mcp package's Client) calling `opsbot mcp` as a subprocess, over the sandbox's backends."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[2]
OPSBOT = Path(sys.executable).with_name("opsbot")


def opsbot_mcp(sandbox: Any, tmp_path: Path, **extra: str) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPSBOT_", "OPENAI_"))}
    env.update(
        {
            "OPSBOT_PROMETHEUS__URL": sandbox.prometheus_url,
            "OPSBOT_LOGS__SQLITE_PATH": str(sandbox.logs_db),
            "OPSBOT_DEPLOYS__GIT_REPO": str(sandbox.git_repo),
            "OPSBOT_TOPOLOGY": '{"order": ["payment", "orders-db"]}',
            "OPSBOT_RUNBOOKS__ENABLED": "true",
            "OPSBOT_RUNBOOKS__PATH": str(ROOT / "bot" / "sandbox" / "runbooks"),
            "OPSBOT_STORE__SQLITE_PATH": str(tmp_path / "traces.db"),
            **extra,
        }
    )
    return StdioServerParameters(command=str(OPSBOT), args=["mcp"], env=env, cwd=str(tmp_path))


def session(params: StdioServerParameters, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[Any], list[Any]]:
    async def run() -> tuple[list[Any], list[Any]]:
        async with Client(params) as client:
            tools = (await client.list_tools()).tools
            results = [await client.call_tool(name, args) for name, args in calls]
            return tools, results

    return asyncio.run(run())


def test_an_mcp_client_lists_and_calls_opsbots_tools(sandbox: Any, tmp_path: Path) -> None:
    start = (sandbox.incident_at.replace(minute=0)).strftime("%Y-%m-%dT%H:%MZ")
    tools, results = session(
        opsbot_mcp(sandbox, tmp_path),
        [
            ("query_deploy_records", {"service": "order", "range": "7d"}),
            ("query_logs", {"service": "order", "level": "ERROR", "start": start, "range": "2h", "limit": 3}),
            ("search_runbooks", {"query": "HikariPool Connection is not available", "service": "order"}),
            ("query_metrics", {"service": "nope", "metric": "p99_latency"}),
        ],
    )
    names = [t.name for t in tools]
    assert names == [
        "query_metrics",
        "list_services",
        "query_logs",
        "query_deploy_records",
        "query_deploy_diff",
        "find_changes",
        "calculate",
        "search_runbooks",
    ]
    assert all(t.annotations.read_only_hint for t in tools)
    records, logs, runbook, refused = results
    assert not records.is_error and "order/v2.8.1 (from v2.8.0)" in records.content[0].text
    assert "HikariPool-1 - Connection is not available" in logs.content[0].text
    assert "Runbook: order-latency.md § Connection pool" in runbook.content[0].text
    assert refused.is_error and "unknown service 'nope'" in refused.content[0].text


def test_serve_tools_limits_what_opsbot_mcp_offers_and_mounted_tools_are_never_served(
    sandbox: Any, tmp_path: Path
) -> None:
    pager = '[{"name": "pager", "command": "/nonexistent/mcp-server", "allowed_tools": ["*"]}]'
    params = opsbot_mcp(
        sandbox,
        tmp_path,
        OPSBOT_MCP__SERVE_TOOLS='["query_logs", "calculate", "pager_list_alerts"]',
        OPSBOT_MCP__SERVERS=pager,
    )
    tools, results = session(params, [("query_deploy_records", {"service": "order"})])
    assert [t.name for t in tools] == ["query_logs", "calculate"]
    assert results[0].is_error and "unknown tool 'query_deploy_records'" in results[0].content[0].text
