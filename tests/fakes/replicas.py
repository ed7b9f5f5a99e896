"""Real `opsbot serve` processes for multi-replica tests and benches, each stopped by its PID.

Fixtures:
    slow_llm        the session's ScriptedLLM: one tool call, then ANSWER, LLM_DELAY_S in all
    start_replica   factory: start_replica(redis_url="", **env) -> a ready Replica (waits for /readyz); every
                    replica of one test shares the FakeSlackAPI, the ScriptedLLM and one SQLite trace store
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.fakes.backends import free_port
from tests.fakes.llm import MODEL, ScriptedLLM, tool_results
from tests.fakes.slack import BOT_TOKEN, SIGNING_SECRET, FakeSlackAPI

OPSBOT = str(Path(sys.executable).with_name("opsbot"))
LLM_DELAY_S = 3.0

TOKEN = "replica-test-token"
ANSWER = "order is slow because its connection pool is exhausted."


@dataclass
class Replica:
    process: subprocess.Popen[bytes]
    url: str
    log_path: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def api(self, method: str, path: str, **kw: Any) -> requests.Response:
        return requests.request(method, self.url + path, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30, **kw)

    def diagnose_async(self, question: str) -> str:
        resp = self.api("POST", "/api/diagnose", json={"question": question, "async": True})
        assert resp.status_code == 202, resp.text
        return str(resp.json()["trace_id"])

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


StartReplica = Callable[..., Replica]


def tool_then_answer(body: dict[str, Any]) -> dict[str, Any]:
    """One query_metrics call, then ANSWER; each reply after LLM_DELAY_S / 2 (a run uses the tool pool, as real
    ones do: the pool being shut down under draining runs was what turned them into "internal error")."""
    if tool_results(body.get("messages", [])):
        return {"content": ANSWER, "delay_s": LLM_DELAY_S / 2}
    call = {"name": "query_metrics", "arguments": {"service": "order", "metric": "p99_latency", "range": "6h"}}
    return {"content": "", "tool_calls": [call], "delay_s": LLM_DELAY_S / 2}


@pytest.fixture
def slow_llm(scripted_llm: ScriptedLLM) -> ScriptedLLM:
    scripted_llm.responder = tool_then_answer

    return scripted_llm


@pytest.fixture
def start_replica(fake_slack: FakeSlackAPI, slow_llm: ScriptedLLM, tmp_path: Path) -> Iterator[StartReplica]:
    started: list[Replica] = []

    def start(redis_url: str = "", **extra: str) -> Replica:
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPSBOT_", "OPENAI_"))}
        env |= {
            "OPSBOT_SLACK__BOT_TOKEN": BOT_TOKEN,
            "OPSBOT_SLACK__SIGNING_SECRET": SIGNING_SECRET,
            "OPSBOT_SLACK__API_BASE_URL": fake_slack.base_url,
            "OPSBOT_SERVER__PORT": str(port),
            "OPSBOT_SERVER__API_TOKEN": TOKEN,
            "OPSBOT_SERVER__API_WORKERS": "4",
            "OPSBOT_STORE__SQLITE_PATH": str(tmp_path / "traces.db"),
            "OPSBOT_LOGS__SQLITE_PATH": str(tmp_path / "logs.db"),
            "OPSBOT_DEPLOYS__GIT_REPO": str(tmp_path / "deploys"),
            "OPSBOT_PROMETHEUS__URL": "http://127.0.0.1:9",
            "OPSBOT_LLM__BASE_URL": slow_llm.base_url,
            "OPSBOT_LLM__API_KEY": "test",
            "OPSBOT_LLM__MODEL": MODEL,
            "OPSBOT_INTENT__USE_MODEL": "false",
            "OPSBOT_ACCESS__RATE_LIMIT_PER_MINUTE": "0",
            "OPSBOT_REDIS__URL": redis_url,
            "OPSBOT_REDIS__CLAIM_IDLE_S": "2",
            **extra,
        }
        log_path = tmp_path / f"replica-{len(started)}.log"
        with log_path.open("wb") as out:
            process = subprocess.Popen([OPSBOT, "serve"], env=env, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT)
        replica = Replica(process, f"http://127.0.0.1:{port}", log_path)
        started.append(replica)
        deadline = time.monotonic() + 60
        while not _ready(replica):
            assert time.monotonic() < deadline, f"replica {len(started)} did not become ready"
            time.sleep(0.1)
        return replica

    yield start
    for replica in started:
        if replica.process.poll() is None:
            replica.process.kill()
            replica.process.wait(10)


def _ready(replica: Replica) -> bool:
    assert replica.process.poll() is None, f"opsbot serve exited: {replica.log()[-2000:]}"
    try:
        return requests.get(f"{replica.url}/readyz", timeout=1).status_code == 200
    except requests.RequestException:
        return False
