"""Investigations for the engine benches.

Two kinds: the real tools (catalogue descriptions, schemas and observations exactly as production sends them)
against the sandbox's Prometheus, SQLite logs and git deploy repo; and synthetic tools whose raw, unsummarised
output (log lines, every point, whole diffs) stands in for a backend that returns too much.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bot import wiring
from bot.config import DeploysSettings, LogsSettings, PrometheusSettings, Settings
from tools.base import Toolbox, tool

Investigation = list[tuple[str, str, dict[str, Any]]]


def query_metrics(service: str, metric: str, range: str = "1h") -> str:
    """Every point of a series plus a change line (about 1.5 KB; the real tool sends ~0.4 KB of statistics)."""
    points = "\n".join(
        f"  15:{m:02d}  {212 + (m > 5) * 968 + m % 7} ms" for m in builtins.range(0, 60, 2)
    )  # `range` is the tool argument here
    return (
        f"{service} {metric} {range} (30 points, step 2m)\nmin 212 ms · median 1,180 ms · max 1,224 ms\n"
        f"change: 15:05 212 ms -> 1,180 ms (x5.6)\n{points}"
    )


def logs_tool(log_lines: int) -> Callable[..., str]:
    """query_logs answering `log_lines` raw lines and a stack trace, unclustered (100 lines: about 22 KB)."""

    def query_logs(service: str, query: str = "", level: str = "", range: str = "1h") -> str:
        """Log lines of a service around an incident."""
        lines = [
            f"2026-11-28T15:{5 + i // 20:02d}:{i % 60:02d}Z ERROR {service} host=pod-{i % 4} trace={i:08x} "
            f"com.zaxxer.hikari.pool.HikariPool - HikariPool-1 - Connection is not available, request timed out "
            f"after 30000ms (total={180 + i % 20}, active=200, idle=0, waiting={i})"
            for i in builtins.range(log_lines)
        ]
        stack = "\n".join(
            f"    at com.shop.order.repo.OrderRepository.find{i}(OrderRepository.java:{40 + i})"
            for i in builtins.range(12)
        )
        half = log_lines // 2
        head = f"{log_lines} of 1,843 lines ({level or 'all levels'}, {range})"
        return "\n".join([head, *lines[:half], stack, *lines[half:]])

    return query_logs


def query_deploy_records(service: str, range: str = "24h") -> str:
    """A few deploys (about 0.6 KB)."""
    return "\n".join(
        f"{t} {service}/v2.8.{n} by dev{n}: {msg}"
        for t, n, msg in (
            ("15:02", 1, "raise hikari.maximumPoolSize"),
            ("09:40", 0, "bump client lib"),
            ("yesterday 17:10", 9, "feature flag cleanup"),
        )
    )


def query_deploy_diff(version: str, service: str) -> str:
    """A unified diff of the service folder (about 4 KB)."""
    body = "\n".join(f" unchanged.setting.{i}: value-{i}" for i in range(80))
    return (
        f"diff {service}/{version}\n--- a/services/{service}/application.yaml\n+++ b/services/{service}/"
        f"application.yaml\n@@ -1,90 +1,90 @@\n-  hikari.maximumPoolSize: 50\n+  hikari.maximumPoolSize: 200\n{body}"
    )


def bench_toolbox(log_lines: int = 100) -> Toolbox:
    """Four synthetic tools with raw output; `log_lines` sets how heavy the log observations are."""
    funcs = (query_metrics, logs_tool(log_lines), query_deploy_records, query_deploy_diff)
    return Toolbox(tool(f) for f in funcs)


def sandbox_toolbox(prometheus_url: str, logs_db: Path, git_repo: Path) -> Toolbox:
    """Every production tool, built by wiring over the sandbox's backends (SQLite logs, git deploys)."""
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        prometheus=PrometheusSettings(url=prometheus_url, timeout_s=5.0),
        logs=LogsSettings(backend="sqlite", sqlite_path=logs_db),
        deploys=DeploysSettings(source="git", git_repo=git_repo),
    )
    return wiring.build_toolbox(settings)


def sandbox_investigation(incident_at: datetime) -> Investigation:
    """The hikari-pool diagnosis an on-call engineer would run: 7 tool steps, windows around the incident."""
    iso = lambda at: at.strftime("%Y-%m-%dT%H:%MZ")  # noqa: E731
    window = f"{iso(incident_at - timedelta(hours=1))}/{iso(incident_at + timedelta(hours=1))}"
    start, end = iso(incident_at - timedelta(minutes=30)), iso(incident_at + timedelta(minutes=60))
    return [
        (
            "Symptom first: order p99 around the reported time.",
            "query_metrics",
            {"service": "order", "metric": "p99_latency", "range": window},
        ),
        (
            "p99 jumped about x6 at 15:07. What does order log as errors from just before?",
            "query_logs",
            {"service": "order", "level": "ERROR", "start": start, "end": end},
        ),
        (
            "HikariPool connection timeouts: pool exhausted. Is the DB slow for everyone? payment shares it.",
            "query_metrics",
            {"service": "payment", "metric": "p99_latency", "range": window},
        ),
        (
            "payment is flat, so the DB is not slow globally. Any deploy of order before 15:07?",
            "query_deploy_records",
            {"service": "order", "start": iso(incident_at - timedelta(hours=6)), "end": end},
        ),
        (
            "order v2.8.1 at 15:02 raised the Hikari pool size. What exactly changed?",
            "query_deploy_diff",
            {"version": "v2.8.1", "service": "order"},
        ),
        (
            "maximumPoolSize 50 -> 200. Does the database log connection limits?",
            "query_logs",
            {"service": "orders-db", "start": start, "end": end},
        ),
        (
            "Size the impact: order's error rate over the same window.",
            "query_metrics",
            {"service": "order", "metric": "error_rate", "range": window},
        ),
    ]


# Seven tool steps then the answer: the shape of a real 8-step diagnosis.
INVESTIGATION: Investigation = [
    (
        "Symptom first: order p99 over the last hour.",
        "query_metrics",
        {"service": "order", "metric": "p99_latency", "range": "1h"},
    ),
    (
        "p99 jumped x5.6 at 15:05. Errors in order around then?",
        "query_logs",
        {"service": "order", "level": "ERROR", "range": "1h"},
    ),
    (
        "Pool exhaustion. Is the DB side slow too? Check payment, which shares it.",
        "query_metrics",
        {"service": "payment", "metric": "p99_latency", "range": "1h"},
    ),
    (
        "Payment is fine, so the DB is not globally slow. Any deploy of order before 15:05?",
        "query_deploy_records",
        {"service": "order", "range": "24h"},
    ),
    (
        "v2.8.1 at 15:02 raised the pool size. What exactly changed?",
        "query_deploy_diff",
        {"version": "v2.8.1", "service": "order"},
    ),
    (
        "maximumPoolSize 50 -> 200. Do the DB-side logs show connection limits?",
        "query_logs",
        {"service": "inventory", "level": "ERROR", "range": "1h"},
    ),
    (
        "Check order error rate to size the impact.",
        "query_metrics",
        {"service": "order", "metric": "error_rate", "range": "1h"},
    ),
]
ANSWER = (
    "Root cause: order v2.8.1 (15:02) raised hikari.maximumPoolSize 50 -> 200; the DB's connection limit is hit, "
    "so requests wait for connections. Evidence: p99 212 ms -> 1,180 ms at 15:05; HikariPool timeouts. "
    "Confidence: high."
)
