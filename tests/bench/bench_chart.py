"""What a chart costs: drawing the PNG (one panel and two), and the import of matplotlib the first draw pays.

Each chart is drawn from the points a query_metrics step carries (about 120), as the Slack worker draws it. The
first draw in a fresh interpreter pays for importing matplotlib; the runs after it are what every further chart
costs in a serving process. `opsbot --help`'s start-up is bench_startup's (matplotlib is never imported there:
tests/cli/test_startup_imports.py holds that).

Run on demand:  .venv/bin/python -m pytest tests/bench/bench_chart.py -s
Prints numbers; asserts no timing.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from bot.chart.draw import render_png
from bot.chart.spec import chart_spec
from tests.chart.test_chart import looked, metric_step, points, trace_of
from tests.toolresults import WINDOW, at

RUNS = 20
ROOT = Path(__file__).resolve().parents[2]
FIRST_DRAW = """
import time
started = time.perf_counter()
from bot.chart.draw import render_png
from bot.chart.spec import chart_spec
from tests.chart.test_chart import looked, metric_step, trace_of
spec = chart_spec(trace_of(metric_step(looked())))
png = render_png(spec, __import__("datetime").UTC)
print(f"{(time.perf_counter() - started) * 1000:.0f}")
"""


def _timed(draw) -> tuple[list[float], list[float]]:
    """Wall and CPU ms per draw: on a shared machine the CPU time is the chart's own cost, the wall time what a
    thread waits."""
    wall, cpu = [], []
    for _ in range(RUNS):
        started, started_cpu = time.perf_counter(), time.thread_time()
        draw()
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.thread_time() - started_cpu) * 1000)
    return wall, cpu


def test_bench_chart_render() -> None:
    zone = ZoneInfo("Europe/Berlin")
    one = chart_spec(trace_of(metric_step(looked())))
    two = chart_spec(
        trace_of(metric_step(looked()), metric_step(looked("orders-db", "connections")), answer="orders-db")
    )
    day = WINDOW.start - timedelta(hours=23), WINDOW.end
    day_of_minutes = points(*day, 100.0, jump_at=at("15:05"), to=600.0)
    dense = chart_spec(trace_of(metric_step(replace(looked(), chart=day_of_minutes))))
    assert one is not None and two is not None and dense is not None
    run = [sys.executable, "-c", FIRST_DRAW]
    first = [float(subprocess.run(run, cwd=ROOT, capture_output=True, text=True, check=True).stdout) for _ in range(3)]
    print(f"\nfirst chart in a fresh process (imports matplotlib): median {statistics.median(first):.0f} ms of 3")
    for name, spec in (("one panel, 120 points", one), ("two panels", two), ("one panel, a day at 1 min", dense)):
        wall, cpu = _timed(lambda spec=spec: render_png(spec, zone))
        size = len(render_png(spec, zone))
        print(
            f"{name:28s} CPU median {statistics.median(cpu):6.1f} ms  p90 {sorted(cpu)[int(RUNS * 0.9) - 1]:6.1f} ms"
            f" · wall median {statistics.median(wall):6.1f} ms  max {max(wall):6.1f} ms  ({size:,} bytes)"
        )
