"""`opsbot sandbox up|down|status`: one scenario's data and its Prometheus under the sandbox folder.

    <dir>/data/          the built scenario (see bot/sandbox/data.py); data/kubeconfig for its Kubernetes API
    <dir>/state.json     what is running: scenario, clock, Prometheus (and stand-in) PIDs and URLs
    <dir>/opsbot.env     OPSBOT_* settings that point opsbot at the sandbox (`set -a; . opsbot.env`)

`up` is idempotent: a healthy sandbox of the same scenario whose data still covers the clock is reused.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

import requests

from bot.sandbox.backends import BackendError, free_port, pid_alive, port_in_use, start_prometheus, stop_pid
from bot.sandbox.data import SandboxData, build_sandbox
from bot.sandbox.esindex import ingest_elasticsearch
from bot.sandbox.exporters.postgres import database_targets
from bot.sandbox.scenario import load_scenario
from bot.sandbox.standins.kubeapi import write_kubeconfig
from bot.sandbox.standins.launch import is_our_standin, start_standin
from bot.sandbox.state import SANDBOX_METRIC_TEMPLATES, SandboxInfo, read_state, write_env_file, write_state

__all__ = [
    "SANDBOX_METRIC_TEMPLATES",
    "SandboxInfo",
    "ensure_sandbox",
    "read_state",
    "sandbox_down",
    "sandbox_status",
    "sandbox_up",
    "write_state",
]

log = logging.getLogger(__name__)

MIN_FUTURE = timedelta(minutes=15)  # rebuild when the data ends sooner than this after now (staleness)


class SandboxOptions(Protocol):
    """What the sandbox needs from Settings.sandbox (structural, so this package never imports bot.config)."""

    dir: Path
    scenario: str
    prometheus_port: int


def ensure_sandbox(
    options: SandboxOptions,
    scenario: str | None = None,
    *,
    es_url: str = "",
    es_client_factory: Any = None,
    base_metrics: Mapping[str, Mapping[str, Any]] | None = None,
    loki: bool = False,
) -> SandboxInfo:
    """Bring the sandbox up if it is not running (healthy, same scenario, fresh data); return where it is."""
    return sandbox_up(
        options.dir,
        scenario or options.scenario,
        options.prometheus_port,
        es_url=es_url,
        es_client_factory=es_client_factory,
        base_metrics=base_metrics,
        loki=loki,
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
    loki: bool = False,
) -> SandboxInfo:
    """Build `scenario` and start its Prometheus, unless an identical healthy sandbox is already running.

    es_client_factory(url) -> Elasticsearch is required with es_url (the CLI passes wiring's factory). A scenario
    with a [kubernetes] block gets its Kubernetes API stand-in; loki=True serves the logs from a Loki stand-in.
    """
    sandbox_dir = sandbox_dir.resolve()  # the PID check matches this path in Prometheus' command line
    current = read_state(sandbox_dir)
    if current is not None and _reusable(current, scenario, prometheus_port, es_url, loki):
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
        scenario=scenario,
        now=data.now,
        incident_at=data.incident_at,
        prometheus_url=proc.url,
        prometheus_pid=proc.pid,
        logs_db=data.logs_db,
        git_repo=data.git_repo,
        topology=data.topology,
        env_path=sandbox_dir / "opsbot.env",
        data_end=data.data_end,
        es_url=es_url,
        runbooks_dir=str(data.runbooks_dir),
        databases=database_targets(data.scenario),
        **_standins(data, loki),
    )
    write_state(sandbox_dir, info)
    write_env_file(info, base_metrics)
    return info


def _standins(data: SandboxData, loki: bool) -> dict[str, Any]:
    """Start the stand-ins the scenario needs (on free ports): SandboxInfo fields."""
    fields: dict[str, Any] = {}
    if data.cluster_json is not None and data.scenario.kubernetes is not None:
        kube = start_standin("kubeapi", data.cluster_json, free_port())
        namespace = data.scenario.kubernetes.namespace
        config = write_kubeconfig(data.workdir / "kubeconfig", kube.url, namespace=namespace)
        fields |= {
            "kubeconfig": str(config),
            "kube_namespace": namespace,
            "kubeapi_pid": kube.pid,
            "kube_namespaces": list(data.scenario.kube_namespaces),
        }
    if loki:
        proc = start_standin("loki", data.logs_jsonl, free_port())
        fields |= {"loki_url": proc.url, "loki_pid": proc.pid}
    return fields


def sandbox_down(sandbox_dir: Path) -> bool:
    """Stop the sandbox's Prometheus by its recorded PID and remove its data; False when nothing ran."""
    sandbox_dir = sandbox_dir.resolve()
    current = read_state(sandbox_dir)
    stopped = False
    if current is not None and _is_our_prometheus(current.prometheus_pid, sandbox_dir):
        stop_pid(current.prometheus_pid)
        stopped = True
    for pid in (current.kubeapi_pid, current.loki_pid) if current is not None else ():
        if is_our_standin(pid, sandbox_dir):
            stop_pid(pid)
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
    gone = [
        name
        for name, pid in (("Kubernetes API", current.kubeapi_pid), ("Loki", current.loki_pid))
        if pid and not is_our_standin(pid, sandbox_dir)
    ]
    if gone:
        return current, f"stopped ({' and '.join(gone)} stand-in is gone)"
    if current.data_end - datetime.now(UTC) < MIN_FUTURE:
        return current, "stale (the data ends before now; run `opsbot sandbox up` to rebuild)"
    return current, "running"


def _reusable(current: SandboxInfo, scenario: str, port: int, es_url: str, loki: bool) -> bool:
    return (
        current.scenario == scenario
        and current.prometheus_url.endswith(f":{port}")
        and current.es_url == es_url
        and bool(current.loki_url) == loki
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
