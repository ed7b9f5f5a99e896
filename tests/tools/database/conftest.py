"""A shop database in trouble, made for real on a private Postgres (tests/fakes/postgres.py):

- a blocking chain: billing-batch updated alice's row and sits idle in its transaction; order's update of the same
  row waits for it; a migration's ALTER TABLE waits for both; a reader's SELECT queues behind the ALTER;
- a report whose statement has run for as long as the tests take (pg_sleep);
- order's connection pool, its role at its own connection limit, on a server of max_connections 20;
- a logical replication slot nobody reads while the WAL grows behind it;
- a streaming replica with its replay paused, so WAL it received is not applied.

The tools read it as opsbot_ro, a role with pg_monitor and no table privilege.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import psycopg
import pytest

from tests.fakes.postgres import PgCluster, postgres_primary, postgres_replica, postgres_root
from tests.tools.conftest import tool_settings
from tools.base import Toolbox

__all__ = ["postgres_primary", "postgres_replica", "postgres_root"]  # fixtures, registered by importing them here

POOL_SIZE = 9  # order_app's connections, and its role's connection limit
SETUP = """
CREATE ROLE opsbot_ro LOGIN;
GRANT pg_monitor TO opsbot_ro;
CREATE ROLE order_app LOGIN CONNECTION LIMIT 9;
CREATE ROLE batch LOGIN;
CREATE TABLE accounts (id serial PRIMARY KEY, email text UNIQUE, balance numeric NOT NULL);
INSERT INTO accounts (email, balance) VALUES ('alice@example.com', 100), ('bob@example.com', 50);
GRANT SELECT, UPDATE ON accounts TO order_app, batch;
"""


@dataclass
class Shop:
    primary: PgCluster
    replica: PgCluster
    pids: dict[str, int] = field(default_factory=dict)  # billing-batch, order, migrate, order-reader, report-job
    client_sessions: int = 0  # client backends when the scene was set, the admin's included


class Scene:
    """The sessions of the scene: connections held open, statements left blocked in threads."""

    def __init__(self, cluster: PgCluster) -> None:
        self.cluster = cluster
        self.admin = cluster.connect("admin", autocommit=True)
        self.conns: list[psycopg.Connection[Any]] = []
        self.threads: list[threading.Thread] = []

    def session(self, application: str, user: str = "postgres") -> psycopg.Connection[Any]:
        conn = psycopg.connect(self.cluster.dsn(user=user), application_name=application)
        self.conns.append(conn)
        return conn

    def blocked(self, application: str, statement: str, user: str = "postgres") -> int:
        """Run `statement` in a thread of its own (it waits); the session's pid."""
        conn = self.session(application, user)
        thread = threading.Thread(target=_quietly, args=(conn, statement), daemon=True)
        thread.start()
        self.threads.append(thread)
        return conn.info.backend_pid

    def wait_until(self, query: str, what: str, timeout_s: float = 20.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not self.admin.execute(query).fetchone()[0]:  # type: ignore[index]
            if time.monotonic() > deadline:
                raise AssertionError(f"the scene did not reach: {what}")
            time.sleep(0.05)

    def end(self) -> None:
        self.admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
                           "AND backend_type = 'client backend'")  # fmt: skip
        for conn in self.conns:
            conn.close()
        for thread in self.threads:
            thread.join(timeout=10)
        self.admin.close()


def _quietly(conn: psycopg.Connection[Any], statement: str) -> None:
    with contextlib.suppress(psycopg.Error):  # terminated at the end of the scene
        conn.execute(statement)


def _wal_and_slots(scene: Scene, replica: PgCluster) -> None:
    """The orphaned logical slot and the WAL behind it, then the replica's replay paused with WAL received."""
    admin = scene.admin
    admin.execute("SELECT pg_create_logical_replication_slot('orphan_cdc', 'test_decoding')")
    admin.execute("CREATE TABLE filler AS SELECT g, md5(g::text) AS h FROM generate_series(1, 100000) g")
    with replica.connect(dbname="postgres", autocommit=True) as conn:
        scene.wait_until("SELECT count(*) = 1 FROM pg_stat_replication WHERE replay_lsn = pg_current_wal_lsn()",
                         "the replica caught up")  # fmt: skip
        conn.execute("SELECT pg_wal_replay_pause()")
    admin.execute("INSERT INTO filler SELECT g, md5(g::text) FROM generate_series(1, 20000) g")
    scene.wait_until("SELECT flush_lsn > replay_lsn FROM pg_stat_replication", "WAL received and not replayed")


def _sessions(scene: Scene, shop: Shop) -> None:
    holder = scene.session("billing-batch", "batch")
    holder.execute("UPDATE accounts SET balance = balance - 100 WHERE email = 'alice@example.com'")
    shop.pids["billing-batch"] = holder.info.backend_pid  # idle in transaction, holding alice's row
    update = "UPDATE accounts SET balance = balance + 5 WHERE email = 'alice@example.com'"
    shop.pids["order"] = scene.blocked("order", update, "order_app")
    scene.wait_until("SELECT count(*) = 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock'", "order waits")
    shop.pids["migrate"] = scene.blocked("migrate", "ALTER TABLE accounts ADD COLUMN note text")
    scene.wait_until("SELECT count(*) = 2 FROM pg_stat_activity WHERE wait_event_type = 'Lock'", "migrate waits")
    shop.pids["order-reader"] = scene.blocked("order-reader", "SELECT count(*) FROM accounts WHERE balance > 10")
    scene.wait_until("SELECT count(*) = 3 FROM pg_stat_activity WHERE wait_event_type = 'Lock'", "the reader waits")
    shop.pids["report-job"] = scene.blocked("report-job", "SELECT pg_sleep(3600)")
    for _ in range(POOL_SIZE - 1):  # the pool: order_app's other connections, idle; with the waiter, its limit
        scene.session("order", "order_app").execute("SELECT 1").fetchall()
    for conn in scene.conns[-(POOL_SIZE - 1) :]:
        conn.commit()
    running = "SELECT count(*) = 1 FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%' AND state = 'active'"
    scene.wait_until(running, "the report runs")


@pytest.fixture(scope="package")
def shop(postgres_primary: PgCluster, postgres_replica: PgCluster) -> Iterator[Shop]:
    scene = Scene(postgres_primary)
    scene.admin.execute(SETUP)
    _wal_and_slots(scene, postgres_replica)
    found = Shop(postgres_primary, postgres_replica)
    _sessions(scene, found)
    count = "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
    found.client_sessions = int(scene.admin.execute(count).fetchone()[0])  # type: ignore[index]
    yield found
    scene.end()
    with postgres_replica.connect(dbname="postgres", autocommit=True) as conn:
        conn.execute("SELECT pg_wal_replay_resume()")


def database_settings(shop: Shop, **overrides: Any) -> dict[str, Any]:
    """The [database] section over the shop: the primary (with its replica) and the replica, SQL only."""
    targets = {
        "shop-db": {"dsn": shop.primary.dsn(user="opsbot_ro"), "services": ["order"], "exporter": False,
                    "replicas": ["shop-db-replica"]},
        "shop-db-replica": {"dsn": shop.replica.dsn(user="opsbot_ro"), "exporter": False},
    }  # fmt: skip
    return {"targets": targets, **overrides}


@pytest.fixture
def shop_tools(shop: Shop) -> Callable[..., Toolbox]:
    """A toolbox over the shop, through the wiring (the [database] section as a team writes it)."""
    from bot import wiring

    def build(**overrides: Any) -> Toolbox:
        return wiring.build_toolbox(tool_settings(database=database_settings(shop, **overrides)))

    return build
