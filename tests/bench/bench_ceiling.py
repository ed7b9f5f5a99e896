"""What reading a histogram's top finite bucket costs a latency query, and doctor's meaning check on the plain stack.

Run on demand:  .venv/bin/python -m pytest tests/bench/bench_ceiling.py -s
It prints the median of query_metrics (p99, 3 h) per service, the median of the bucket lookup alone, and doctor's
metric check; it asserts only that the capped services read as capped, never a timing.
"""

from __future__ import annotations

import statistics
import time
from datetime import UTC, datetime, timedelta

from bot import wiring
from bot.cli.tomlfile import config_toml
from bot.config import Settings
from bot.wiring.meaning import check_metrics_meaning
from tests.stacks.plain import build_plain_stack, start_plain_stack
from tools.metrics.ceiling import histogram_read, top_finite_bucket

RUNS = 20


def _median_ms(run, runs: int = RUNS) -> float:
    times = []
    for _ in range(runs):
        clock = time.perf_counter()
        run()
        times.append((time.perf_counter() - clock) * 1000)
    return statistics.median(times)


def test_bench_ceiling(tmp_path):
    now = datetime.now(UTC)
    proc = start_plain_stack(build_plain_stack(tmp_path, now))
    try:
        findings = wiring.discover_stack(Settings(_env_file=None), wiring.StackOptions(proc.url))  # type: ignore[call-arg]
        (tmp_path / "opsbot.toml").write_text(config_toml(findings, ["bench"]))
        settings = Settings(_env_file=None, config_file=tmp_path / "opsbot.toml")  # type: ignore[call-arg]
        tools = wiring.build_metrics_tools(settings)
        rows = [f"{'service':<14}{'query ms':>9}{'capped':>8}"]
        for service in ("cart", "checkout-api", "search"):
            capped = tools.series(service, "p99_latency", "3h").ceiling is not None
            rows.append(
                f"{service:<14}{_median_ms(lambda s=service: tools.series(s, 'p99_latency', '3h')):>9.1f}{capped!s:>8}"
            )
            assert capped == (service != "cart")
        read = histogram_read(tools.series("cart", "p99_latency", "3h").promql)
        assert read is not None
        lookup = _median_ms(lambda: top_finite_bucket(tools.client, read, now - timedelta(hours=3)))
        doctor = _median_ms(lambda: check_metrics_meaning(settings), runs=5)
    finally:
        proc.stop()
    print("\n" + "\n".join(rows) + f"\ntop-bucket lookup alone: {lookup:.1f} ms; doctor metric check: {doctor:.0f} ms")
