"""`opsbot sandbox up` with a scenario that has a cluster (and --loki): the stand-ins run as child processes,
opsbot.env turns the toolsets on, `opsbot toolsets` reads them, and `down` stops them by PID."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime, timedelta

import requests
from typer.testing import CliRunner

from bot.cli import app
from bot.config import Settings
from bot.sandbox.backends import pid_alive
from bot.sandbox.control import SandboxInfo, read_state, sandbox_down, write_state
from bot.wiring import sandbox_overrides
from tests.fakes.backends import free_port


def _env_file(path) -> dict[str, str]:
    lines = [line for line in path.read_text().splitlines() if line and not line.startswith("#")]
    return {key: value.strip("'") for key, value in (line.split("=", 1) for line in lines)}


def test_up_serves_the_cluster_and_loki_and_down_stops_them(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPSBOT_SANDBOX__DIR", str(tmp_path / "sandbox"))
    monkeypatch.setenv("OPSBOT_SANDBOX__PROMETHEUS_PORT", str(free_port()))
    run = CliRunner()
    up = run.invoke(app, ["sandbox", "up", "--scenario", "crashloop-env-enum", "--loki"])
    info = read_state(tmp_path / "sandbox")
    try:
        assert up.exit_code == 0, up.output
        assert info is not None and pid_alive(info.kubeapi_pid) and pid_alive(info.loki_pid)
        assert f"kubernetes  namespace comms, kubeconfig {info.kubeconfig}" in up.output
        assert requests.get(f"{info.loki_url}/ready", timeout=5).text == "ready"
        env = _env_file(tmp_path / "sandbox" / "opsbot.env")
        assert env["OPSBOT_KUBERNETES__ENABLED"] == "true" and env["OPSBOT_KUBERNETES__NAMESPACES"] == '["comms"]'
        assert env["OPSBOT_LOGS__BACKEND"] == "loki" and env["OPSBOT_LOKI__URL"] == info.loki_url
        assert env["OPSBOT_RUNBOOKS__PATH"].endswith("data/deploys/runbooks")
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        toolsets = run.invoke(app, ["toolsets"])
        assert toolsets.exit_code == 0, toolsets.output
        assert "pods readable in 1 namespace(s): comms" in toolsets.output
        assert "4 runbooks" in toolsets.output
        monkeypatch.setenv("OPSBOT_DEPLOYS__SOURCE", "kubernetes")  # deploys from the stand-in's rollout history
        doctor = run.invoke(app, ["doctor"]).output
        assert f"OK   logs: ready at {info.loki_url}" in doctor
        assert "OK   deploys: Kubernetes Deployments in comms: 3 services with deploys" in doctor
        assert "OK   toolsets: kubernetes ok: pods readable in 1 namespace(s): comms; runbooks ok" in doctor
        settings = sandbox_overrides(Settings(_env_file=None), info)  # type: ignore[call-arg]
        assert settings.kubernetes.enabled and settings.kubernetes.namespaces == ["comms"]
        assert settings.logs.backend == "loki" and settings.loki.url == info.loki_url
        assert run.invoke(app, ["sandbox", "status"]).exit_code == 0
    finally:
        down = run.invoke(app, ["sandbox", "down"])
    assert "sandbox stopped" in down.output
    assert not pid_alive(info.kubeapi_pid) and not pid_alive(info.loki_pid)


def test_down_never_stops_a_recycled_stand_in_pid(tmp_path):
    stranger = subprocess.Popen(["sleep", "30"])
    now = datetime.now(UTC)
    write_state(
        tmp_path,
        SandboxInfo(
            scenario="crashloop-env-enum",
            now=now,
            incident_at=now,
            prometheus_url="http://127.0.0.1:1",
            prometheus_pid=0,
            logs_db=tmp_path / "logs.db",
            git_repo=tmp_path / "deploys",
            topology={},
            env_path=tmp_path / "opsbot.env",
            data_end=now + timedelta(hours=2),
            kubeapi_pid=stranger.pid,
            kubeconfig=str(tmp_path / "kc"),
            kube_namespace="comms",
            loki_pid=stranger.pid,
            loki_url="http://x",
        ),
    )
    try:
        sandbox_down(tmp_path)
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()
