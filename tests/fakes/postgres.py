"""A real PostgreSQL (Debian's package) in a private cluster: initdb into a temp dir, the server on a free port with its
unix socket in that dir (no TCP), stopped by PID at the end; and a streaming replica made from it by pg_basebackup.

Fixtures (session scope):
    postgres_primary   the primary (wal_level=logical, max_connections=20) -> PgCluster
    postgres_replica   a streaming replica of it, through a physical slot (started on first use) -> PgCluster

Postgres refuses to run as root: as root (CI), initdb and the servers run as the `postgres` user Debian's package
creates, in a temp dir under /tmp that user owns (pytest's own temp dirs are root's, mode 0700). The servers die
with the test session when it is killed (PR_SET_PDEATHSIG) and are stopped by PID (fast shutdown) otherwise.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from bot.sandbox.backends import BackendError, free_port, stop_pid

SERVER_SETTINGS = {
    "listen_addresses": "",  # the unix socket only
    "wal_level": "logical",
    "max_connections": "20",
    "max_wal_senders": "5",
    "max_replication_slots": "5",
    "shared_buffers": "16MB",
    "fsync": "off",  # a throwaway cluster: durability buys nothing here
    "synchronous_commit": "off",
    "wal_keep_size": "0",
    "max_wal_size": "1GB",
}


def pg_bindir() -> Path:
    """The newest /usr/lib/postgresql/<version>/bin that has initdb (Debian's layout)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name))
    if not found:
        raise BackendError("PostgreSQL is not installed: run `bash deploy/dev.sh check` (it apt-installs postgresql)")
    return found[-1].parent


@dataclass
class PgCluster:
    """One running server of a private cluster."""

    name: str
    datadir: Path
    sockdir: Path
    port: int
    popen: subprocess.Popen[bytes]

    def dsn(self, user: str = "postgres", dbname: str = "shop", **extra: str) -> str:
        params = {"host": str(self.sockdir), "port": str(self.port), "user": user, "dbname": dbname, **extra}
        return " ".join(f"{k}={v}" for k, v in params.items())

    def connect(self, application: str = "", dbname: str = "shop", **kwargs: Any) -> psycopg.Connection[Any]:
        return psycopg.connect(self.dsn(dbname=dbname), application_name=application, **kwargs)

    def stop(self) -> None:
        """Fast shutdown (SIGINT: clients are disconnected), then the house's TERM/KILL by PID."""
        if self.popen.poll() is None:
            os.kill(self.popen.pid, signal.SIGINT)
            try:
                self.popen.wait(timeout=15)
            except subprocess.TimeoutExpired:
                stop_pid(self.popen.pid)
        self.popen.poll()


def _owner() -> dict[str, Any]:
    """Popen's user/group arguments: the `postgres` user when we are root, nothing otherwise."""
    if os.geteuid() != 0:
        return {}
    entry = pwd.getpwnam("postgres")
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def private_dir() -> Path:
    """A temp dir the server's user owns (its data dirs and sockets go in it)."""
    root = Path(tempfile.mkdtemp(prefix="opsbot-pg-"))
    owner = _owner()
    if owner:
        os.chown(root, owner["user"], owner["group"])
    return root


def run_tool(args: list[str], log: Path) -> None:
    """Run initdb or pg_basebackup as the server's user; BackendError with its output when it fails."""
    with log.open("ab") as out:
        done = subprocess.run(args, stdout=out, stderr=subprocess.STDOUT, cwd="/", check=False, **_owner())
    if done.returncode != 0:
        raise BackendError(f"{Path(args[0]).name} failed ({done.returncode}): {log.read_text()[-600:]}")


def start_server(name: str, root: Path, datadir: Path, settings: dict[str, str], timeout_s: float = 60.0) -> PgCluster:
    """Run `postgres` over datadir on a free port, its socket in root; wait until it accepts connections."""
    port = free_port()
    cmd = [str(pg_bindir() / "postgres"), "-D", str(datadir), "-p", str(port), "-k", str(root)]
    for key, value in settings.items():
        cmd += ["-c", f"{key}={value}"]
    if shutil.which("setpriv"):
        cmd = ["setpriv", "--pdeathsig", "TERM", "--", *cmd]
    log = root / f"{name}.log"
    with log.open("ab") as out:
        popen = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd="/", **_owner()
        )
    cluster = PgCluster(name, datadir, root, port, popen)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and popen.poll() is None:
        try:
            psycopg.connect(cluster.dsn(dbname="postgres"), connect_timeout=2).close()
            return cluster
        except psycopg.OperationalError:
            time.sleep(0.1)
    cluster.stop()
    raise BackendError(f"postgres ({name}) did not start: {log.read_text()[-600:]}")


def start_primary(root: Path) -> PgCluster:
    datadir = root / "primary"
    initdb = [str(pg_bindir() / "initdb"), "-D", str(datadir), "-A", "trust", "-U", "postgres", "--no-sync"]
    run_tool([*initdb, "-E", "UTF8", "--locale=C"], root / "initdb.log")
    cluster = start_server("primary", root, datadir, SERVER_SETTINGS)
    with psycopg.connect(cluster.dsn(dbname="postgres"), autocommit=True) as conn:
        conn.execute("CREATE DATABASE shop")
    return cluster


def start_replica(primary: PgCluster, slot: str = "shop_replica") -> PgCluster:
    """A streaming standby of `primary` through a physical slot, named by its cluster_name (its application_name in
    the primary's pg_stat_replication)."""
    datadir = primary.sockdir / "replica"
    backup = [
        str(pg_bindir() / "pg_basebackup"),
        "-D",
        str(datadir),
        "-h",
        str(primary.sockdir),
        "-p",
        str(primary.port),
    ]
    run_tool([*backup, "-U", "postgres", "-X", "stream", "-R", "-C", "-S", slot, "-c", "fast", "--no-sync"],
             primary.sockdir / "basebackup.log")  # fmt: skip
    return start_server("replica", primary.sockdir, datadir, {**SERVER_SETTINGS, "cluster_name": slot})


@pytest.fixture(scope="session")
def postgres_root() -> Iterator[Path]:
    root = private_dir()
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_primary(postgres_root: Path) -> Iterator[PgCluster]:
    cluster = start_primary(postgres_root)
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def postgres_replica(postgres_primary: PgCluster) -> Iterator[PgCluster]:
    replica = start_replica(postgres_primary)
    yield replica
    replica.stop()
