"""The database toolset reads and nothing else: its session is read-only and bounded, and its check (what `opsbot
toolsets` and doctor show) proves the role, the views and the connection, on the real scene of conftest.py."""

from __future__ import annotations

import pytest

from bot import wiring
from bot.wiring.doctor import check_optional_toolsets
from bot.wiring.toolsets import optional_toolsets
from tests.tools.conftest import tool_settings
from tests.tools.database.conftest import Shop, database_settings
from tools.base import ToolError
from tools.database.sql import PostgresReader
from tools.toolset import ToolsetStatus


def database_check(**section: object) -> ToolsetStatus:
    settings = tool_settings(database=section)
    return next(t for t in optional_toolsets(settings) if t.name == "database").check()


def test_even_a_superusers_session_refuses_writes_and_carries_its_timeouts(shop: Shop) -> None:
    reader = PostgresReader(shop.primary.dsn(), statement_timeout_ms=1500, lock_timeout_ms=300)
    with reader.session() as db:
        limits = "current_setting('statement_timeout') AS statement, current_setting('lock_timeout') AS lock"
        row = db.row(f"SELECT current_setting('transaction_read_only') AS read_only, {limits}")
        assert dict(row) == {"read_only": "on", "statement": "1500ms", "lock": "300ms"}
        with pytest.raises(ToolError, match="cannot execute CREATE TABLE in a read-only transaction"):
            db.rows("CREATE TABLE planted (i int)")
        # the migration's queued ACCESS EXCLUSIVE request is ahead of any read of accounts: it gives up, not waits
        with pytest.raises(ToolError, match="canceling statement due to lock timeout"):
            db.rows("SELECT count(*) FROM accounts")


def test_a_dsn_is_described_without_its_password() -> None:
    reader = PostgresReader("postgresql://opsbot_ro:S3cret-pw@db-primary:5433/orders")
    assert reader.where == "db-primary:5433/orders as opsbot_ro"


def test_the_check_proves_the_read_only_role_and_that_every_view_answers(shop: Shop) -> None:
    status = database_check(**database_settings(shop))
    assert status.state == "ok", status.detail
    assert "shop-db: SQL as opsbot_ro (read-only, pg_monitor, PostgreSQL 1" in status.detail
    assert status.detail.count("the views answer") == 2


def test_the_check_warns_about_a_superuser_that_could_write(shop: Shop) -> None:
    status = database_check(targets={"shop-db": {"dsn": shop.primary.dsn(), "exporter": False}})
    assert status.state == "warn" and "SUPERUSER" in status.detail and "MAY WRITE" in status.detail


def test_the_check_fails_when_no_target_answers_and_is_off_until_one_is_configured() -> None:
    dead = database_check(targets={"gone": {"dsn": "host=/nonexistent port=1 dbname=x user=u", "exporter": False}})
    assert dead.state == "fail" and "could not connect to /nonexistent:1/x as u" in dead.detail
    assert database_check().state == "off"


def test_opsbot_toolsets_and_doctor_run_the_database_check(shop: Shop) -> None:
    settings = tool_settings(database=database_settings(shop))
    statuses = {s.name: s for s in wiring.toolset_statuses(settings, timeout_s=20)}
    assert statuses["database"].state == "ok"
    doctor = check_optional_toolsets(settings)
    assert doctor.level == "ok" and doctor.line.startswith("database ok: shop-db: SQL as opsbot_ro")
    tools = [spec.name for spec in wiring.build_tool_specs(settings)]
    assert [name for name in tools if name.startswith("query_db_")] == [
        "query_db_sessions",
        "query_db_locks",
        "query_db_replication",
        "query_db_storage",
        "query_db_connections",
    ]
