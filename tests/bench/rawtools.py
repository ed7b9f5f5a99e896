"""Tools that hand the model what the backend returns, as a first prototype's tools do.

Each answer is recorded once from the sandbox's real backends (Prometheus `query_range` JSON, an Elasticsearch
`_search` response from osmem, `git log` and `git show` of the deploy repo), then replayed: both loops in
bench_naive get byte-identical observations, and a step's CPU is the loop's, not the backend's. Nothing here is
digested: that is the context code's job (bot/engine/context.py, digest.py), and what the bench measures.
"""

from __future__ import annotations

import json
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from string import Template
from typing import Any

from bot.config import default_metric_catalogue
from bot.sandbox.esindex import LOGS_INDEX
from tools.base import Toolbox, tool

# Elasticsearch's default page is 10 hits, what a prototype gets unless it asks (the smallest honest naive payload,
# so the ratio is not flattered); 50 is a page a prototype asks for so the model "sees enough".
LOG_PAGES = (10, 50)
STEP_S = 60
Args = Mapping[str, Any]


def _key(args: Args) -> str:
    return json.dumps(dict(args), sort_keys=True)


def _time(iso: str) -> datetime:
    return datetime.fromisoformat(iso.replace("Z", "+00:00"))


def _get(url: str, body: bytes | None = None) -> str:
    headers = {"Content-Type": "application/json"} if body is not None else {}
    request = urllib.request.Request(url, data=body, headers=headers, method="POST" if body else "GET")
    with urllib.request.urlopen(request, timeout=10) as reply:
        return str(reply.read().decode())


def prometheus_range(prometheus_url: str, args: Args) -> str:
    """The raw `/api/v1/query_range` body for the catalogue's PromQL of (service, metric), 60 s step."""
    promql = Template(default_metric_catalogue()[args["metric"]].promql).substitute(
        label="service", service=args["service"]
    )
    query = urllib.parse.urlencode(
        {
            "query": promql,
            "start": _time(args["start"]).timestamp(),
            "end": _time(args["end"]).timestamp(),
            "step": f"{STEP_S}s",
        }
    )
    return _get(f"{prometheus_url}/api/v1/query_range?{query}")


def elasticsearch_hits(es_url: str, args: Args, size: int) -> str:
    """The raw `_search` response: a page of `size` of the service's log documents in the window, newest first."""
    filters: list[dict[str, Any]] = [
        {"term": {"service": args["service"]}},
        {"range": {"@timestamp": {"gte": args["start"], "lte": args["end"]}}},
    ]
    if args.get("level"):
        filters.append({"term": {"level": args["level"]}})
    body = {"size": size, "sort": [{"@timestamp": "desc"}], "query": {"bool": {"filter": filters}}}
    return _get(f"{es_url}/{LOGS_INDEX}/_search", json.dumps(body).encode())


def git_output(git_repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(git_repo), *args], capture_output=True, text=True, check=True)
    return done.stdout


def record(
    prometheus_url: str, es_url: str, git_repo: Path, calls: Sequence[tuple[str, Args]], log_page: int
) -> dict[str, str]:
    """Tool name + arguments -> the backend's raw answer, fetched now (`log_page` hits per log search)."""
    fetch: dict[str, Callable[[Args], str]] = {
        "query_metrics": lambda a: prometheus_range(prometheus_url, a),
        "query_logs": lambda a: elasticsearch_hits(es_url, a, log_page),
        "query_deploy_records": lambda a: git_output(
            git_repo, "log", "--stat", f"--since={a['start']}", f"--until={a['end']}", "--", f"services/{a['service']}"
        ),
        "query_deploy_diff": lambda a: git_output(git_repo, "show", f"{a['service']}/{a['version']}"),
    }
    return {f"{name} {_key(args)}": fetch[name](args) for name, args in calls}


def raw_toolbox(recorded: dict[str, str]) -> Toolbox:
    """Four tools answering from `recorded`; their docstrings are what a prototype writes."""

    def answer(name: str, args: Args) -> str:
        return recorded.get(f"{name} {_key({k: v for k, v in args.items() if v})}", "no data")

    def query_metrics(service: str, metric: str, start: str, end: str) -> str:
        """Prometheus query_range of a catalogued metric (p99_latency, qps, error_rate, cpu_usage) for a service."""
        return answer("query_metrics", {"service": service, "metric": metric, "start": start, "end": end})

    def query_logs(service: str, start: str, end: str, level: str = "") -> str:
        """Elasticsearch search of a service's logs between start and end (ISO times), newest first."""
        return answer("query_logs", {"service": service, "start": start, "end": end, "level": level})

    def query_deploy_records(service: str, start: str, end: str) -> str:
        """git log of the service's folder in the deploy repo between start and end."""
        return answer("query_deploy_records", {"service": service, "start": start, "end": end})

    def query_deploy_diff(version: str, service: str) -> str:
        """git show of a deploy tag <service>/<version>."""
        return answer("query_deploy_diff", {"version": version, "service": service})

    return Toolbox(tool(f) for f in (query_metrics, query_logs, query_deploy_records, query_deploy_diff))


def raw_investigation(incident_at: datetime) -> list[tuple[str, str, dict[str, Any]]]:
    """The hikari-pool diagnosis over the raw tools: 7 tool steps, windows around the incident."""
    iso = lambda at: at.strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
    start, end = iso(incident_at - timedelta(hours=1)), iso(incident_at + timedelta(hours=1))
    logs_start, logs_end = iso(incident_at - timedelta(minutes=10)), iso(incident_at + timedelta(minutes=30))
    return [
        (
            "Symptom first: order p99 around the reported time.",
            "query_metrics",
            {"service": "order", "metric": "p99_latency", "start": start, "end": end},
        ),
        (
            "p99 jumped at the incident. What does order log as errors from just before?",
            "query_logs",
            {"service": "order", "level": "ERROR", "start": logs_start, "end": logs_end},
        ),
        (
            "HikariPool connection timeouts: pool exhausted. Is the DB slow for everyone? payment shares it.",
            "query_metrics",
            {"service": "payment", "metric": "p99_latency", "start": start, "end": end},
        ),
        (
            "payment is flat, so the DB is not slow globally. Any deploy of order before the jump?",
            "query_deploy_records",
            {"service": "order", "start": iso(incident_at - timedelta(hours=6)), "end": end},
        ),
        (
            "order v2.8.1 just before the jump raised the Hikari pool size. What exactly changed?",
            "query_deploy_diff",
            {"version": "v2.8.1", "service": "order"},
        ),
        (
            "maximumPoolSize 50 -> 200. Does the database log connection limits?",
            "query_logs",
            {"service": "orders-db", "start": logs_start, "end": logs_end},
        ),
        (
            "Size the impact: order's error rate over the same window.",
            "query_metrics",
            {"service": "order", "metric": "error_rate", "start": start, "end": end},
        ),
    ]
