"""`opsbot sandbox up|down|status`: one scenario's data and its Prometheus under the sandbox folder.

    <dir>/data/          the built scenario (see bot/sandbox/data.py)
    <dir>/state.json     what is running: scenario, clock, Prometheus PID and URL
    <dir>/opsbot.env     OPSBOT_* settings that point opsbot at the sandbox (`set -a; . opsbot.env`)

`up` is idempotent: a healthy sandbox of the same scenario whose data still covers the clock is reused.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

import requests

from bot.sandbox.backends import BackendError, pid_alive, port_in_use, start_prometheus, stop_pid
from bot.sandbox.data import build_sandbox
from bot.sandbox.esindex import DEPLOYS_INDEX, ingest_elasticsearch
from bot.sandbox.scenario import load_scenario

log = logging.getLogger(__name__)

MIN_FUTURE = timedelta(minutes=15)  # rebuild when the data ends sooner than this after now (staleness)
# Extra catalogue entries the sandbox's series support ($label and $service are filled in by the tool).
SANDBOX_METRIC_TEMPLATES: dict[str, dict[str, str]] = {
    "memory_usage": {
        "promql": 'max(process_resident_memory_bytes{$label="$service"})',
        "unit": "bytes",
        "description": "resident memory of the largest pod",
        "role": "memory",
    },
    "restarts": {
        "promql": 'sum(increase(kube_pod_container_status_restarts_total{$label="$service"}[15m]))',
        "unit": "count",
        "description": "container restarts (e.g. OOM kills) in the last 15 minutes",
        "role": "restarts",
    },
}


class SandboxOptions(Protocol):
    """What the sandbox needs from Settings.sandbox (structural, so this package never imports bot.config)."""

    dir: Path
    scenario: str
    prometheus_port: int


@dataclass(frozen=True)
class SandboxInfo:
    """A running sandbox and the settings that point opsbot at it."""

    scenario: str
    now: datetime
    incident_at: datetime
    prometheus_url: str
    prometheus_pid: int
    logs_db: Path
    git_repo: Path
    topology: dict[str, list[str]]
    env_path: Path
    data_end: datetime
    es_url: str = ""
    already_running: bool = False
    metric_templates: dict[str, dict[str, str]] = field(default_factory=lambda: dict(SANDBOX_METRIC_TEMPLATES))

    def env(self, base_metrics: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, str]:
        """OPSBOT_* variables; base_metrics is the configured catalogue the sandbox's templates extend."""
        values = {
            "OPSBOT_PROMETHEUS__URL": self.prometheus_url,
            "OPSBOT_PROMETHEUS__METRICS": json.dumps({**(base_metrics or {}), **self.metric_templates}),
            "OPSBOT_TOPOLOGY": json.dumps(self.topology),
            "OPSBOT_LOGS__BACKEND": "elasticsearch" if self.es_url else "sqlite",
            "OPSBOT_LOGS__SQLITE_PATH": str(self.logs_db),
            "OPSBOT_DEPLOYS__BACKEND": "elasticsearch" if self.es_url else "git",
            "OPSBOT_DEPLOYS__GIT_REPO": str(self.git_repo),
            "OPSBOT_SANDBOX__SCENARIO": self.scenario,
        }
        if self.es_url:
            values |= {
                "OPSBOT_ELASTICSEARCH__URL": self.es_url,
                "OPSBOT_ELASTICSEARCH__PLAIN_JSON": "true",
                "OPSBOT_DEPLOYS__INDEX": DEPLOYS_INDEX,
            }
        return values


def ensure_sandbox(
    options: SandboxOptions,
    scenario: str | None = None,
    *,
    es_url: str = "",
    es_client_factory: Any = None,
    base_metrics: Mapping[str, Mapping[str, Any]] | None = None,
) -> SandboxInfo:
    """Bring the sandbox up if it is not running (healthy, same scenario, fresh data); return where it is."""
    return sandbox_up(
        options.dir, scenario or options.scenario, options.prometheus_port,
        es_url=es_url, es_client_factory=es_client_factory, base_metrics=base_metrics,
    )


def sandbox_up(
    sandbox_dir: Path,
    scenario: str,
    prometheus_port: int,
    *,
    es_url: str = "",
    es_client_factory: Any = None,
    base_metrics: Mapping[str, Mapping[str, Any]] | None = None,
    now: datetime | None = None,
) -> SandboxInfo:
    """Build `scenario` and start its Prometheus, unless an identical healthy sandbox is already running.

    es_client_factory(url) -> Elasticsearch is required with es_url (the CLI passes wiring's factory).
    """
    sandbox_dir = sandbox_dir.resolve()  # the PID check matches this path in Prometheus' command line
    current = read_state(sandbox_dir)
    if current is not None and _reusable(current, scenario, prometheus_port, es_url):
        log.info("sandbox %s already running at %s", scenario, current.prometheus_url)
        return replace(current, already_running=True)
    sandbox_down(sandbox_dir)
    if port_in_use(prometheus_port):  # fail before spending seconds on a build
        raise BackendError(f"port {prometheus_port} is in use on 127.0.0.1: free it or set another prometheus_port")
    data = build_sandbox(load_scenario(scenario), sandbox_dir / "data", now)
    proc = start_prometheus(data.prometheus_data, prometheus_port)
    if es_url:
        if es_client_factory is None:
            raise ValueError("es_url given without an es_client_factory")
        ingest_elasticsearch(es_client_factory(es_url), data)
    info = SandboxInfo(
        scenario=scenario, now=data.now, incident_at=data.incident_at, prometheus_url=proc.url,
        prometheus_pid=proc.pid, logs_db=data.logs_db, git_repo=data.git_repo, topology=data.topology,
        env_path=sandbox_dir / "opsbot.env", data_end=data.data_end, es_url=es_url,
    )
    write_state(sandbox_dir, info)
    write_env_file(info, base_metrics)
    return info


def sandbox_down(sandbox_dir: Path) -> bool:
    """Stop the sandbox's Prometheus by its recorded PID and remove its data; False when nothing ran."""
    sandbox_dir = sandbox_dir.resolve()
    current = read_state(sandbox_dir)
    stopped = False
    if current is not None and _is_our_prometheus(current.prometheus_pid, sandbox_dir):
        stop_pid(current.prometheus_pid)
        stopped = True
    (sandbox_dir / "state.json").unlink(missing_ok=True)
    (sandbox_dir / "opsbot.env").unlink(missing_ok=True)  # it would point at a server that is gone
    shutil.rmtree(sandbox_dir / "data", ignore_errors=True)
    return stopped


def sandbox_status(sandbox_dir: Path) -> tuple[SandboxInfo | None, str]:
    """The recorded sandbox (if any) and a one-line health verdict."""
    sandbox_dir = sandbox_dir.resolve()
    current = read_state(sandbox_dir)
    if current is None:
        return None, "not running"
    if not _is_our_prometheus(current.prometheus_pid, sandbox_dir):
        return current, f"stopped (Prometheus pid {current.prometheus_pid} is gone)"
    if not _ready(current.prometheus_url):
        return current, f"unhealthy ({current.prometheus_url}/-/ready does not answer)"
    if current.data_end - datetime.now(UTC) < MIN_FUTURE:
        return current, "stale (the data ends before now; run `opsbot sandbox up` to rebuild)"
    return current, "running"


def write_env_file(info: SandboxInfo, base_metrics: Mapping[str, Mapping[str, Any]] | None = None) -> Path:
    """Write opsbot.env (single-quoted values: readable by `. file` in a shell and by dotenv)."""
    lines = [f"# written by `opsbot sandbox up` for scenario {info.scenario} (clock {info.now:%Y-%m-%d %H:%M} UTC)"]
    lines += [f"{key}='{value}'" for key, value in info.env(base_metrics).items()]
    info.env_path.write_text("\n".join(lines) + "\n")
    return info.env_path


def write_state(sandbox_dir: Path, info: SandboxInfo) -> None:
    state = {k: (str(v) if isinstance(v, Path) else v.isoformat() if isinstance(v, datetime) else v)
             for k, v in asdict(info).items()}
    sandbox_dir.mkdir(parents=True, exist_ok=True)
    (sandbox_dir / "state.json").write_text(json.dumps(state, indent=2))


def read_state(sandbox_dir: Path) -> SandboxInfo | None:
    path = sandbox_dir / "state.json"
    if not path.exists():
        return None
    try:
        raw = json.loads(path.read_text())
        for key in ("now", "incident_at", "data_end"):
            raw[key] = datetime.fromisoformat(raw[key])
        for key in ("logs_db", "git_repo", "env_path"):
            raw[key] = Path(raw[key])
        return SandboxInfo(**raw)
    except (ValueError, KeyError, TypeError) as exc:
        log.warning("ignoring unreadable sandbox state %s: %s", path, exc)
        return None


def _reusable(current: SandboxInfo, scenario: str, port: int, es_url: str) -> bool:
    return (
        current.scenario == scenario and current.prometheus_url.endswith(f":{port}") and current.es_url == es_url
        and sandbox_status(current.env_path.parent)[1] == "running"
    )


def _is_our_prometheus(pid: int, sandbox_dir: Path) -> bool:
    """The PID is alive AND is a Prometheus over our data (a recycled PID must never be killed)."""
    if not pid_alive(pid):
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False
    return "prometheus" in cmdline and str(sandbox_dir.resolve()) in cmdline


def _ready(url: str) -> bool:
    try:
        return requests.get(f"{url}/-/ready", timeout=2.0).status_code == 200
    except requests.RequestException:
        return False
