"""/readyz stays false until the backends answer; /livez answers all along."""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from bot.http.readiness import Readiness
from bot.sandbox.backends import start_osmem, start_prometheus
from tests.fakes.backends import free_port
from tests.slack.conftest import wait_until
from tests.slack.intake.test_serve import OPSBOT


def test_ready_once_every_backend_answered_and_it_stays_ready() -> None:
    answers = {"prometheus": "unreachable (ConnectionError)", "redis": ""}
    readiness = Readiness({name: functools.partial(answers.__getitem__, name) for name in answers})
    assert readiness.report() == {
        "status": "starting",
        "waiting_for": {"prometheus": "not asked yet", "redis": "not asked yet"},
    }
    readiness.check_once()
    assert readiness.report() == {"status": "starting", "waiting_for": {"prometheus": "unreachable (ConnectionError)"}}
    answers["prometheus"] = ""
    readiness.check_once()
    assert readiness.ready and readiness.report() == {}
    answers["prometheus"] = "unreachable"  # lost later: not asked again, the replica stays in the Service
    readiness.check_once()
    assert readiness.ready


def test_a_probe_that_raises_is_a_backend_not_answering() -> None:
    def broken() -> str:
        raise OSError("no route to host")

    readiness = Readiness({"elasticsearch": broken})
    readiness.check_once()
    assert readiness.report()["waiting_for"] == {"elasticsearch": "OSError: no route to host"}


@pytest.fixture
def served_without_prometheus(tmp_path: Path) -> Iterator[tuple[str, int]]:
    port, prometheus_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPSBOT_", "OPENAI_"))}
    env |= {
        "OPSBOT_SERVER__PORT": str(port),
        "OPSBOT_PROMETHEUS__URL": f"http://127.0.0.1:{prometheus_port}",  # nothing listens there yet
        "OPSBOT_STORE__SQLITE_PATH": str(tmp_path / "traces.db"),
        "OPSBOT_DEPLOYS__GIT_REPO": str(tmp_path / "deploys"),
    }
    process = subprocess.Popen(
        [OPSBOT, "serve"], env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        yield f"http://127.0.0.1:{port}", prometheus_port
    finally:
        process.terminate()
        assert process.wait(30) == 0


def _get(url: str) -> requests.Response | None:
    try:
        return requests.get(url, timeout=2)
    except requests.RequestException:
        return None


def test_readyz_waits_for_prometheus_while_livez_answers(
    served_without_prometheus: tuple[str, int], tmp_path: Path
) -> None:
    url, prometheus_port = served_without_prometheus
    wait_until(lambda: _get(f"{url}/livez") is not None, timeout_s=60, what="opsbot serve to listen")
    assert requests.get(f"{url}/livez", timeout=2).status_code == 200
    starting = requests.get(f"{url}/readyz", timeout=2)
    assert starting.status_code == 503 and starting.json()["status"] == "starting"
    assert "OPSBOT_PROMETHEUS__URL" in starting.json()["waiting_for"]["prometheus"]
    # a real Prometheus (on an empty TSDB) comes up where the setting points
    tsdb = tmp_path / "prometheus" / "data"
    tsdb.mkdir(parents=True)
    prometheus = start_prometheus(tsdb, prometheus_port, die_with_parent=True)
    try:
        wait_until(
            lambda: (r := _get(f"{url}/readyz")) is not None and r.status_code == 200,
            timeout_s=30,
            what="/readyz once Prometheus answers",
        )
    finally:
        prometheus.stop()


def test_a_fleet_store_not_up_yet_keeps_serve_unready_not_down_until_it_answers(tmp_path: Path) -> None:
    port, es_port, prometheus_port = free_port(), free_port(), free_port()
    tsdb = tmp_path / "prometheus" / "data"
    tsdb.mkdir(parents=True)
    prometheus = start_prometheus(tsdb, prometheus_port, die_with_parent=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPSBOT_", "OPENAI_"))}
    env |= {
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "OPSBOT_SERVER__PORT": str(port),
        "OPSBOT_SERVER__API_TOKEN": "t",
        "OPSBOT_PROMETHEUS__URL": prometheus.url,
        "OPSBOT_STORE__BACKEND": "elasticsearch",
        "OPSBOT_ELASTICSEARCH__URL": f"http://127.0.0.1:{es_port}",  # deployed at once: it answers later
        "OPSBOT_ELASTICSEARCH__PLAIN_JSON": "true",  # the stand-in speaks plain JSON
    }
    log = (tmp_path / "serve.log").open("wb")
    process = subprocess.Popen([OPSBOT, "serve"], env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
    url, token = f"http://127.0.0.1:{port}", {"Authorization": "Bearer t"}
    elasticsearch = None
    try:
        wait_until(
            lambda: _waiting(url).get("surfaces", "").startswith("the trace store does not open"),
            timeout_s=60,
            what="/readyz to say the store does not open",
        )
        assert requests.get(f"{url}/livez", timeout=2).status_code == 200  # waiting, not dead: no restart
        assert "OPSBOT_ELASTICSEARCH__URL" in _waiting(url)["elasticsearch"]
        assert requests.get(f"{url}/api/traces/abc", headers=token, timeout=2).status_code == 503
        assert process.poll() is None
        elasticsearch = start_osmem(es_port, die_with_parent=True, log_dir=tmp_path)
        wait_until(
            lambda: (r := _get(f"{url}/readyz")) is not None and r.status_code == 200,
            timeout_s=60,
            what="/readyz once the store opened",
        )
        assert requests.get(f"{url}/api/traces/abc", headers=token, timeout=2).status_code == 404  # served now
    finally:
        process.terminate()
        code = process.wait(30)
        log.close()
        prometheus.stop()
        if elasticsearch is not None:
            elasticsearch.stop()
    assert code == 0, (tmp_path / "serve.log").read_text(errors="replace")[-2000:]


def _waiting(url: str) -> dict[str, str]:
    r = _get(f"{url}/readyz")
    return dict(r.json().get("waiting_for") or {}) if r is not None and r.status_code == 503 else {}
