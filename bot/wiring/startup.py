"""What `opsbot serve` checks on the machine it starts on, before it takes any work, and the fleet check of doctor.

Settings already refuse a malformed URL or port (bot/config/checks.py). What only this machine can answer is
checked here, one line per problem naming the variable to fix:
- the paths serve writes or must read: the SQLite trace store's folder (created when missing, and writable), the
  SQLite logs file and the git deploy repository (of the right kind when they exist), runbooks and a retrained
  intent model (they must exist);
- the Redis URL's form (checked here, not in Settings, so the line never echoes a password);
- the address the server listens on.

`check_replicas` is the doctor check (and so serve's) for a fleet: replicas share no disk, so more than one replica
needs Redis for the jobs and their steps in flight, and the Elasticsearch store for the finished traces.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from bot.config import Settings
from bot.config.checks import REDIS_SCHEMES, url_problem
from bot.wiring.doctor import CheckResult


def startup_problems(settings: Settings) -> list[str]:
    """Every setting serve cannot use on this machine, one line each ([] when it can start)."""
    return [
        *_path_problems(settings),
        *_redis_problems(settings),
        *_listen_problems(settings.server.host, settings.server.port),
    ]


def check_replicas(settings: Settings) -> CheckResult:
    """More than one replica needs Redis and a shared trace store: a node's SQLite file is on its own disk only."""
    n, store = settings.server.replicas, settings.store.backend
    if n <= 1:
        return CheckResult("replicas", "ok", f"one replica (OPSBOT_SERVER__REPLICAS=1), traces in {store}")
    missing = []
    if store == "sqlite":
        missing.append(
            "OPSBOT_STORE__BACKEND=sqlite keeps each replica's traces on its own disk: set OPSBOT_STORE__BACKEND="
            "elasticsearch (and OPSBOT_ELASTICSEARCH__URL)"
        )
    if not settings.redis.url.get_secret_value():
        missing.append("no OPSBOT_REDIS__URL: replicas share their jobs, steps in flight and dedupe there")
    if missing:
        return CheckResult("replicas", "fail", f"OPSBOT_SERVER__REPLICAS={n}: " + "; ".join(missing))
    return CheckResult("replicas", "ok", f"{n} replicas sharing Redis and the Elasticsearch trace store")


def _path_problems(settings: Settings) -> list[str]:
    problems = []
    if settings.store.backend == "sqlite":
        problems += _writable_file("OPSBOT_STORE__SQLITE_PATH", settings.store.sqlite_path.expanduser())
    if settings.logs.backend == "sqlite":
        problems += _kind("OPSBOT_LOGS__SQLITE_PATH", settings.logs.sqlite_path.expanduser(), dir_=False)
    if settings.deploys.source == "git":
        problems += _kind("OPSBOT_DEPLOYS__GIT_REPO", settings.deploys.git_repo.expanduser(), dir_=True)
    if settings.runbooks.enabled and not settings.runbooks.path.expanduser().exists():
        problems.append(f"OPSBOT_RUNBOOKS__PATH={settings.runbooks.path}: does not exist (runbooks are enabled)")
    model = settings.intent.model_path
    if model is not None and not model.expanduser().is_file():
        problems.append(f"OPSBOT_INTENT__MODEL_PATH={model}: not a file")
    return problems


def _writable_file(name: str, path: Path) -> list[str]:
    if path.exists():
        return [] if path.is_file() and os.access(path, os.W_OK) else [f"{name}={path}: not a writable file"]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return [f"{name}={path}: its folder cannot be created ({exc.strerror or exc})"]
    if not os.access(path.parent, os.W_OK):
        return [f"{name}={path}: its folder {path.parent} is not writable"]
    return []


def _kind(name: str, path: Path, *, dir_: bool) -> list[str]:
    """A path that may be missing (doctor warns then), but not of the wrong kind."""
    if not path.exists() or path.is_dir() == dir_:
        return []
    return [f"{name}={path}: is a {'file' if dir_ else 'folder'}, expected a {'folder' if dir_ else 'file'}"]


def _redis_problems(settings: Settings) -> list[str]:
    url = settings.redis.url.get_secret_value()
    problem = url_problem(url, REDIS_SCHEMES) if url.strip() else ""
    return [f"OPSBOT_REDIS__URL: {problem}"] if problem else []


def _listen_problems(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return [f"OPSBOT_SERVER__HOST={host}: not an address this machine can listen on ({exc.strerror})"]
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as waitress binds: a TIME_WAIT is no problem
        try:
            probe.bind(address)
        except OSError as exc:
            return [f"OPSBOT_SERVER__PORT={port}: cannot listen on {host}:{port} ({exc.strerror or exc})"]
    return []
