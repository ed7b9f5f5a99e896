"""Tool observations vs a naive dump of the same data, in tokens, and the time of each call (default scenario).

Run on demand:  .venv/bin/python -m pytest tests/bench/bench_tools.py -s
It prints a table; it asserts only that each tool answered, never a timing.
"""

from __future__ import annotations

import functools
import json
import statistics
import subprocess
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from bot import wiring
from bot.wiring.elastic import es_client
from tests.tools.conftest import tool_settings
from tools.base import Toolbox, call_tool
from tools.deploys.elastic import ElasticsearchDeploys
from tools.deploys.query import DeployTools
from tools.logs.query import ElasticsearchLogs, LogTools
from tools.timerange import iso_z

REPEATS = 5

try:
    from bot.engine.tokens import count_tokens
except ImportError:  # the offline tokenizer is not installed: count characters / 4 instead

    def count_tokens(text: str, encoding: str = "") -> int:
        return len(text) // 4


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    """The last result and the median wall time in ms over REPEATS calls (first call included)."""
    times, result = [], None
    for _ in range(REPEATS):
        started = time.perf_counter()
        result = call()
        times.append((time.perf_counter() - started) * 1000)
    return result, statistics.median(times)


def naive_dumps(sandbox: Any, window: tuple[str, str]) -> dict[str, str]:
    """What a tool that simply returned the backend's data would hand the model."""
    settings = tool_settings(prometheus_url=sandbox.prometheus_url)
    prom = wiring.build_prometheus(settings)
    metrics = wiring.build_metrics_tools(settings)
    series = metrics.series("order", "p99_latency", f"{window[0]}/{window[1]}")
    raw_metrics = prom.query_range(series.promql, series.window.start, series.window.end, f"{series.step_s}s")
    start, end = window
    logs = [
        line
        for line in sandbox.logs_jsonl.read_text().splitlines()
        if '"service": "order"' in line.replace('":"', '": "') and start <= json.loads(line)["@timestamp"] < end
    ]
    git = ["git", "-C", str(sandbox.git_repo)]
    records = subprocess.run(
        [*git, "log", "--all", "-p", f"--since={start}", f"--until={end}"], capture_output=True, text=True
    )
    diff = subprocess.run([*git, "show", "order/v2.8.1"], capture_output=True, text=True)
    return {
        "query_metrics": json.dumps(raw_metrics),
        "query_logs": "\n".join(logs[:100]),
        "query_logs(all matches)": "\n".join(logs),
        "query_deploy_records": records.stdout,
        "query_deploy_diff": diff.stdout,
    }


def test_bench_tool_observations_and_latency(sandbox: Any, es_sandbox: str) -> None:
    at = sandbox.incident_at
    window = (iso_z(at - timedelta(hours=12)), iso_z(at + timedelta(hours=12)))
    calls: dict[str, dict[str, Any]] = {
        "query_metrics": {"service": "order", "metric": "p99_latency", "range": f"{window[0]}/{window[1]}"},
        "query_logs": {"service": "order", "start": window[0], "end": window[1], "limit": 100},
        "query_deploy_records": {"service": "*", "start": window[0], "end": window[1]},
        "query_deploy_diff": {"version": "v2.8.1", "service": "order"},
    }
    local = wiring.build_toolbox(
        tool_settings(prometheus_url=sandbox.prometheus_url, logs_db=sandbox.logs_db, git_repo=sandbox.git_repo)
    )
    es = es_client(es_sandbox, plain_json=True)
    elastic = Toolbox(
        [*LogTools(ElasticsearchLogs(es, "logs-*")).specs(), *DeployTools(ElasticsearchDeploys(es, "deploys")).specs()]
    )
    dumps = naive_dumps(sandbox, window)
    print(f"\n{'tool':24} {'backend':14} {'obs tokens':>10} {'dump tokens':>11} {'ratio':>6} {'median ms':>9}")
    for name, args in calls.items():
        backends = [("local", local)] + ([("elasticsearch", elastic)] if name in elastic else [])
        for backend, box in backends:
            result, ms = timed(functools.partial(call_tool, box, name, args))
            assert result.status == "ok", result.text
            obs, dump = count_tokens(result.text), count_tokens(dumps[name])
            print(f"{name:24} {backend:14} {obs:>10,} {dump:>11,} {obs / dump:>6.1%} {ms:>9.1f}")
    all_logs = count_tokens(dumps["query_logs(all matches)"])
    print(
        f"(all {dumps['query_logs(all matches)'].count(chr(10)) + 1:,} matching log lines as JSON: {all_logs:,} tokens)"
    )
