"""A stack's metrics as each instrumentation exposes them, in OpenMetrics for `promtool tsdb create-blocks-from`.

The per-minute signals (p99, requests/s, error ratio, CPU, memory) come from bot/sandbox/signals.py; each style
below writes them under its own names, labels, units and shapes: Micrometer (with and without a histogram), the Go
client (promhttp), a Java simpleclient summary, OpenTelemetry, ingress-nginx and Istio (milliseconds). A service
with a connection pool also gets its pool gauges, which saturate with its latency.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from bot.sandbox.openmetrics import latency_cdf, median_s_from_p99_ms
from bot.sandbox.signals import ServiceSignals, seed_for

BUCKETS_S = (0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0)
Labels = dict[str, str]


@dataclass(frozen=True)
class Style:
    """How one service's metrics are written: the convention, the label that names it, what it runs."""

    convention: str  # micrometer | micrometer-max | promhttp | summary | otel | nginx | istio
    label: str
    pool_size: int = 0  # a connection pool of this size (Hikari, or the OpenTelemetry pool metrics)
    java: bool = False  # JVM metrics (OpenTelemetry's Java agent)


class Families:
    """OpenMetrics families, each written contiguously, one sample a minute from `start`."""

    def __init__(self, start: datetime) -> None:
        self.t0 = int(start.timestamp())
        self.families: dict[str, tuple[str, list[str]]] = {}

    def add(self, family: str, kind: str, sample: str, labels: Labels, values: Sequence[float]) -> None:
        text = ",".join(f'{k}="{v}"' for k, v in labels.items())
        lines = self.families.setdefault(family, (kind, []))[1]
        lines.extend(f"{sample}{{{text}}} {round(v, 4)} {self.t0 + 60 * i}\n" for i, v in enumerate(values))

    def write(self, path: Path) -> int:
        samples = 0
        with path.open("w", encoding="utf-8") as out:
            for family, (kind, lines) in self.families.items():
                out.write(f"# TYPE {family} {kind}\n")
                out.writelines(lines)
                samples += len(lines)
            out.write("# EOF\n")
        return samples


def cumulative(per_minute: Sequence[float]) -> list[float]:
    total, out = 0.0, []
    for value in per_minute:
        total += value
        out.append(total)
    return out


def requests_per_minute(sig: ServiceSignals) -> tuple[list[float], list[float]]:
    """(succeeded, failed) requests in each minute."""
    counts = [q * 60 for q in sig.values["qps"]]
    failed = [n * min(r, 1.0) for n, r in zip(counts, sig.values["error_ratio"], strict=True)]
    return [n - f for n, f in zip(counts, failed, strict=True)], failed


def histogram(
    families: Families, family: str, labels: Labels, sig: ServiceSignals, counts: Sequence[float], scale: float = 1.0
) -> None:
    """A latency histogram of `counts` requests a minute at the service's p99; `scale` 1000 writes milliseconds."""
    medians = [median_s_from_p99_ms(p) for p in sig.values["p99_ms"]]
    for bound in BUCKETS_S:
        per_minute = [n * latency_cdf(bound, m) for n, m in zip(counts, medians, strict=True)]
        families.add(
            family, "histogram", f"{family}_bucket", {**labels, "le": str(bound * scale)}, cumulative(per_minute)
        )
    families.add(family, "histogram", f"{family}_bucket", {**labels, "le": "+Inf"}, cumulative(counts))
    mean = math.exp(0.18)  # the log-normal's mean over its median (sigma 0.6)
    sums = [n * m * mean * scale for n, m in zip(counts, medians, strict=True)]
    families.add(family, "histogram", f"{family}_count", labels, cumulative(counts))
    families.add(family, "histogram", f"{family}_sum", labels, cumulative(sums))


def pool_gauges(
    sig: ServiceSignals, base_p99: float, size: int, shrunk_to: int, shrunk_at: int
) -> dict[str, list[float]]:
    """Pending requests, active and max connections: the pool saturates as the latency climbs."""
    rng = random.Random(seed_for("pool", sig.service))
    sizes = [float(shrunk_to if shrunk_to and i >= shrunk_at else size) for i in range(sig.minutes)]
    ratio = [p / base_p99 for p in sig.values["p99_ms"]]
    pending = [0.3 + max(0.0, r - 1.3) * 2.5 + abs(rng.gauss(0, 0.1)) for r in ratio]
    active = [s if r > 2 else s * (0.25 + rng.random() * 0.05) for s, r in zip(sizes, ratio, strict=True)]
    return {"pending": pending, "active": active, "max": sizes}


def micrometer(families: Families, sig: ServiceSignals, style: Style, pool: dict[str, list[float]] | None) -> None:
    base = {style.label: sig.service, "job": "kubernetes-pods", "namespace": "shop"}
    ok, failed = requests_per_minute(sig)
    for status, outcome, counts in (("200", "SUCCESS", ok), ("500", "SERVER_ERROR", failed)):
        labels = {**base, "exception": "None", "method": "GET", "outcome": outcome, "status": status, "uri": "/api"}
        if style.convention == "micrometer":
            histogram(families, "http_server_requests_seconds", labels, sig, counts)
        else:  # no histogram published: count, sum and max only
            sums = [n * median_s_from_p99_ms(p) * 1.2 for n, p in zip(counts, sig.values["p99_ms"], strict=True)]
            families.add(
                "http_server_requests_seconds",
                "summary",
                "http_server_requests_seconds_count",
                labels,
                cumulative(counts),
            )
            families.add(
                "http_server_requests_seconds", "summary", "http_server_requests_seconds_sum", labels, cumulative(sums)
            )
        peak = [p / 1000 * 1.4 for p in sig.values["p99_ms"]]
        families.add("http_server_requests_seconds_max", "gauge", "http_server_requests_seconds_max", labels, peak)
    families.add("process_cpu_usage", "gauge", "process_cpu_usage", base, [c / 4 for c in sig.values["cpu_cores"]])
    heap = {**base, "area": "heap", "id": "G1 Old Gen"}
    families.add(
        "jvm_memory_used_bytes",
        "gauge",
        "jvm_memory_used_bytes",
        heap,
        [m * 0.6 * 2**20 for m in sig.values["memory_mb"]],
    )
    gc = {**base, "action": "end of minor GC", "cause": "G1 Evacuation Pause", "gc": "G1 Young Generation"}
    families.add("jvm_gc_pause_seconds", "summary", "jvm_gc_pause_seconds_count", gc, cumulative([6.0] * sig.minutes))
    families.add("jvm_gc_pause_seconds", "summary", "jvm_gc_pause_seconds_sum", gc, cumulative([0.6] * sig.minutes))
    families.add(
        "executor_queued_tasks",
        "gauge",
        "executor_queued_tasks",
        {**base, "name": "applicationTaskExecutor"},
        [0.0] * sig.minutes,
    )
    if pool is not None:
        hikari = {**base, "pool": "HikariPool-1"}
        for key in ("pending", "active", "max"):
            families.add(f"hikaricp_connections_{key}", "gauge", f"hikaricp_connections_{key}", hikari, pool[key])


def promhttp(families: Families, sig: ServiceSignals, style: Style, pool: dict[str, list[float]] | None) -> None:
    base = {style.label: sig.service, "job": "kubernetes-pods", "namespace": "shop"}
    ok, failed = requests_per_minute(sig)
    for code, counts in (("200", ok), ("500", failed)):
        histogram(
            families,
            "http_request_duration_seconds",
            {**base, "code": code, "handler": "/items", "method": "get"},
            sig,
            counts,
        )
        families.add(
            "http_requests",
            "counter",
            "http_requests_total",
            {**base, "code": code, "method": "get"},
            cumulative(counts),
        )
    cpu = cumulative([c * 60 for c in sig.values["cpu_cores"]])
    families.add("process_cpu_seconds", "counter", "process_cpu_seconds_total", base, cpu)
    rss = [m * 2**20 for m in sig.values["memory_mb"]]
    families.add("process_resident_memory_bytes", "gauge", "process_resident_memory_bytes", base, rss)
    for quantile in ("0", "0.5", "1"):
        families.add(
            "go_gc_duration_seconds",
            "summary",
            "go_gc_duration_seconds",
            {**base, "quantile": quantile},
            [0.0004] * sig.minutes,
        )
    families.add(
        "go_gc_duration_seconds", "summary", "go_gc_duration_seconds_count", base, cumulative([30.0] * sig.minutes)
    )
    families.add(
        "go_gc_duration_seconds", "summary", "go_gc_duration_seconds_sum", base, cumulative([0.012] * sig.minutes)
    )
    families.add("go_goroutines", "gauge", "go_goroutines", base, [140.0] * sig.minutes)


def summary(families: Families, sig: ServiceSignals, style: Style, pool: dict[str, list[float]] | None) -> None:
    """A Java simpleclient service: a summary with client-side quantiles, and `status` on its counter."""
    base = {style.label: sig.service, "job": "recs"}
    ok, failed = requests_per_minute(sig)
    p99 = [p / 1000 for p in sig.values["p99_ms"]]
    families.add(
        "http_request_duration_seconds",
        "summary",
        "http_request_duration_seconds",
        {**base, "quantile": "0.5"},
        [p / 4 for p in p99],
    )
    families.add(
        "http_request_duration_seconds", "summary", "http_request_duration_seconds", {**base, "quantile": "0.99"}, p99
    )
    families.add(
        "http_request_duration_seconds",
        "summary",
        "http_request_duration_seconds_count",
        base,
        cumulative([a + b for a, b in zip(ok, failed, strict=True)]),
    )
    for status, counts in (("200", ok), ("503", failed)):
        families.add("http_requests", "counter", "http_requests_total", {**base, "status": status}, cumulative(counts))


def otel(families: Families, sig: ServiceSignals, style: Style, pool: dict[str, list[float]] | None) -> None:
    base = {style.label: sig.service, "job": f"shop/{sig.service}", "service_namespace": "shop"}
    ok, failed = requests_per_minute(sig)
    for code, counts in (("200", ok), ("500", failed)):
        labels = {**base, "http_request_method": "POST", "http_response_status_code": code, "http_route": "/api"}
        histogram(families, "http_server_request_duration_seconds", labels, sig, counts)
    if style.java:
        families.add(
            "jvm_cpu_recent_utilization_ratio",
            "gauge",
            "jvm_cpu_recent_utilization_ratio",
            base,
            [c / 4 for c in sig.values["cpu_cores"]],
        )
        heap = {**base, "jvm_memory_pool_name": "G1 Old Gen", "jvm_memory_type": "heap"}
        families.add(
            "jvm_memory_used_bytes",
            "gauge",
            "jvm_memory_used_bytes",
            heap,
            [m * 0.6 * 2**20 for m in sig.values["memory_mb"]],
        )
        families.add(
            "jvm_gc_duration_seconds",
            "summary",
            "jvm_gc_duration_seconds_count",
            base,
            cumulative([6.0] * sig.minutes),
        )
        families.add(
            "jvm_gc_duration_seconds", "summary", "jvm_gc_duration_seconds_sum", base, cumulative([0.5] * sig.minutes)
        )
    else:
        families.add(
            "process_cpu_time_seconds",
            "counter",
            "process_cpu_time_seconds_total",
            base,
            cumulative([c * 60 for c in sig.values["cpu_cores"]]),
        )
    if pool is not None:
        labels = {**base, "pool_name": "payments-db"}
        families.add(
            "db_client_connections_pending_requests",
            "gauge",
            "db_client_connections_pending_requests",
            labels,
            pool["pending"],
        )


def nginx(families: Families, sig: ServiceSignals, style: Style, pool: dict[str, list[float]] | None) -> None:
    base = {style.label: sig.service, "ingress": sig.service, "namespace": "shop", "host": "shop.example.com"}
    ok, failed = requests_per_minute(sig)
    for status, counts in (("200", ok), ("502", failed)):
        labels = {**base, "method": "GET", "path": "/", "status": status}
        histogram(families, "nginx_ingress_controller_request_duration_seconds", labels, sig, counts)
        families.add(
            "nginx_ingress_controller_requests",
            "gauge",
            "nginx_ingress_controller_requests",
            labels,
            cumulative(counts),
        )


def istio(families: Families, sig: ServiceSignals, style: Style, pool: dict[str, list[float]] | None) -> None:
    ok, failed = requests_per_minute(sig)
    for reporter in ("source", "destination"):
        base = {style.label: sig.service, "destination_workload": f"{sig.service}-v1", "reporter": reporter}
        for code, counts in (("200", ok), ("503", failed)):
            labels = {**base, "response_code": code, "source_workload": "productpage-v1"}
            histogram(families, "istio_request_duration_milliseconds", labels, sig, counts, scale=1000.0)
            families.add("istio_requests", "counter", "istio_requests_total", labels, cumulative(counts))


WRITERS: dict[str, Callable[[Families, ServiceSignals, Style, dict[str, list[float]] | None], None]] = {
    "micrometer": micrometer,
    "micrometer-max": micrometer,
    "promhttp": promhttp,
    "summary": summary,
    "otel": otel,
    "nginx": nginx,
    "istio": istio,
}
