"""OpenMetrics text for `promtool tsdb create-blocks-from openmetrics` from per-minute signals.

Histogram bucket counts come from the latency distribution's CDF (one erf per bucket per minute), not from
simulated observations: the notes measured 0.07 s for a day of two services this way, 5.7 s the other way.
Counters are cumulative sums rounded once, so they are monotone by construction; timestamps are seconds.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from bot.sandbox.exporters.families import exporter_families
from bot.sandbox.exporters.text import Family, Target, cumulative, pod_targets
from bot.sandbox.scenario import Scenario
from bot.sandbox.signals import ServiceSignals

# Neighbouring bounds at most 1.5x apart from 1 ms to 60 s keep histogram_quantile's linear interpolation of a
# p99 within 10 % of the scenario's value. Wider gaps misread the fast services: with nothing between 10 and
# 25 ms a database's 12 ms p99 read as ~18 ms, and as 14-22 ms under its own 15 % noise (a p99 just above a
# bound swings with it), while its x1.54 wobble to 18.5 ms read as x1.3; a 2 ms cache read as 5 ms, a 1.5 ms one as
# 1.8 ms.
BUCKETS_S = (
    0.001,
    0.0015,
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
    15.0,
    20.0,
    30.0,
    45.0,
    60.0,  # a client's 30 s timeout reads as 30 s, not as the 10 s bound
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


def write_openmetrics(signals: list[ServiceSignals], path: Path, scenario: Scenario | None = None) -> int:
    """Write every family for every service to `path`; return the number of samples written.

    With the scenario, per-pod services write their pods' series and the opt-in families follow (the exporters)."""
    samples = 0
    families = itertools.chain(_families(signals), exporter_families(scenario, signals) if scenario else ())
    with path.open("w", encoding="utf-8") as out:
        for family, kind, series in families:  # each family's series are written before the next family is made
            written = False
            for lines in series:
                if lines and not written:
                    out.write(f"# TYPE {family} {kind}\n")
                    written = True
                out.write("".join(lines))
                samples += len(lines)
        out.write("# EOF\n")
    return samples


def _families(signals: list[ServiceSignals]) -> Iterator[Family]:
    targets = [(sig, t) for sig in signals for t in pod_targets(sig)]
    yield "http_requests", "counter", (s for _, t in targets for s in _request_series(t))
    yield "http_request_duration_seconds", "histogram", (s for _, t in targets for s in _histogram_series(t))
    yield (
        "process_cpu_seconds",
        "counter",
        (
            t.lines("process_cpu_seconds_total", _cumulative([c * 60 for c in _served(t, "cpu_cores")]))
            for _, t in targets
        ),
    )
    yield (
        "process_resident_memory_bytes",
        "gauge",
        (
            t.lines("process_resident_memory_bytes", [round(m * 2**20) for m in t.values["memory_mb"]])
            for _, t in targets
        ),
    )
    yield (
        "kube_pod_container_status_restarts",
        "counter",
        (_restart_lines(sig, t) for sig, t in targets),
    )
    yield "up", "gauge", (_up_lines(sig, t) for sig, t in targets if sig.up or sig.pods)


def _restart_lines(sig: ServiceSignals, target: Target) -> list[str]:
    if not sig.pods:
        return target.lines("kube_pod_container_status_restarts_total", sig.restarts)
    return target.lines("kube_pod_container_status_restarts_total", target.restarts, always=True, container=sig.service)


def _up_lines(sig: ServiceSignals, target: Target) -> list[str]:
    if not sig.pods:
        return target.lines("up", sig.up)
    return target.lines("up", [int(ok) for ok in target.scraped or ()], always=True)


def _served(target: Target, metric: str) -> list[float]:
    """A per-minute value where its target was scraped, 0 elsewhere (a counter does not grow while nobody serves)."""
    values = target.values[metric]
    return [v if target.scraped is None or target.scraped[i] else 0.0 for i, v in enumerate(values)]


def _cumulative(per_minute: list[float], digits: int = 0) -> list[float] | list[int]:
    return cumulative(per_minute, digits)


def _request_series(target: Target) -> Iterator[list[str]]:
    counts = [q * 60 for q in _served(target, "qps")]
    statuses = {
        code: target.values[f"status_{code}"] for code in ("401", "409", "429") if f"status_{code}" in target.values
    }
    not_found_ratio = target.values.get("status_404")
    not_found_shares = not_found_ratio or [NOT_FOUND_RATIO] * len(counts)
    # 5xx, 4xx and 200 share each minute's requests; no share may go negative or a counter would "reset"
    if not_found_ratio is None and not statuses:
        errors = [n * min(r, 1 - NOT_FOUND_RATIO) for n, r in zip(counts, target.values["error_ratio"], strict=True)]
        ok = [max(0.0, n - e - n * NOT_FOUND_RATIO) for n, e in zip(counts, errors, strict=True)]
        client = {"404": [n * NOT_FOUND_RATIO for n in counts]}
    else:
        client_shares = {"404": not_found_shares, **statuses}
        errors, ok, client = _split(counts, target.values["error_ratio"], client_shares)
    yield target.lines("http_requests_total", _cumulative(ok), status="200")
    yield target.lines("http_requests_total", _cumulative(client["404"]), status="404")
    for status, share in SERVER_ERROR_SPLIT:
        yield target.lines("http_requests_total", _cumulative([e * share for e in errors]), status=status)
    for code in sorted(set(client) - {"404"}):
        yield target.lines("http_requests_total", _cumulative(client[code]), status=code)


def _split(
    counts: list[float], error_ratio: Sequence[float], client_shares: Mapping[str, Sequence[float]]
) -> tuple[list[float], list[float], dict[str, list[float]]]:
    """Each minute's requests as 5xx, 4xx by code and 200; 4xx shrink together when the shares exceed the whole."""
    errors: list[float] = []
    ok: list[float] = []
    client: dict[str, list[float]] = {code: [] for code in client_shares}
    for i, n in enumerate(counts):
        e = n * min(error_ratio[i], 1.0)
        shares = {code: max(0.0, s[i]) for code, s in client_shares.items()}
        room = max(0.0, 1.0 - e / n) if n else 1.0
        scale = min(1.0, room / sum(shares.values())) if sum(shares.values()) else 1.0
        for code, share in shares.items():
            client[code].append(n * share * scale)
        errors.append(e)
        ok.append(max(0.0, n - e - sum(client[code][-1] for code in shares)))
    return errors, ok, client


def _histogram_series(target: Target) -> Iterator[list[str]]:
    counts = [q * 60 for q in _served(target, "qps")]
    medians = [median_s_from_p99_ms(p) for p in target.values["p99_ms"]]
    name = "http_request_duration_seconds"
    for bound in BUCKETS_S:
        per_minute = [n * latency_cdf(bound, m) for n, m in zip(counts, medians, strict=True)]
        yield target.lines(f"{name}_bucket", _cumulative(per_minute), le=str(bound))
    yield target.lines(f"{name}_bucket", _cumulative(counts), le="+Inf")
    mean_factor = math.exp(SIGMA * SIGMA / 2)
    sums = [n * m * mean_factor for n, m in zip(counts, medians, strict=True)]
    yield target.lines(f"{name}_sum", _cumulative(sums, digits=3))
    yield target.lines(f"{name}_count", _cumulative(counts))
