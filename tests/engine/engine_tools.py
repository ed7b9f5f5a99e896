"""Small, deterministic SRE-flavoured tools for the engine's tests (a test-only toolbox built with tools.base.tool).

The metrics, logs and deploys tools return typed data and the text rendered from it, as the built-in tools do
(tests/toolresults.py); the others return text only, as an MCP tool does."""

from __future__ import annotations

import time
from typing import Literal

from tests.toolresults import deploys, log_summary, record, result, series
from tools.base import Toolbox, ToolError, ToolResult, tool

SERVICES = ("order", "payment")


def query_metrics(service: str, metric: Literal["p99_latency", "qps", "error_rate"], range: str = "1h") -> ToolResult:
    """Metric series for a service. Use first, for the symptom. Returns a few lines with change points."""
    if service not in SERVICES:
        raise ToolError(f"unknown service {service!r}; known services: {', '.join(SERVICES)}")
    return result(series(service, metric))


def query_logs(service: str, query: str = "", level: str = "", range: str = "1h") -> ToolResult:
    """Log lines of a service. Use after a metric change, around its time. Returns at most 100 lines."""
    if service not in SERVICES:
        raise ToolError(f"unknown service {service!r}; known services: {', '.join(SERVICES)}")
    if query == "nothing":
        return ToolResult("no_data", f"no log lines for {service} matching {query!r} in {range}")
    return result(log_summary(service))


def query_deploy_records(service: str, range: str = "24h") -> ToolResult:
    """Deploys of a service. Use to find a change just before a metric change."""
    return result(deploys(record(service=service, summary="raise hikari.maximumPoolSize 50 -> 200"), service=service))


def dump_logs(lines: int) -> str:
    """Many numbered log lines (to test observation truncation)."""
    return "\n".join(f"15:{i % 60:02d}:00 INFO line {i} " + "x" * 60 for i in range(lines))


def slow_check(seconds: float) -> str:
    """Sleeps, then answers (to test the time budget)."""
    time.sleep(seconds)
    return f"slept {seconds} s"


def engine_toolbox() -> Toolbox:
    return Toolbox(tool(f) for f in (query_metrics, query_logs, query_deploy_records, dump_logs, slow_check))
