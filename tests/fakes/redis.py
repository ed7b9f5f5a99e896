"""A real redis-server (Debian's package) on a free loopback port, with its own temp dir, stopped by PID.

Fixtures:
    redis_server   session scope: one server for the whole run -> RunningRedis
    redis_url      function scope: a fresh logical database's URL, flushed before the test (db 1..15 in turn)
"""

from __future__ import annotations

import itertools
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.sandbox.backends import BackendError, Proc, free_port


@dataclass(frozen=True)
class RunningRedis:
    proc: Proc
    port: int

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"


def start_redis(workdir: Path, port: int | None = None, timeout_s: float = 10.0) -> RunningRedis:
    """Start redis-server without persistence on 127.0.0.1; wait until it answers PING."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise BackendError("redis-server is not installed: run `bash deploy/dev.sh check` (it apt-installs it)")
    port = port or free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    log_path = workdir / "redis.log"
    cmd = [
        binary,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        str(workdir),
        "--save",
        "",
        "--appendonly",
        "no",
        "--databases",
        "16",
        "--logfile",
        str(log_path),
    ]
    if shutil.which("setpriv"):
        cmd = ["setpriv", "--pdeathsig", "TERM", "--", *cmd]
    popen = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    proc = Proc(popen.pid, f"redis://127.0.0.1:{port}", log_path, popen)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and popen.poll() is None:
        if _pong(port):
            return RunningRedis(proc, port)
        time.sleep(0.05)
    proc.stop()
    raise BackendError(f"redis-server did not answer on port {port}: {_tail(log_path)}")


def _pong(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _tail(path: Path) -> str:
    return path.read_text(errors="replace")[-500:] if path.exists() else ""


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningRedis]:
    server = start_redis(tmp_path_factory.mktemp("redis"))
    yield server
    server.proc.stop()


_DBS = itertools.cycle(range(1, 16))


@pytest.fixture
def redis_url(redis_server: RunningRedis) -> str:
    """A flushed logical database of the session's server (tests never share keys)."""
    import redis

    url = redis_server.url(next(_DBS))
    client = redis.Redis.from_url(url)
    client.flushdb()
    client.close()
    return url
