"""`opsbot serve` as a real process: HTTP mode and Socket Mode, /healthz, a diagnosis to a threaded answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.fakes.backends import RunningSandbox, free_port
from tests.fakes.slack import (
    BOT_TOKEN,
    SIGNING_SECRET,
    FakeSlackAPI,
    command_params,
    event_body,
    mention_event,
    post_command,
)
from tests.slack.conftest import wait_until

OPSBOT = str(Path(sys.executable).with_name("opsbot"))


def start_serve(fake: FakeSlackAPI, workdir: Path, **extra: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPSBOT_", "OPENAI_"))}
    env |= {
        "OPSBOT_SLACK__BOT_TOKEN": BOT_TOKEN,
        "OPSBOT_SLACK__SIGNING_SECRET": SIGNING_SECRET,
        "OPSBOT_SLACK__API_BASE_URL": fake.base_url,
        "OPSBOT_SERVER__PORT": str(port),
        "OPSBOT_STORE__SQLITE_PATH": str(workdir / "traces.db"),
        "OPSBOT_LOGS__SQLITE_PATH": str(workdir / "logs.db"),
        "OPSBOT_DEPLOYS__GIT_REPO": str(workdir / "deploys"),
        "OPSBOT_PROMETHEUS__URL": "http://127.0.0.1:9",  # nothing listens: the playbook reports it honestly
        **extra,
    }
    process = subprocess.Popen(
        [OPSBOT, "serve"], env=env, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return process, f"http://127.0.0.1:{port}"


def health(url: str) -> dict | None:
    try:
        return requests.get(f"{url}/healthz", timeout=1).json()
    except requests.RequestException:
        return None


@pytest.fixture
def served(
    fake_slack: FakeSlackAPI, tmp_path: Path, request: pytest.FixtureRequest, sandbox: RunningSandbox
) -> Iterator[str]:
    extra = {"OPSBOT_PROMETHEUS__URL": sandbox.prometheus_url, **getattr(request, "param", {})}  # ready once it answers
    process, url = start_serve(fake_slack, tmp_path, **extra)
    try:
        wait_until(lambda: (health(url) or {}).get("status") == "ok", timeout_s=30, what="opsbot serve to be up")
        yield url
    finally:
        process.terminate()
        assert process.wait(30) == 0, "SIGTERM must shut opsbot serve down cleanly"


def test_serve_http_mode_answers_diagnose_in_a_thread(served: str, fake_slack: FakeSlackAPI) -> None:
    assert health(served) == {"status": "ok", "slack": "http", "workers_busy": 0, "queued": 0}
    ack = post_command(
        f"{served}/slack/events",
        command_params("why is order slow since 15:05?", response_url=fake_slack.response_url()),
    )
    assert ack.status_code == 200 and "On it" in ack.text
    [stop] = fake_slack.wait_for("chat.stopStream", timeout_s=60)
    [anchor] = fake_slack.responses_to("chat.postMessage")
    assert fake_slack.calls_to("chat.startStream")[0]["thread_ts"] == anchor["ts"]
    assert "playbook" in json.dumps(stop["blocks"])  # no LLM configured: the playbook answered, and says so


@pytest.mark.parametrize("served", [{"OPSBOT_SLACK__APP_TOKEN": "xapp-1-test"}], indirect=True)
def test_serve_socket_mode_reports_the_connection_and_answers(served: str, fake_slack: FakeSlackAPI) -> None:
    report = health(served)
    assert report is not None and report["slack"] == "socket" and report["socket_connected"] is True
    assert requests.post(f"{served}/slack/events", data="{}", timeout=5).status_code == 404  # no HTTP Slack mount
    body = event_body(mention_event("why is order slow since 15:05?"))
    fake_slack.socket_peer.send(
        {
            "envelope_id": "env-1",
            "type": "events_api",
            "accepts_response_payload": False,
            "retry_attempt": 0,
            "retry_reason": "",
            "payload": body,
        }
    )
    fake_slack.socket_peer.wait_ack("env-1")
    [stop] = fake_slack.wait_for("chat.stopStream", timeout_s=60)
    assert fake_slack.calls_to("chat.startStream")[0]["thread_ts"] == "1699999999.000100"
    assert "playbook" in json.dumps(stop["blocks"])
