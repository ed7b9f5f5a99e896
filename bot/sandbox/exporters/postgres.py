"""postgres_exporter: connections by state against max_connections, replication lag, the oldest transaction and
ACCESS EXCLUSIVE locks (a DDL statement holding or awaiting one)."""

from __future__ import annotations

from collections.abc import Iterator

from bot.sandbox.exporters.text import Family, carrying, gauge, service_target
from bot.sandbox.scenario import Scenario
from bot.sandbox.signals import ServiceSignals

ACTIVE_SHARE = 0.3  # of the client connections, the share running a statement; the rest are idle
SIGNALS = (
    "db_connections",
    "db_max_connections",
    "replication_lag_s",
    "db_longest_transaction_s",
    "db_exclusive_locks",
)


def database_targets(scenario: Scenario) -> dict[str, list[str]]:
    """The databases whose postgres_exporter series the sandbox writes, each with the services that call it: what
    the database toolset is pointed at (exporter views; the sandbox runs no Postgres for SQL)."""
    return {
        db.name: sorted(s.name for s in scenario.services if db.name in s.downstream)
        for db in scenario.services
        if db.kind == "database" and any(key in db.signals for key in SIGNALS)
    }


def postgres_families(scenario: Scenario, signals: list[ServiceSignals]) -> Iterator[Family]:
    def datname(sig: ServiceSignals) -> dict[str, str]:
        return {"datname": scenario.service(sig.service).label("database")}

    connected = carrying(scenario, signals, "db_connections")
    yield (
        "pg_stat_activity_count",
        "gauge",
        (
            service_target(s).lines(
                "pg_stat_activity_count", gauge(s.values["db_connections"], share, 0), labels=datname(s), state=state
            )
            for s in connected
            for state, share in (("active", ACTIVE_SHARE), ("idle", 1 - ACTIVE_SHARE))
        ),
    )
    # (family, signal, per database, its own labels)
    rows: tuple[tuple[str, str, bool, dict[str, str]], ...] = (
        ("pg_settings_max_connections", "db_max_connections", False, {}),
        ("pg_replication_lag_seconds", "replication_lag_s", False, {}),
        ("pg_stat_activity_max_tx_duration", "db_longest_transaction_s", True, {"state": "active"}),
        ("pg_locks_count", "db_exclusive_locks", True, {"mode": "accessexclusivelock"}),
    )
    for name, key, per_database, extra in rows:
        yield name, "gauge", _series(scenario, signals, name, key, {} if not per_database else None, extra)


def _series(
    scenario: Scenario,
    signals: list[ServiceSignals],
    name: str,
    key: str,
    server: dict[str, str] | None,
    extra: dict[str, str],
) -> Iterator[list[str]]:
    """One series per service that carries `key`; `server` None: it is per database (the datname label)."""
    for sig in carrying(scenario, signals, key):
        labels = server if server is not None else {"datname": scenario.service(sig.service).label("database")}
        yield service_target(sig).lines(name, gauge(sig.values[key], digits=3), labels={**labels, **extra})
