"""The runtime's own series: garbage-collection pauses, the JVM heap, and the database connection pool.

A service marked `runtime = "jvm"` exports Micrometer's names (jvm_gc_pause_seconds, jvm_memory_used_bytes,
hikaricp_connections_*); `runtime = "go"` the Go client's go_gc_duration_seconds; a pool of any other service
OpenTelemetry's db_client_connections_*. Per pod for a per-pod service.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from bot.sandbox.exporters.text import Family, Target, carrying, cumulative, gauge, pod_targets
from bot.sandbox.scenario import Scenario
from bot.sandbox.signals import ServiceSignals

_G1 = {"action": "end of minor GC", "cause": "G1 Evacuation Pause", "gc": "G1 Young Generation"}
_HEAP = {"area": "heap", "id": "G1 Old Gen"}
# Go's pause quantiles as multiples of the mean pause (a long-tailed distribution)
_GO_QUANTILES = (("0", 0.3), ("0.25", 0.7), ("0.5", 0.9), ("0.75", 1.2), ("1", 3.0))
MAX_PAUSE_FACTOR = 2.5  # Micrometer's _max: the longest pause of the last window, a few times the mean


def runtime_families(scenario: Scenario, signals: list[ServiceSignals]) -> Iterator[Family]:
    def targets(key: str, runtime: str = "") -> list[Target]:
        return [
            t
            for sig in carrying(scenario, signals, key)
            if not runtime or scenario.service(sig.service).runtime == runtime
            for t in pod_targets(sig)
        ]

    jvm_gc, go_gc = targets("gc_pause_ms", "jvm"), targets("gc_pause_ms", "go")
    yield "jvm_gc_pause_seconds", "summary", (s for t in jvm_gc for s in _gc_summary(t, "jvm_gc_pause_seconds", _G1))
    yield (
        "jvm_gc_pause_seconds_max",
        "gauge",
        (
            t.lines("jvm_gc_pause_seconds_max", gauge(t.values["gc_pause_ms"], MAX_PAUSE_FACTOR / 1000), labels=_G1)
            for t in jvm_gc
        ),
    )
    yield "go_gc_duration_seconds", "summary", (s for t in go_gc for s in _go_summary(t))
    for family, key in (("jvm_memory_used_bytes", "heap_used_mb"), ("jvm_memory_max_bytes", "heap_max_mb")):
        yield family, "gauge", (t.lines(family, gauge(t.values[key], 2.0**20, 0), labels=_HEAP) for t in targets(key))
    yield from _pool_families(scenario, signals)


def _gc_summary(target: Target, name: str, labels: dict[str, str]) -> Iterator[list[str]]:
    counts = target.values["gc_per_minute"]
    pauses = [n * p / 1000 for n, p in zip(counts, target.values["gc_pause_ms"], strict=True)]
    yield target.lines(f"{name}_count", cumulative(counts), labels=labels)
    yield target.lines(f"{name}_sum", cumulative(pauses, digits=4), labels=labels)


def _go_summary(target: Target) -> Iterator[list[str]]:
    for quantile, factor in _GO_QUANTILES:
        values = gauge(target.values["gc_pause_ms"], factor / 1000)
        yield target.lines("go_gc_duration_seconds", values, quantile=quantile)
    yield from _gc_summary(target, "go_gc_duration_seconds", {})


def _pool_families(scenario: Scenario, signals: list[ServiceSignals]) -> Iterator[Family]:
    """HikariCP's gauges for a JVM service, OpenTelemetry's for any other."""
    pools = [(sig, t) for sig in carrying(scenario, signals, "pool_active") for t in pod_targets(sig)]
    hikari = [(scenario.service(s.service).label("pool"), t) for s, t in pools if _jvm(scenario, s)]
    otel = [(scenario.service(s.service).label("pool"), t) for s, t in pools if not _jvm(scenario, s)]
    for suffix, values in (("active", _active), ("idle", _idle), ("pending", _pending), ("max", _max)):
        name = f"hikaricp_connections_{suffix}"
        yield name, "gauge", (t.lines(name, values(t), pool=pool) for pool, t in hikari if values(t))
    yield (
        "db_client_connections_usage",
        "gauge",
        (
            t.lines("db_client_connections_usage", values(t), pool_name=pool, state=state)
            for pool, t in otel
            for state, values in (("used", _active), ("idle", _idle))
            if values(t)
        ),
    )
    for name, values in (("db_client_connections_max", _max), ("db_client_connections_pending_requests", _pending)):
        yield name, "gauge", (t.lines(name, values(t), pool_name=pool) for pool, t in otel if values(t))


def _jvm(scenario: Scenario, sig: ServiceSignals) -> bool:
    return scenario.service(sig.service).runtime == "jvm"


def _active(target: Target) -> list[float]:
    return gauge(target.values["pool_active"], digits=0)


def _max(target: Target) -> list[float]:
    return gauge(target.values["pool_max"], digits=0) if "pool_max" in target.values else []


def _idle(target: Target) -> list[float]:
    ceiling: Sequence[float] = target.values.get("pool_max", [])
    return [max(0.0, m - a) for m, a in zip(_max(target), _active(target), strict=True)] if ceiling else []


def _pending(target: Target) -> list[float]:
    return gauge(target.values["pool_pending"], digits=0) if "pool_pending" in target.values else []
