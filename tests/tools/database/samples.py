"""One rich value of each database view kind (every optional part filled in), for the round-trip and store tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tools.base import ToolData
from tools.database.locks import DbLocks, LockCount, LockSession
from tools.database.replication import DbReplication, ReplayState, ReplicaLag, ReplicationSlot
from tools.database.sessions import DbConnections, DbSessions, RoleLimit, SessionGroup, Statement
from tools.database.storage import DbStorage, SizeSeries
from tools.timerange import TimeWindow

AT = datetime(2026, 11, 28, 15, 5, tzinfo=UTC)
WINDOW = TimeWindow(AT - timedelta(hours=6), AT)
SERVER = "db-primary:5432/orders as opsbot_ro"


def database_samples() -> list[ToolData]:
    statement = Statement(4242, "billing", "batch", "idle in transaction", 312.5, 315.25, "Lock:relation", "UPDATE ?")
    holder = LockSession(4242, "billing", "batch", "idle in transaction", (), transaction_s=315.25, statement="UPD ?")
    waiter = LockSession(
        4250, "order", "order_app", "active", (4242,), "ShareLock on transactionid", AT, 290.5, 1.0, "?"
    )
    wal = SizeSeries("WAL", "wal", 4.5e9, 1.0e9, 4.5e9, 6.0e8, ((AT - timedelta(hours=6), 1.0e9), (AT, 4.5e9)))
    return [
        DbSessions(
            "orders-db",
            SERVER,
            "sql",
            97,
            (SessionGroup("order", "order_app", "idle", 92),),
            (statement,),
            "order",
            900.0,
            WINDOW,
            "a note",
        ),
        DbConnections(
            "orders-db",
            SERVER,
            "postgres_exporter",
            97,
            100,
            3,
            2,
            (("idle", 92),),
            (("order", 97),),
            (RoleLimit("order_app", 9, 9),),
            98,
            AT,
            WINDOW,
            "a note",
        ),
        DbLocks(
            "orders-db", SERVER, "sql", (holder, waiter), (LockCount("accessexclusivelock", 1),), 3, WINDOW, "n", 5
        ),
        DbReplication(
            "orders-db",
            SERVER,
            "sql",
            "primary",
            (ReplicaLag("replica-1", "10.0.0.7", "streaming", 0.0, 10.0, 4.2e6, 35.5, 1.5),),
            (
                ReplayState("orders-db-replica", True, 1560.0, 4.2e6, "streaming", ""),
                ReplayState("gone", None, error="x"),
            ),
            (ReplicationSlot("orphan_cdc", "logical", "orders", False, 3.5e9, "extended"),),
            WINDOW,
            "a note",
        ),
        DbStorage(
            "orders-db",
            SERVER,
            "postgres_exporter",
            (wal, SizeSeries("orders", "database", 2.0e9)),
            True,
            WINDOW,
            12,
            "a note",
        ),
    ]
