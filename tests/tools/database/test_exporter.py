"""The database views from postgres_exporter's series, backfilled into a real Prometheus: six hours of a primary whose
WAL grows behind an orphaned slot while order's pool fills the connections, and a replica that stopped replaying."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot import wiring
from bot.sandbox.backends import backfill, free_port, start_prometheus
from tests.tools.conftest import tool_settings
from tools.base import Toolbox, call_tool
from tools.database.locks import DbLocks
from tools.database.replication import DbReplication, render_replication
from tools.database.sessions import DbConnections, DbSessions
from tools.database.storage import DbStorage
from tools.results import database_of

MB = 1024**2
HOURS = 6
Series = Callable[[int], float]  # minutes before now -> value


def _series() -> dict[str, list[tuple[dict[str, str], Series]]]:
    """family -> (labels, value at n minutes ago); the primary is orders-db, the replica orders-db-replica."""
    primary, replica = {"service": "orders-db"}, {"service": "orders-db-replica"}
    app = {**primary, "datname": "orders", "usename": "order_app", "application_name": "order"}
    return {
        "pg_database_size_bytes": [({**primary, "datname": "orders"}, lambda m: 2048 * MB - m * MB)],
        "pg_wal_size_bytes": [(primary, lambda m: 1024 * MB + max(0, 180 - m) * 20 * MB)],
        "pg_replication_slots_pg_wal_lsn_diff": [
            ({**primary, "slot_name": "orphan_cdc", "database": "orders"}, lambda m: max(0, 180 - m) * 20 * MB)
        ],
        "pg_replication_slots_active": [({**primary, "slot_name": "orphan_cdc"}, lambda m: float(m > 180))],
        # the default replication_slot collector's family: whether a slot is read, never its WAL when it is not
        "pg_replication_slot_slot_is_active": [
            ({**primary, "slot_name": "orphan_cdc", "slot_type": "logical"}, lambda m: float(m > 180)),
            ({**primary, "slot_name": "search_sync", "slot_type": "logical"}, lambda m: 0.0),
        ],
        "pg_stat_activity_count": [
            ({**app, "state": "idle"}, lambda m: 40.0 if m > 60 else 92.0),
            ({**app, "state": "active"}, lambda m: 5.0),
        ],
        "pg_stat_activity_max_tx_duration": [({**app, "state": "active"}, lambda m: 900.0 if m < 30 else 2.0)],
        "pg_settings_max_connections": [(primary, lambda m: 100.0)],
        "pg_settings_superuser_reserved_connections": [(primary, lambda m: 3.0)],
        "pg_locks_count": [
            ({**primary, "datname": "orders", "mode": "rowexclusivelock"}, lambda m: 5.0),
            ({**primary, "datname": "orders", "mode": "accessexclusivelock"}, lambda m: float(m < 30)),
        ],
        "pg_replication_is_replica": [(replica, lambda m: 1.0)],
        "pg_replication_lag_seconds": [(replica, lambda m: 0.2 if m > 26 else (26 - m) * 60.0)],
    }


def write_openmetrics(path: Path, now: datetime) -> None:
    lines = []
    for family, series in _series().items():
        lines.append(f"# TYPE {family} gauge")
        for labels, value in series:
            text = ",".join(f'{k}="{v}"' for k, v in labels.items())
            for minute in range(HOURS * 60, -10, -1):  # a little past now: instant reads stay fresh
                at = (now - timedelta(minutes=minute)).timestamp()
                lines.append(f"{family}{{{text}}} {value(minute)} {at:.0f}")
    path.write_text("\n".join([*lines, "# EOF", ""]))


@pytest.fixture(scope="module")
def exporter_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("pg-exporter")
    write_openmetrics(folder / "pg.om", datetime.now(UTC).replace(second=0, microsecond=0))
    backfill(folder / "pg.om", folder / "data")
    proc = start_prometheus(folder / "data", free_port(), die_with_parent=True)
    yield proc.url
    proc.stop()


@pytest.fixture
def exporter_tools(exporter_prometheus: str) -> Toolbox:
    targets = {
        "orders-db": {"services": ["order"], "replicas": ["orders-db-replica"]},
        # SQL is configured but cannot connect: the views fall back to the exporter and say why
        "orders-db-replica": {"dsn": "host=/nonexistent port=1 user=opsbot_ro dbname=orders"},
    }
    return wiring.build_toolbox(tool_settings(prometheus_url=exporter_prometheus, database={"targets": targets}))


def test_storage_shows_the_wal_growing_behind_an_orphaned_slot_over_the_window(exporter_tools: Toolbox) -> None:
    result = call_tool(exporter_tools, "query_db_storage", {"database": "orders-db", "range": "6h"})
    found = database_of(result)
    assert isinstance(found, DbStorage) and found.history and found.source == "postgres_exporter"
    (wal,) = found.of("wal")
    assert wal.first_bytes is not None and wal.first_bytes < 1100 * MB and (wal.last_bytes or 0) > 4000 * MB
    assert (wal.growth_bytes_per_h or 0) > 500 * MB and len(wal.points) == 8
    (database,) = found.of("database")
    assert database.name == "orders" and (database.growth_bytes_per_h or 0) > 50 * MB
    assert found.of("slot")[0].name == "orphan_cdc"
    assert "samples of WAL:" in result.text and "History is not available" not in result.text


def test_connections_from_the_exporter_show_the_peak_at_max_connections(exporter_tools: Toolbox) -> None:
    result = call_tool(exporter_tools, "query_db_connections", {"database": "order", "range": "3h"})
    found = database_of(result)
    assert isinstance(found, DbConnections) and found.source == "postgres_exporter"
    assert (found.used, found.max_connections, found.superuser_reserved, found.peak) == (97, 100, 3, 97)
    assert found.available == 0 and "AT THE LIMIT" in result.text


def test_sessions_from_the_exporter_are_counts_and_say_statements_need_sql(exporter_tools: Toolbox) -> None:
    result = call_tool(exporter_tools, "query_db_sessions", {"database": "orders-db"})
    found = database_of(result)
    assert isinstance(found, DbSessions) and not found.longest
    assert {(g.application, g.state): g.count for g in found.groups} == {("order", "idle"): 92, ("order", "active"): 5}
    assert found.longest_transaction_s == 900.0 and "need SQL access" in result.text


def test_locks_from_the_exporter_count_modes_and_name_what_sql_would_add(exporter_tools: Toolbox) -> None:
    result = call_tool(exporter_tools, "query_db_locks", {"database": "orders-db"})
    found = database_of(result)
    assert isinstance(found, DbLocks) and not found.sessions
    assert {c.mode: c.count for c in found.counts} == {"rowexclusivelock": 5, "accessexclusivelock": 1}
    assert "blocking chain" in result.text


def test_replication_from_the_exporter_after_sql_fails_names_the_lag_and_why(exporter_tools: Toolbox) -> None:
    result = call_tool(exporter_tools, "query_db_replication", {"database": "orders-db-replica"})
    found = database_of(result)
    assert isinstance(found, DbReplication) and found.role == "replica"
    assert 1400 < (found.replays[0].last_replay_age_s or 0) <= 1560
    assert "SQL failed (could not connect to /nonexistent:1/orders as opsbot_ro" in found.note
    assert result.text == render_replication(found)  # the note is the data's: the text is its rendering
    primary_result = call_tool(exporter_tools, "query_db_replication", {"database": "orders-db"})
    primary, primary_text = database_of(primary_result), primary_result.text
    assert isinstance(primary, DbReplication) and [s.name for s in primary.orphaned_slots] == ["orphan_cdc"]
    (unread,) = [s for s in primary.slots if s.name == "search_sync"]
    assert not unread.active and unread.retained_bytes is None and primary.slots[-1] == unread
    assert "slot search_sync: INACTIVE, WAL it retains unknown" in primary_text


def test_when_sql_and_prometheus_both_fail_the_error_names_both() -> None:
    targets = {"orders-db": {"dsn": "host=/nonexistent port=1 user=opsbot_ro dbname=orders"}}
    box = wiring.build_toolbox(tool_settings(prometheus_url="http://127.0.0.1:9", database={"targets": targets}))
    for tool in ("query_db_locks", "query_db_storage"):
        result = call_tool(box, tool, {"database": "orders-db"})
        assert result.status == "error", tool
        assert "SQL failed (could not connect to /nonexistent:1/orders as opsbot_ro" in result.text, tool
        assert "Prometheus at http://127.0.0.1:9 is unreachable" in result.text, tool
