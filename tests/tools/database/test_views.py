"""Each database view read by SQL from a real Postgres in trouble (the scene in conftest.py), as the model calls it."""

from __future__ import annotations

from collections.abc import Callable

from tests.tools.database.conftest import POOL_SIZE, Shop
from tools.base import Toolbox, call_tool
from tools.database.locks import DbLocks, render_locks
from tools.database.replication import DbReplication, render_replication
from tools.database.sessions import DbConnections, DbSessions, render_connections, render_sessions
from tools.database.storage import DbStorage, render_storage
from tools.results import database_of

Tools = Callable[..., Toolbox]


def test_sessions_are_grouped_by_application_user_and_state_with_the_longest_statements_masked(
    shop: Shop, shop_tools: Tools
) -> None:
    result = call_tool(shop_tools(), "query_db_sessions", {"database": "shop-db"})
    found = database_of(result)
    assert result.status == "ok" and isinstance(found, DbSessions) and found.source == "sql"
    groups = {(g.application, g.user, g.state): g.count for g in found.groups}
    assert groups[("order", "order_app", "idle")] == POOL_SIZE - 1
    assert groups[("billing-batch", "batch", "idle in transaction")] == 1
    longest = {s.pid: s for s in found.longest}
    holder = longest[shop.pids["billing-batch"]]
    assert holder.text == "UPDATE accounts SET balance = balance - ? WHERE email = ?"
    assert longest[shop.pids["report-job"]].text == "SELECT pg_sleep(?)"
    assert longest[shop.pids["order"]].wait.startswith("Lock:")
    assert "alice@example.com" not in result.text and "billing-batch/batch idle in transaction" in result.text
    assert found.total == shop.client_sessions


def test_sessions_keep_one_application_and_refuse_one_that_is_not_connected(shop_tools: Tools) -> None:
    box = shop_tools()
    found = database_of(call_tool(box, "query_db_sessions", {"database": "order", "application": "report-job"}))
    assert isinstance(found, DbSessions) and found.total == 1 and found.database == "shop-db"
    refused = call_tool(box, "query_db_sessions", {"database": "shop-db", "application": "reprot-job"})
    assert refused.status == "error" and "Did you mean 'report-job'?" in refused.text


def test_lock_waits_show_the_blocking_chain_up_to_the_root_blocker(shop: Shop, shop_tools: Tools) -> None:
    result = call_tool(shop_tools(), "query_db_locks", {"database": "shop-db"})
    found = database_of(result)
    assert isinstance(found, DbLocks)
    pids = shop.pids
    assert [r.pid for r in found.roots] == [pids["billing-batch"]]
    assert set(found.blocked_behind(pids["billing-batch"])) == {pids["order"], pids["migrate"], pids["order-reader"]}
    by_pid = {s.pid: s for s in found.sessions}
    assert by_pid[pids["order"]].blocked_by == (pids["billing-batch"],)
    assert by_pid[pids["order-reader"]].blocked_by == (pids["migrate"],)
    assert "AccessExclusiveLock on relation accounts" in by_pid[pids["migrate"]].waiting_for
    assert by_pid[pids["order"]].wait_since is not None and (by_pid[pids["order"]].wait_s or 0) > 0
    assert result.text.splitlines()[1].startswith(f"ROOT BLOCKER pid {pids['billing-batch']} billing-batch/batch")
    assert f"└ pid {pids['order-reader']} order-reader" in result.text
    assert result.text == render_locks(found)


def test_replication_names_the_paused_replica_and_the_orphaned_slot(shop: Shop, shop_tools: Tools) -> None:
    result = call_tool(shop_tools(), "query_db_replication", {"database": "shop-db"})
    found = database_of(result)
    assert isinstance(found, DbReplication) and found.role == "primary"
    (replica,) = found.replicas
    assert replica.name == "shop_replica" and (replica.unreplayed_bytes or 0) > 0
    (replay,) = found.replays
    assert replay.target == "shop-db-replica" and replay.paused is True and replay.stuck
    slots = {s.name: s for s in found.slots}
    assert slots["orphan_cdc"].orphaned and (slots["orphan_cdc"].retained_bytes or 0) > 1024**2
    assert slots["shop_replica"].active and not slots["shop_replica"].orphaned
    assert [s.name for s in found.orphaned_slots] == ["orphan_cdc"]
    assert "ORPHANED" in result.text and "REPLAY PAUSED" in result.text


def test_a_replica_reports_its_own_paused_replay(shop_tools: Tools) -> None:
    found = database_of(call_tool(shop_tools(), "query_db_replication", {"database": "shop-db-replica"}))
    assert isinstance(found, DbReplication) and found.role == "replica" and not found.replicas
    assert found.replays[0].paused is True and found.replays[0].receiver == "streaming"


def test_storage_without_the_exporter_gives_the_current_sizes_and_says_history_is_missing(shop_tools: Tools) -> None:
    result = call_tool(shop_tools(), "query_db_storage", {"database": "shop-db"})
    found = database_of(result)
    assert isinstance(found, DbStorage) and not found.history
    sizes = {s.name: s.last_bytes or 0 for s in found.sizes}
    assert sizes["shop"] > 1024**2 and sizes["WAL"] > 0 and (found.segments or 0) > 0
    assert "History is not available" in result.text


def test_connections_are_counted_against_max_connections_and_a_role_at_its_limit(shop: Shop, shop_tools: Tools) -> None:
    result = call_tool(shop_tools(), "query_db_connections", {"database": "order"})
    found = database_of(result)
    assert isinstance(found, DbConnections)
    assert found.used == shop.client_sessions and found.max_connections == 20 and found.superuser_reserved == 3
    assert found.available == 17 - shop.client_sessions
    (limit,) = found.role_limits
    assert (limit.role, limit.used, limit.limit) == ("order_app", POOL_SIZE, POOL_SIZE)
    assert "role order_app: 9 of its own limit of 9 (AT THE LIMIT)" in result.text


def test_an_unknown_database_is_refused_with_the_configured_ones(shop_tools: Tools) -> None:
    result = call_tool(shop_tools(), "query_db_locks", {"database": "shop"})
    assert result.status == "error" and "shop-db" in result.text and "order" in result.text


def test_storage_answers_by_sql_when_prometheus_cannot_be_read_and_says_why(shop: Shop) -> None:
    from bot import wiring
    from tests.tools.conftest import tool_settings

    targets = {"shop-db": {"dsn": shop.primary.dsn(user="opsbot_ro")}}  # exporter on; nothing listens at port 9
    box = wiring.build_toolbox(tool_settings(prometheus_url="http://127.0.0.1:9", database={"targets": targets}))
    result = call_tool(box, "query_db_storage", {"database": "shop-db"})
    found = database_of(result)
    assert result.status == "ok" and isinstance(found, DbStorage) and found.source == "sql" and not found.history
    assert "History is not available: postgres_exporter's series could not be read (" in result.text
    assert "127.0.0.1:9" in result.text and {s.what for s in found.sizes} == {"database", "wal"}


def test_each_views_text_is_its_data_rendered(shop_tools: Tools) -> None:
    box = shop_tools()
    renders = {
        "query_db_sessions": render_sessions,
        "query_db_connections": render_connections,
        "query_db_locks": render_locks,
        "query_db_replication": render_replication,
        "query_db_storage": render_storage,
    }
    for tool, render in renders.items():
        # a window that ended long ago: SQL's note that it shows now is part of the data
        result = call_tool(
            box, tool, {"database": "shop-db", "start": "2026-01-01T10:00:00Z", "end": "2026-01-01T11:00:00Z"}
        )
        assert result.status == "ok" and result.text == render(result.data), tool  # type: ignore[operator]
        assert "SQL shows the server now" in result.text, tool
