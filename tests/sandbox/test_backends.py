"""Local server processes: started on loopback, stopped by PID, never outliving a test session."""

from __future__ import annotations

import subprocess
import sys
import time

from bot.sandbox.backends import Proc, pid_alive, start_prometheus
from tests.fakes.backends import free_port

STARTER = """
import sys
from pathlib import Path
from bot.sandbox.backends import start_prometheus
proc = start_prometheus(Path(sys.argv[1]), int(sys.argv[2]), die_with_parent=True)
print(proc.pid, flush=True)
sys.stdin.read()
"""


def _wait_gone(pid: int, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not pid_alive(pid)


def test_prometheus_started_for_tests_dies_when_its_starter_is_killed(tmp_path):
    data = tmp_path / "prometheus" / "data"
    data.mkdir(parents=True)
    starter = subprocess.Popen(
        [sys.executable, "-c", STARTER, str(data), str(free_port())],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert starter.stdout is not None
    server_pid = int(starter.stdout.readline())
    assert pid_alive(server_pid)
    starter.kill()
    starter.wait()
    assert _wait_gone(server_pid), "Prometheus outlived the killed process that started it"


def test_stop_ends_the_server_and_is_idempotent(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    proc: Proc = start_prometheus(data, free_port())
    assert proc.alive()
    proc.stop()
    assert not proc.alive()
    proc.stop()
