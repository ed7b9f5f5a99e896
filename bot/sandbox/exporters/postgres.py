"""postgres_exporter: connections by state against max_connections, replication lag, the oldest transaction and
ACCESS EXCLUSIVE locks (a DDL statement holding or awaiting one)."""

from __future__ import annotations

from collections.abc import Iterator

from bot.sandbox.exporters.text import Family, carrying, gauge, service_target
from bot.sandbox.scenario import Scenario
from bot.sandbox.signals import ServiceSignals

ACTIVE_SHARE = 0.3  # of the client connections, the share running a statement; the rest are idle


def postgres_families(scenario: Scenario, signals: list[ServiceSignals]) -> Iterator[Family]:
    def datname(sig: ServiceSignals) -> str:
        return scenario.service(sig.service).label("database")

    connected = carrying(scenario, signals, "db_connections")
    yield (
        "pg_stat_activity_count",
        "gauge",
        (
            service_target(s).lines(
                "pg_stat_activity_count", gauge(s.values["db_connections"], share, 0), datname=datname(s), state=state
            )
            for s in connected
            for state, share in (("active", ACTIVE_SHARE), ("idle", 1 - ACTIVE_SHARE))
        ),
    )
    per_server = (
        ("pg_settings_max_connections", "db_max_connections"),
        ("pg_replication_lag_seconds", "replication_lag_s"),
    )
    for name, key in per_server:
        yield (
            name,
            "gauge",
            (service_target(s).lines(name, gauge(s.values[key], digits=3)) for s in carrying(scenario, signals, key)),
        )
    name = "pg_stat_activity_max_tx_duration"
    yield (
        name,
        "gauge",
        (
            service_target(s).lines(
                name, gauge(s.values["db_longest_transaction_s"], digits=3), datname=datname(s), state="active"
            )
            for s in carrying(scenario, signals, "db_longest_transaction_s")
        ),
    )
    yield (
        "pg_locks_count",
        "gauge",
        (
            service_target(s).lines(
                "pg_locks_count",
                gauge(s.values["db_exclusive_locks"], digits=0),
                datname=datname(s),
                mode="accessexclusivelock",
            )
            for s in carrying(scenario, signals, "db_exclusive_locks")
        ),
    )
