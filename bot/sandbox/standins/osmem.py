"""The sandbox's own Elasticsearch stand-in: `opsbot sandbox up --es local` runs osmem-server on loopback.

<dir>/osmem.json records the server's PID and URL, so `sandbox down` stops it (by that PID, only after
checking the PID is still an osmem-server on that port) and a later `up` reuses it while it is healthy.
osmem-server keeps its indices in memory: a freshly started one is empty and must be loaded again.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import requests

from bot.sandbox.backends import BackendError, pid_alive, port_in_use, start_osmem, stop_pid

log = logging.getLogger(__name__)

LOCAL_ES = "local"  # the `--es` value that asks for the bundled osmem-server
STATE_FILE = "osmem.json"


@dataclass(frozen=True)
class LocalSearch:
    """The sandbox's osmem-server: where it listens, its PID, and whether this call started it (it is empty)."""

    url: str
    pid: int
    started: bool = False


def ensure_local_search(sandbox_dir: Path, port: int) -> LocalSearch:
    """The sandbox's osmem-server on 127.0.0.1:port: the recorded one when healthy, else a new one (recorded)."""
    sandbox_dir = sandbox_dir.resolve()
    current = read_local_search(sandbox_dir)
    if current is not None and current.url.endswith(f":{port}") and _healthy(current):
        return current
    stop_local_search(sandbox_dir)
    if port_in_use(port):
        raise BackendError(f"port {port} is in use on 127.0.0.1: free it or set OPSBOT_SANDBOX__OSMEM_PORT")
    sandbox_dir.mkdir(parents=True, exist_ok=True)
    proc = start_osmem(port, log_dir=sandbox_dir)
    search = LocalSearch(proc.url, proc.pid, started=True)
    (sandbox_dir / STATE_FILE).write_text(json.dumps({"url": search.url, "pid": search.pid}))
    log.info("sandbox osmem-server started at %s (pid %d)", search.url, search.pid)
    return search


def stop_local_search(sandbox_dir: Path) -> bool:
    """Stop the recorded osmem-server by its PID and forget it; False when none was running."""
    sandbox_dir = sandbox_dir.resolve()
    current = read_local_search(sandbox_dir)
    (sandbox_dir / STATE_FILE).unlink(missing_ok=True)
    if current is None or not _is_our_osmem(current):
        return False
    stop_pid(current.pid)
    return True


def read_local_search(sandbox_dir: Path) -> LocalSearch | None:
    """The recorded osmem-server, if any (alive or not)."""
    path = sandbox_dir / STATE_FILE
    if not path.exists():
        return None
    try:
        raw = json.loads(path.read_text())
        return LocalSearch(url=str(raw["url"]), pid=int(raw["pid"]))
    except (ValueError, KeyError, TypeError) as exc:
        log.warning("ignoring unreadable osmem state %s: %s", path, exc)
        return None


def local_search_status(search: LocalSearch) -> str:
    """One line for `sandbox status`."""
    state = "running" if _healthy(search) else "gone" if not _is_our_osmem(search) else "not answering"
    return f"{search.url} (osmem-server pid {search.pid}, {state})"


def _healthy(search: LocalSearch) -> bool:
    if not _is_our_osmem(search):
        return False
    try:
        return requests.get(search.url, timeout=2.0).status_code == 200
    except requests.RequestException:
        return False


def _is_our_osmem(search: LocalSearch) -> bool:
    """The PID is alive AND is an osmem-server on the recorded address (a recycled PID is never stopped)."""
    if not pid_alive(search.pid):
        return False
    try:
        cmdline = Path(f"/proc/{search.pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False
    address = search.url.removeprefix("http://")
    return "osmem" in cmdline and address in cmdline
