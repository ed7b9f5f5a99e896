"""The team stacks of tests/stacks: build and start, `opsbot init`'s metric discovery, doctor's meaning checks.

Run on demand:  .venv/bin/python -m pytest tests/bench/bench_stacks.py -s
It prints a table; it asserts only that discovery found services and doctor found no problem, never a timing.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from bot import wiring
from bot.config import Settings
from bot.wiring.meaning import check_metrics_meaning
from tests.stacks.build import build_stack, discovered_config, start_stack
from tests.stacks.spec import STACKS
from tools.metrics.discovery import discover_metrics


def test_bench_stacks(tmp_path):
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    rows = [f"{'stack':<8}{'build s':>8}{'start s':>8}{'init ms':>8}{'findings':>9}{'doctor ms':>10}{'services':>9}"]
    for name, spec in STACKS.items():
        clock = time.perf_counter()
        built = build_stack(spec, tmp_path / name, now)
        built_s, clock = time.perf_counter() - clock, time.perf_counter()
        stack = start_stack(built)
        started_s = time.perf_counter() - clock
        try:
            clock = time.perf_counter()
            findings = discover_metrics(wiring.build_prometheus(_at(stack.prometheus_url)), now, stack.prometheus_url)
            init_ms = (time.perf_counter() - clock) * 1000
            settings = Settings(_env_file=None, config_file=discovered_config(stack, tmp_path / f"{name}.toml"))  # type: ignore[call-arg]
            clock = time.perf_counter()
            results = check_metrics_meaning(settings)
            doctor_ms = (time.perf_counter() - clock) * 1000
            services = len(wiring.build_metrics_tools(settings).known_services())
        finally:
            stack.stop()
        assert all(r.level == "ok" for r in results), results
        rows.append(
            f"{name:<8}{built_s:>8.1f}{started_s:>8.1f}{init_ms:>8.0f}{len(findings):>9}{doctor_ms:>10.0f}{services:>9}"
        )
    print("\n" + "\n".join(rows))


def _at(url: str) -> Settings:
    return Settings(_env_file=None, prometheus={"url": url})  # type: ignore[call-arg, arg-type]
