"""`opsbot sandbox up --es local`: the bundled osmem-server on OPSBOT_SANDBOX__OSMEM_PORT, loaded, stopped by down."""

from __future__ import annotations

import subprocess
import sys

import pytest
import requests
from typer.testing import CliRunner

from bot.cli import app
from bot.sandbox.backends import BackendError, pid_alive
from bot.sandbox.control import read_state
from bot.sandbox.standins.osmem import LocalSearch, ensure_local_search, read_local_search, stop_local_search
from tests.fakes.backends import free_port


def _cli(monkeypatch, tmp_path, osmem_port):
    monkeypatch.chdir(tmp_path)  # no developer .env
    monkeypatch.setenv("OPSBOT_SANDBOX__DIR", str(tmp_path / "sandbox"))
    monkeypatch.setenv("OPSBOT_SANDBOX__PROMETHEUS_PORT", str(free_port()))
    monkeypatch.setenv("OPSBOT_SANDBOX__OSMEM_PORT", str(osmem_port))
    runner = CliRunner()
    return lambda *args: runner.invoke(app, ["sandbox", *args])


def test_up_es_local_runs_osmem_on_the_port_loads_it_and_down_stops_it(monkeypatch, tmp_path):
    port = free_port()
    run = _cli(monkeypatch, tmp_path, port)
    url = f"http://127.0.0.1:{port}"
    first = run("up", "--scenario", "no-incident", "--es", "local")
    search = read_local_search(tmp_path / "sandbox")
    try:
        assert first.exit_code == 0, first.output
        assert search is not None and search.url == url and pid_alive(search.pid)
        info = read_state(tmp_path / "sandbox")
        assert info is not None and info.es_url == url
        logs = sum(1 for _ in (tmp_path / "sandbox" / "data" / "logs.jsonl").open())
        assert requests.get(f"{url}/logs-sandbox/_count", timeout=5).json()["count"] == logs
        assert requests.get(f"{url}/deploys/_count", timeout=5).json()["count"] > 0
        env = (tmp_path / "sandbox" / "opsbot.env").read_text()
        assert f"OPSBOT_ELASTICSEARCH__URL='{url}'" in env and "OPSBOT_LOGS__BACKEND='elasticsearch'" in env
        again = run("up", "--scenario", "no-incident", "--es", "local")
        assert "already running" in again.output
        assert read_local_search(tmp_path / "sandbox") == search  # the same server, still loaded
        status = run("status")
        assert f"{url} (osmem-server pid {search.pid}, running)" in status.output
    finally:
        down = run("down")
    assert "sandbox stopped" in down.output
    assert search is not None and not pid_alive(search.pid)
    assert read_local_search(tmp_path / "sandbox") is None


def test_a_restarted_osmem_is_loaded_again(tmp_path):
    port = free_port()
    first = ensure_local_search(tmp_path, port)
    try:
        assert first.started and ensure_local_search(tmp_path, port) == LocalSearch(first.url, first.pid)
        assert stop_local_search(tmp_path)
        second = ensure_local_search(tmp_path, port)
        assert second.started and second.pid != first.pid  # started: the caller reloads the empty server
    finally:
        stop_local_search(tmp_path)


def test_stop_never_kills_a_process_that_is_not_our_osmem(tmp_path):
    stranger = subprocess.Popen(["sleep", "30"])  # stands for a recycled PID
    (tmp_path / "osmem.json").write_text(f'{{"url": "http://127.0.0.1:1", "pid": {stranger.pid}}}')
    try:
        assert stop_local_search(tmp_path) is False
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


def test_without_osmem_installed_es_local_says_how_to_get_it(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "osmem_server", None)  # import osmem_server now raises ImportError
    with pytest.raises(BackendError, match="dev dependency: pip install osmem-server"):
        ensure_local_search(tmp_path, free_port())
    result = _cli(monkeypatch, tmp_path, free_port())("up", "--scenario", "no-incident", "--es", "local")
    assert result.exit_code == 1 and "osmem-server is not installed" in result.output
