"""OpenMetrics text for `promtool tsdb create-blocks-from openmetrics` from per-minute signals.

Histogram bucket counts come from the latency distribution's CDF (one erf per bucket per minute), not from
simulated observations: the notes measured 0.07 s for a day of two services this way, 5.7 s the other way.
Counters are cumulative sums rounded once, so they are monotone by construction; timestamps are seconds.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

from bot.sandbox.signals import ServiceSignals

# Neighbouring bounds at most 1.5x apart from 2 ms to 10 s keep histogram_quantile's linear interpolation of a
# p99 within 10 % of the scenario's value. Wider gaps misread the fast services: with nothing between 10 and
# 25 ms a database's 12 ms p99 read as ~18 ms, and as 14-22 ms under its own 15 % noise (a p99 just above a
# bound swings with it), while its x1.54 wobble to 18.5 ms read as x1.3; a 2 ms cache read as 5 ms.
BUCKETS_S = (
    0.001,
    0.002,
    0.003,
    0.004,
    0.005,
    0.0075,
    0.01,
    0.015,
    0.02,
    0.025,
    0.035,
    0.05,
    0.075,
    0.1,
    0.15,
    0.2,
    0.25,
    0.3,
    0.4,
    0.5,
    0.75,
    1.0,
    1.25,
    1.5,
    2.0,
    2.5,
    3.0,
    4.0,
    5.0,
    7.5,
    10.0,
)
SIGMA = 0.6  # log-normal shape; p99 = median * exp(2.326 * SIGMA) ~ 4 x median
_Z99 = 2.3263
NOT_FOUND_RATIO = 0.005
SERVER_ERROR_SPLIT = (("500", 0.7), ("503", 0.3))


def median_s_from_p99_ms(p99_ms: float) -> float:
    return p99_ms / 1000 / math.exp(_Z99 * SIGMA)


def latency_cdf(bound_s: float, median_s: float) -> float:
    """P(latency <= bound) for the log-normal with this median."""
    if median_s <= 0:
        return 1.0
    return 0.5 * (1 + math.erf(math.log(bound_s / median_s) / (SIGMA * math.sqrt(2))))


def write_openmetrics(signals: list[ServiceSignals], path: Path) -> int:
    """Write every family for every service to `path`; return the number of samples written."""
    samples = 0
    with path.open("w", encoding="utf-8") as out:
        for family, kind, series in _families(signals):
            out.write(f"# TYPE {family} {kind}\n")
            for lines in series:
                out.write("".join(lines))
                samples += len(lines)
        out.write("# EOF\n")
    return samples


def _families(signals: list[ServiceSignals]) -> Iterator[tuple[str, str, Iterator[list[str]]]]:
    yield "http_requests", "counter", (s for sig in signals for s in _request_series(sig))
    yield "http_request_duration_seconds", "histogram", (s for sig in signals for s in _histogram_series(sig))
    yield (
        "process_cpu_seconds",
        "counter",
        (
            _lines(
                "process_cpu_seconds_total", _labels(sig), sig, _cumulative([c * 60 for c in sig.values["cpu_cores"]])
            )
            for sig in signals
        ),
    )
    yield (
        "process_resident_memory_bytes",
        "gauge",
        (
            _lines(
                "process_resident_memory_bytes", _labels(sig), sig, [round(m * 2**20) for m in sig.values["memory_mb"]]
            )
            for sig in signals
        ),
    )
    yield (
        "kube_pod_container_status_restarts",
        "counter",
        (_lines("kube_pod_container_status_restarts_total", _labels(sig), sig, sig.restarts) for sig in signals),
    )
    yield "up", "gauge", (_lines("up", _labels(sig), sig, sig.up) for sig in signals if sig.up)


def _labels(sig: ServiceSignals, **extra: str) -> str:
    pairs = {"service": sig.service, **extra}
    return ",".join(f'{k}="{v}"' for k, v in pairs.items())


def _lines(name: str, labels: str, sig: ServiceSignals, values: list[float] | list[int]) -> list[str]:
    t0 = int(sig.start.timestamp())
    return [f"{name}{{{labels}}} {v} {t0 + 60 * i}\n" for i, v in enumerate(values)]


def _cumulative(per_minute: list[float], digits: int = 0) -> list[float] | list[int]:
    total, out = 0.0, []
    for x in per_minute:
        total += x
        out.append(total)
    return [round(x, digits) for x in out] if digits else [round(x) for x in out]


def _request_series(sig: ServiceSignals) -> Iterator[list[str]]:
    counts = [q * 60 for q in sig.values["qps"]]
    # 5xx, 404 and 200 share each minute's requests; no share may go negative or a counter would "reset"
    errors = [n * min(r, 1 - NOT_FOUND_RATIO) for n, r in zip(counts, sig.values["error_ratio"], strict=True)]
    ok = [max(0.0, n - e - n * NOT_FOUND_RATIO) for n, e in zip(counts, errors, strict=True)]
    yield _lines("http_requests_total", _labels(sig, status="200"), sig, _cumulative(ok))
    not_found = [n * NOT_FOUND_RATIO for n in counts]
    yield _lines("http_requests_total", _labels(sig, status="404"), sig, _cumulative(not_found))
    for status, share in SERVER_ERROR_SPLIT:
        yield _lines("http_requests_total", _labels(sig, status=status), sig, _cumulative([e * share for e in errors]))


def _histogram_series(sig: ServiceSignals) -> Iterator[list[str]]:
    counts = [q * 60 for q in sig.values["qps"]]
    medians = [median_s_from_p99_ms(p) for p in sig.values["p99_ms"]]
    name = "http_request_duration_seconds"
    for bound in BUCKETS_S:
        per_minute = [n * latency_cdf(bound, m) for n, m in zip(counts, medians, strict=True)]
        yield _lines(f"{name}_bucket", _labels(sig, le=str(bound)), sig, _cumulative(per_minute))
    yield _lines(f"{name}_bucket", _labels(sig, le="+Inf"), sig, _cumulative(counts))
    mean_factor = math.exp(SIGMA * SIGMA / 2)
    sums = [n * m * mean_factor for n, m in zip(counts, medians, strict=True)]
    yield _lines(f"{name}_sum", _labels(sig), sig, _cumulative(sums, digits=3))
    yield _lines(f"{name}_count", _labels(sig), sig, _cumulative(counts))
