"""Sandbox build and start times per scenario: generate, promtool backfill, git, SQLite, Prometheus ready.

Run on demand:  .venv/bin/python -m pytest tests/bench/bench_sandbox.py -s
It prints a table; it asserts only that each sandbox answered a query, never a timing.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import requests

from bot.sandbox.backends import start_prometheus
from bot.sandbox.data import build_sandbox
from bot.sandbox.scenario import load_scenario, scenario_names
from tests.fakes.backends import free_port


def _rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0]) / 1024


def test_bench_sandbox_build_and_start(tmp_path):
    now = datetime.now(UTC)
    header = f"{'scenario':<22}{'generate':>9}{'backfill':>9}{'git':>6}{'sqlite':>7}{'ready':>7}{'total':>7}"
    rows = [header + f"{'om MB':>7}{'samples':>9}{'logs':>6}{'prom MB':>8}"]
    for name in scenario_names():
        clock = time.perf_counter()
        data = build_sandbox(load_scenario(name), tmp_path / name, now)
        started = time.perf_counter()
        proc = start_prometheus(data.prometheus_data, free_port())
        ready = time.perf_counter() - started
        try:
            query = {"query": "count(count_over_time(http_requests_total[1h]))"}  # a collection gap ends before now
            answer = requests.get(f"{proc.url}/api/v1/query", params=query, timeout=10)
            assert answer.json()["data"]["result"], name
            t = data.timings_s
            samples = sum(1 for line in data.openmetrics_path.open() if not line.startswith("#"))
            logs = sum(1 for _ in data.logs_jsonl.open())
            rows.append(
                f"{name:<22}{t['generate']:>9.2f}{t['backfill']:>9.2f}{t['git']:>6.2f}{t['sqlite']:>7.2f}{ready:>7.2f}"
                f"{time.perf_counter() - clock:>7.2f}{data.openmetrics_path.stat().st_size / 1e6:>7.1f}{samples:>9}"
                f"{logs:>6}{_rss_mb(proc.pid):>8.0f}"
            )
        finally:
            proc.stop()
    print("\n" + "\n".join(rows))
