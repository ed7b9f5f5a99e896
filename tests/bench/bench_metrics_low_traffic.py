"""query_metrics on low-traffic series: false onsets over a day of noise, with and without the catalogue's counts.

The detection benchmark (bench_detection.py) feeds the detectors directly; this one goes through the tool, so it
measures what the model reads: the catalogue entry's `counts` template is read at the series' step, turned into
requests per point and passed to every detector (change, spike, trend, sawtooth). "values" is the tool as it was
before counts (the template has none); "counts" is a template with one. A FakePrometheus answers each range query
from one synthetic pod (tests/bench/detection_series.py: Poisson requests at 0.1-2 per second over a +-40 % day, a
p99 of the bucket's request latencies or the bucket's error ratio). An onset is a `change:` or `spike:` line; trend
and sawtooth lines are counted apart.

Run: .venv/bin/python -m pytest -q -s tests/bench/bench_metrics_low_traffic.py
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from tests.bench import detection_series as series
from tools.metrics.query import MetricQuery, MetricsTools
from tools.timerange import iso_z

RUNS = 50
RATES = (0.1, 0.5, 2.0)  # requests a second, one pod
NEAR = 10  # points of 5 minutes: how close a change must be to the true onset to count as found
COUNTS = "sum(rate(requests_total{$label=$service}[5m]))"
KINDS = {"p99": MetricQuery('p99{$label="$service"}', "s"), "errors": MetricQuery('ratio{$label="$service"}', "ratio")}
RANGE = f"{iso_z(series.T0)}/{iso_z(series.T0 + timedelta(days=1))}"


class FakePrometheus:
    """Answers a range query from one synthetic series: the counts template gets its requests per second, any other
    query its values; label queries name one service."""

    def __init__(self, times: Sequence[datetime], values: Sequence[float], counts: Sequence[float]) -> None:
        self.values = list(zip(times, values, strict=True))
        self.rates = [(t, c / series.BUCKET_S) for t, c in zip(times, counts, strict=True)]

    def query_range(self, promql: str, start: datetime, end: datetime, step: str) -> list[dict[str, Any]]:
        wanted = self.rates if promql.startswith("sum(rate(requests_total") else self.values
        values = [[t.timestamp(), str(v)] for t, v in wanted if start <= t <= end]
        return [{"metric": {"service": "pod"}, "values": values}] if values else []

    def label_values(self, label: str, match: str = "", since: datetime | None = None) -> list[str]:
        return ["pod"]

    def label_names(self, match: str = "", since: datetime | None = None) -> list[str]:
        return ["service"]


def read(kind: str, counted: bool, rate: float, factor: float, rng: np.random.Generator) -> tuple[int, int, bool]:
    """(onsets, trend and sawtooth lines, the true onset found) of one synthetic day through query_metrics."""
    at = int(rng.integers(60, series.N - 60))
    factors = np.where(np.arange(series.N) >= at, factor, 1.0)
    times, values, counts = series.low_traffic(rate, rng, kind, factors)
    query = KINDS[kind]
    entry = MetricQuery(query.promql, query.unit, counts=COUNTS if counted else "")
    end = series.T0 + timedelta(days=1)
    tools = MetricsTools(FakePrometheus(times, values, counts), {"m": entry}, clock=lambda: end)  # type: ignore[arg-type]
    seen = tools.series("pod", "m", RANGE)
    onsets = [c.at for c in seen.changes if c.after > c.before] + [s.start for s in seen.spikes]
    truth = series.TIMES[at]
    found = any(abs((t - truth).total_seconds()) <= NEAR * series.BUCKET_S for t in onsets)
    return len(seen.changes) + len(seen.spikes), len(seen.trends) + (seen.sawtooth is not None), found


def table(kind: str, factor: float) -> None:
    what = "false onsets over a day of noise" if factor == 1.0 else f"a x{factor:g} step found (of {RUNS})"
    print(f"\n{kind}: {what}; columns: requests/s")
    for counted in (False, True):
        cells = []
        for rate in RATES:
            rng = series.generator(f"{kind}/{factor}/{rate}")  # the same days with and without counts
            runs = [read(kind, counted, rate, factor, rng) for _ in range(RUNS)]
            if factor == 1.0:
                cells.append(f"{sum(r[0] for r in runs):>4} onsets, {sum(r[1] for r in runs):>3} trend/saw")
            else:
                cells.append(f"{sum(r[2] for r in runs):>4}/{RUNS} found")
        print(f"  {'counts' if counted else 'values':<7}| " + " | ".join(cells))


def test_bench_query_metrics_on_low_traffic_series_with_and_without_counts():
    started = time.process_time()
    for kind, factor in (("p99", 1.0), ("errors", 1.0), ("p99", 3.0), ("errors", 20.0)):
        table(kind, factor)
    print(f"CPU: {time.process_time() - started:.1f} s for {4 * 2 * len(RATES) * RUNS} days through query_metrics")
