"""Local backends for the sandbox: a real Prometheus (Debian package, backfilled by promtool) and osmem.

Each server is a plain child process bound to 127.0.0.1 that we stop by its PID. Readiness is checked over
HTTP and then against our own process, because an older instance holding the port also answers "ready".
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import requests

log = logging.getLogger(__name__)

PROMETHEUS_CONFIG = "global:\n  scrape_interval: 15s\nscrape_configs: []\n"  # never scrape: data is backfilled


class BackendError(RuntimeError):
    """A local backend could not be installed, filled or started; the message says what to do."""


@dataclass(frozen=True)
class Proc:
    """A server process we started: its PID, URL and log file."""

    pid: int
    url: str
    log_path: Path
    popen: subprocess.Popen[bytes] | None = None

    def alive(self) -> bool:
        return pid_alive(self.pid)

    def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM, wait, then SIGKILL; a no-op when it has already exited."""
        stop_pid(self.pid, timeout_s)
        if self.popen is not None:
            self.popen.poll()  # reap, so no zombie stays behind


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ")[-1].startswith("Z"))


def stop_pid(pid: int, timeout_s: float = 10.0) -> None:
    """Stop one process by PID (never by name)."""
    if not pid_alive(pid):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while pid_alive(pid) and time.monotonic() < deadline:
        _reap(pid)
        time.sleep(0.05)
    if pid_alive(pid):
        log.warning("pid %d ignored SIGTERM for %.0f s; killing it", pid, timeout_s)
        os.kill(pid, signal.SIGKILL)
        _reap(pid)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):  # not our child, e.g. started by an earlier `sandbox up`
        os.waitpid(pid, os.WNOHANG)


def ensure_prometheus_installed() -> None:
    """Install Debian's prometheus (server + promtool) with apt-get when either is missing."""
    if shutil.which("prometheus") and shutil.which("promtool"):
        return
    if shutil.which("apt-get") is None:
        raise BackendError("prometheus/promtool not found and apt-get is unavailable: install Prometheus 2.39+")
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    log.info("installing Debian's prometheus package (apt-get)")
    install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "prometheus"]
    for cmd in (["apt-get", "update", "-qq"], install):
        done = subprocess.run([*sudo, *cmd], env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise BackendError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    if not (shutil.which("prometheus") and shutil.which("promtool")):
        raise BackendError("apt-get installed prometheus but prometheus/promtool are still not on PATH")


def backfill(openmetrics_path: Path, data_dir: Path) -> None:
    """Write TSDB blocks from an OpenMetrics file into data_dir (before the server starts)."""
    ensure_prometheus_installed()
    data_dir.mkdir(parents=True, exist_ok=True)
    # A few large blocks instead of 2-hour ones: measured 3-6x faster to write, and queried the same.
    cmd = [
        "promtool",
        "tsdb",
        "create-blocks-from",
        "openmetrics",
        "--quiet",
        "--max-block-duration=72h",
        str(openmetrics_path),
        str(data_dir),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BackendError(f"promtool backfill failed: {(done.stderr or done.stdout).strip()[-600:]}")


def start_prometheus(
    data_dir: Path, port: int, *, ready_timeout_s: float = 30.0, die_with_parent: bool = False
) -> Proc:
    """Run Prometheus over data_dir on 127.0.0.1:port with our own config and a 90-day retention.

    die_with_parent: the kernel stops the server when the starting thread dies (test sessions: a killed
    pytest leaks no server); without it the server outlives its starter (`opsbot sandbox up`).
    """
    ensure_prometheus_installed()
    config = data_dir.parent / "prometheus.yml"
    config.write_text(PROMETHEUS_CONFIG)
    log_path = data_dir.parent / "prometheus.log"
    cmd = [
        "prometheus",
        f"--config.file={config}",
        f"--storage.tsdb.path={data_dir}",
        # retention counts from the newest block: keep a long one so no backfilled block is dropped at start
        "--storage.tsdb.retention.time=90d",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    return spawn_server(cmd, f"http://127.0.0.1:{port}", "/-/ready", log_path, ready_timeout_s, die_with_parent)


def start_osmem(
    port: int,
    seed_dir: Path | None = None,
    *,
    ready_timeout_s: float = 15.0,
    die_with_parent: bool = False,
    log_dir: Path | None = None,
) -> Proc:
    """Run osmem-server (the OpenSearch-compatible stand-in) on 127.0.0.1:port, optionally seeded.

    Its log goes to log_dir, else next to seed_dir, else to $TMPDIR.
    """
    try:
        import osmem_server
    except ImportError as exc:
        raise BackendError(
            "osmem-server is not installed (it is a dev dependency: pip install osmem-server, or "
            "pip install -e '.[dev]'); or give the URL of an Elasticsearch you run yourself"
        ) from exc
    cmd = [str(osmem_server.resolve_binary()), "--addr", f"127.0.0.1:{port}", "--no-stdin-watch", "--no-ja"]
    if seed_dir is not None:
        cmd += ["--seed", str(seed_dir)]
    if log_dir is None:
        log_dir = seed_dir.parent if seed_dir is not None else Path(os.environ.get("TMPDIR", "/tmp"))
    log_path = log_dir / f"osmem-{port}.log"
    return spawn_server(cmd, f"http://127.0.0.1:{port}", "/", log_path, ready_timeout_s, die_with_parent)


def free_port() -> int:
    """An ephemeral port that was free a moment ago on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_in_use(port: int) -> bool:
    """Something already accepts connections on 127.0.0.1:port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def spawn_server(
    cmd: list[str], url: str, ready_path: str, log_path: Path, timeout_s: float, die_with_parent: bool, name: str = ""
) -> Proc:
    """Start `cmd` in its own session, logging to log_path, and wait until url+ready_path answers 200."""
    port, name = int(url.rsplit(":", 1)[1]), name or Path(cmd[0]).name
    if die_with_parent and shutil.which("setpriv"):
        # util-linux's setpriv sets PR_SET_PDEATHSIG and execs the server: same PID, no preexec_fn in a
        # threaded parent
        cmd = ["setpriv", "--pdeathsig", "TERM", "--", *cmd]
    if port_in_use(port):  # else a readiness check could be answered by whoever holds the port
        raise BackendError(f"port {port} is already in use on 127.0.0.1; stop that process or choose another port")
    with log_path.open("ab") as out:
        # own session: a Ctrl-C meant for the CLI that started it must not kill a server meant to outlive it
        popen = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    proc = Proc(popen.pid, url, log_path, popen)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if popen.poll() is not None:
            break
        if _answers(url + ready_path):
            # the port answered; make sure it is OUR process and not an old one holding the port
            time.sleep(0.05)
            if popen.poll() is None:
                log.info("%s ready at %s (pid %d)", name, url, popen.pid)
                return proc
            break
        time.sleep(0.05)
    proc.stop()
    tail = log_path.read_text(errors="replace")[-800:] if log_path.exists() else ""
    raise BackendError(f"{name} did not become ready at {url} (exit {popen.poll()}): {tail}")


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=1.0).status_code == 200
    except requests.RequestException:
        return False
