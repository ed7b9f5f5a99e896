"""`opsbot sandbox up|status|down` against the real Prometheus, and the lifecycle's safety rules."""

from __future__ import annotations

import json
import socket
import subprocess
from datetime import UTC, datetime, timedelta

import requests
from typer.testing import CliRunner

from bot.cli import app
from bot.config import Settings
from bot.sandbox.backends import pid_alive, start_osmem
from bot.sandbox.control import SandboxInfo, read_state, sandbox_down, sandbox_status, sandbox_up, write_state
from bot.wiring import sandbox_overrides
from tests.fakes.backends import free_port


def _cli(monkeypatch, tmp_path, port):
    monkeypatch.chdir(tmp_path)  # no developer .env
    monkeypatch.setenv("OPSBOT_SANDBOX__DIR", str(tmp_path / "sandbox"))
    monkeypatch.setenv("OPSBOT_SANDBOX__PROMETHEUS_PORT", str(port))
    runner = CliRunner()
    return lambda *args: runner.invoke(app, ["sandbox", *args])


def _state(tmp_path) -> SandboxInfo:
    info = read_state(tmp_path / "sandbox")
    assert info is not None, "no sandbox state recorded"
    return info


def test_up_is_idempotent_and_down_stops_prometheus(monkeypatch, tmp_path):
    port = free_port()
    run = _cli(monkeypatch, tmp_path, port)
    first = run("up", "--scenario", "no-incident")
    try:
        assert first.exit_code == 0, first.output
        assert "sandbox no-incident started" in first.output
        pid = _state(tmp_path).prometheus_pid
        assert requests.get(f"http://127.0.0.1:{port}/-/ready", timeout=5).status_code == 200
        second = run("up", "--scenario", "no-incident")
        assert "already running" in second.output
        assert _state(tmp_path).prometheus_pid == pid
        status = run("status")
        assert status.exit_code == 0 and "sandbox: running" in status.output
    finally:
        down = run("down")
    assert "sandbox stopped" in down.output
    assert not pid_alive(pid)
    assert run("status").exit_code == 1


def test_env_file_points_opsbot_at_the_sandbox(monkeypatch, tmp_path):
    run = _cli(monkeypatch, tmp_path, free_port())
    result = run("up", "--scenario", "no-incident")
    try:
        assert result.exit_code == 0, result.output
        env = dict(
            line.split("=", 1)
            for line in (tmp_path / "sandbox" / "opsbot.env").read_text().splitlines()
            if not line.startswith("#")
        )
        for key, value in env.items():
            monkeypatch.setenv(key, value.strip("'"))
        settings = Settings(_env_file=None)  # type: ignore[call-arg]
        info = _state(tmp_path)
        assert settings.prometheus.url == info.prometheus_url
        assert {"p99_latency", "memory_usage", "restarts"} <= set(settings.prometheus.metrics)
        assert settings.topology["checkout"] == ["payment"]
        assert settings.logs.sqlite_path == info.logs_db and settings.logs.sqlite_path.exists()
        assert settings.deploys.git_repo == info.git_repo
    finally:
        run("down")


def test_stale_data_is_rebuilt_on_up(tmp_path):
    port = free_port()
    old = sandbox_up(tmp_path, "no-incident", port, now=datetime.now(UTC) - timedelta(hours=3))
    try:
        assert sandbox_status(tmp_path)[1].startswith("stale")
        fresh = sandbox_up(tmp_path, "no-incident", port)
        assert not fresh.already_running and fresh.prometheus_pid != old.prometheus_pid
        assert not pid_alive(old.prometheus_pid)
    finally:
        sandbox_down(tmp_path)


def test_down_never_kills_a_process_that_is_not_our_prometheus(tmp_path):
    stranger = subprocess.Popen(["sleep", "30"])  # stands for a recycled PID
    now = datetime.now(UTC)
    info = SandboxInfo(
        scenario="no-incident",
        now=now,
        incident_at=now,
        prometheus_url="http://127.0.0.1:1",
        prometheus_pid=stranger.pid,
        logs_db=tmp_path / "logs.db",
        git_repo=tmp_path / "deploys",
        topology={},
        env_path=tmp_path / "opsbot.env",
        data_end=now + timedelta(hours=2),
    )
    write_state(tmp_path, info)
    try:
        assert sandbox_status(tmp_path)[1].startswith("stopped")
        assert sandbox_down(tmp_path) is False
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


def test_up_with_es_loads_logs_and_deploy_events(monkeypatch, tmp_path):
    osmem = start_osmem(free_port())
    run = _cli(monkeypatch, tmp_path, free_port())
    try:
        result = run("up", "--scenario", "bad-release-npe", "--es", osmem.url)
        assert result.exit_code == 0, result.output
        count = requests.get(f"{osmem.url}/logs-sandbox/_count", timeout=5).json()["count"]
        assert count == sum(1 for _ in (tmp_path / "sandbox" / "data" / "logs.jsonl").open())
        hit = requests.post(
            f"{osmem.url}/deploys/_search", json={"query": {"term": {"version": "v4.12.0"}}}, timeout=5
        ).json()["hits"]["hits"][0]["_source"]
        assert hit["service"] == "checkout" and "+  newDiscountEngine: true" in hit["diff"]
        settings = sandbox_overrides(Settings(_env_file=None), _state(tmp_path))  # type: ignore[call-arg]
        assert (settings.logs.backend, settings.deploys.source) == ("elasticsearch", "index")
        assert settings.elasticsearch.url == osmem.url and settings.elasticsearch.plain_json
        env = (tmp_path / "sandbox" / "opsbot.env").read_text()
        assert "OPSBOT_LOGS__BACKEND='elasticsearch'" in env
        assert json.loads(env.split("OPSBOT_TOPOLOGY='")[1].split("'")[0])["checkout"] == ["payment", "promotions"]
    finally:
        run("down")
        osmem.stop()


def test_unknown_scenario_fails_with_the_known_names(monkeypatch, tmp_path):
    result = _cli(monkeypatch, tmp_path, free_port())("up", "--scenario", "nope")
    assert result.exit_code == 1
    assert "known: " in result.output and "hikari-pool" in result.output


def test_up_on_a_busy_port_says_so_before_building(monkeypatch, tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        result = _cli(monkeypatch, tmp_path, holder.getsockname()[1])("up", "--scenario", "no-incident")
    assert result.exit_code == 1
    assert "is in use on 127.0.0.1" in result.output
    assert not (tmp_path / "sandbox" / "data").exists()
