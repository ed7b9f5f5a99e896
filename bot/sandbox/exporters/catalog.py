"""Which opt-in signals a service may carry, what unit each is in, and how it behaves over the day.

A service gets one of these series only when its `[services.<name>]` table sets the signal's healthy level, or a
`[[timeline]]` effect moves it (then a signal with a default level needs no table entry). So a scenario that sets
none of them builds exactly the series it built before these existed.

`scope` says where a per-pod service (`per_pod = true`) reports the signal: per pod, per node (the pods' nodes),
or once for the service. `noise` is the relative noise of a healthy series; `daily` makes it follow the day's
traffic curve.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Scope = Literal["pod", "node", "service"]
RUNTIMES = ("jvm", "go")


@dataclass(frozen=True)
class Signal:
    unit: str
    scope: Scope
    meaning: str
    noise: float = 0.0
    default: float | None = None  # the level when the service sets none (None: the service must set it)
    needs: str = ""  # another signal the service must set too
    runtimes: tuple[str, ...] = ()  # only services whose `runtime` is one of these export it (() = any)
    daily: bool = False
    integer: bool = False


SIGNALS: dict[str, Signal] = {
    "status_401": Signal("ratio", "pod", "share of requests answered 401 (an expired credential)", 0.1, 0.0),
    "status_404": Signal("ratio", "pod", "share of requests answered 404", 0.1, 0.005),
    "status_409": Signal("ratio", "pod", "share of requests answered 409 (a conflict)", 0.1, 0.0),
    "status_429": Signal("ratio", "pod", "share of requests answered 429 (rate limited)", 0.1, 0.0),
    "disk_capacity_gb": Signal("GB", "node", "size of the service's data filesystem"),
    "disk_used_gb": Signal("GB", "node", "space used on it", 0.002, needs="disk_capacity_gb"),
    "gc_pause_ms": Signal("ms", "pod", "mean pause of one garbage collection", 0.1, runtimes=RUNTIMES),
    "gc_per_minute": Signal("count", "pod", "collections per minute", 0.1, 6.0, runtimes=RUNTIMES, daily=True),
    "heap_used_mb": Signal("MB", "pod", "JVM heap in use", 0.03, runtimes=("jvm",)),
    "heap_max_mb": Signal("MB", "pod", "JVM heap maximum (-Xmx)", runtimes=("jvm",)),
    "pool_active": Signal("connections", "pod", "connections of the pool in use", 0.1, daily=True),
    "pool_max": Signal("connections", "pod", "the pool's maximum size"),
    "pool_pending": Signal("requests", "pod", "requests waiting for a connection", 0.2, 0.0),
    "queue_depth": Signal("messages", "service", "messages ready in the service's queue", 0.15),
    "consumer_lag": Signal("messages", "service", "the consumer group's lag behind the topic", 0.15),
    "replicas": Signal("pods", "service", "pods of the Deployment (with an HPA: at average load)", integer=True),
    "hpa_max_replicas": Signal("pods", "service", "the HPA's maxReplicas", needs="replicas", integer=True),
    "hpa_min_replicas": Signal("pods", "service", "the HPA's minReplicas", 0.0, 1.0, "hpa_max_replicas", integer=True),
    "clock_offset_ms": Signal("ms", "node", "the clock's offset from true time (NTP)", 0.05),
    "cpu_request_cores": Signal("cores", "pod", "CPU request per container"),
    "cpu_limit_cores": Signal("cores", "pod", "CPU limit per container"),
    "memory_request_mb": Signal("MB", "pod", "memory request per container"),
    "memory_limit_mb": Signal("MB", "pod", "memory limit per container"),
    "db_connections": Signal("connections", "service", "client connections to the database", 0.05, daily=True),
    "db_max_connections": Signal("connections", "service", "the database's max_connections"),
    "replication_lag_s": Signal("s", "service", "the replica's replay lag", 0.2),
    "db_longest_transaction_s": Signal("s", "service", "age of the oldest open transaction", 0.1, 2.0),
    "client_calls_per_s": Signal("rps", "service", "outbound calls per second to each downstream service", 0.1),
    "client_retries_per_s": Signal(
        "rps",
        "service",
        "retries per second to `retry_peer` (default: each downstream)",
        0.2,
        0.0,
        "client_calls_per_s",
    ),
    "db_exclusive_locks": Signal(
        "locks", "service", "ACCESS EXCLUSIVE locks held or awaited (DDL)", 0.0, 0.0, integer=True
    ),
}

# Names of things in the series' labels: `[services.<name>]` string keys, each with its default.
LABEL_KEYS = {
    "disk_mountpoint": "/data",
    "pool": "HikariPool-1",
    "queue": "",  # "" = the service's name
    "topic": "",
    "consumer_group": "",
    "database": "",  # "" = the service's name without a "-db" suffix
    "retry_peer": "",  # the downstream service the retries go to ("" = every one)
}
STATUS_SIGNALS = ("status_401", "status_404", "status_409", "status_429")


def carried_signals(declared: Iterable[str], moved: Iterable[str]) -> tuple[str, ...]:
    """The signals a service carries, in catalogue order: set, moved by an effect, or implied by another."""
    keys = {*declared, *moved}
    implied = {"hpa_min_replicas": "hpa_max_replicas", "gc_per_minute": "gc_pause_ms"}
    keys |= {key for key, by in implied.items() if by in keys}
    return tuple(key for key in SIGNALS if key in keys)
