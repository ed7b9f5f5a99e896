"""Two real `opsbot serve` processes sharing one real redis-server (and one SQLite trace store).

The LLM is the ScriptedLLM with a slow reply, so a diagnosis is still running when a replica is killed or stopped.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
import requests

from bot.store.sqlite import SqliteTraceStore
from tests.fakes.backends import free_port
from tests.fakes.llm import MODEL, ScriptedLLM
from tests.fakes.slack import BOT_TOKEN, SIGNING_SECRET, FakeSlackAPI, event_body, mention_event, post_event
from tests.slack.conftest import wait_until
from tests.slack.test_serve import OPSBOT

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
        return requests.request(method, self.url + path, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30,
                                **kw)

    def diagnose_async(self, question: str) -> str:
        resp = self.api("POST", "/api/diagnose", json={"question": question, "async": True})
        assert resp.status_code == 202, resp.text
        return str(resp.json()["trace_id"])

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


StartReplica = Callable[..., Replica]


@pytest.fixture
def slow_llm(scripted_llm: ScriptedLLM) -> ScriptedLLM:
    scripted_llm.responder = lambda body: {"content": ANSWER, "delay_s": 3.0}
    return scripted_llm


@pytest.fixture
def start_replica(fake_slack: FakeSlackAPI, slow_llm: ScriptedLLM, tmp_path: Path) -> Iterator[StartReplica]:
    started: list[Replica] = []

    def start(redis_url: str = "", **extra: str) -> Replica:
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPSBOT_", "OPENAI_"))}
        env |= {
            "OPSBOT_SLACK__BOT_TOKEN": BOT_TOKEN, "OPSBOT_SLACK__SIGNING_SECRET": SIGNING_SECRET,
            "OPSBOT_SLACK__API_BASE_URL": fake_slack.base_url, "OPSBOT_SERVER__PORT": str(port),
            "OPSBOT_SERVER__API_TOKEN": TOKEN, "OPSBOT_SERVER__API_WORKERS": "4",
            "OPSBOT_STORE__SQLITE_PATH": str(tmp_path / "traces.db"),
            "OPSBOT_LOGS__SQLITE_PATH": str(tmp_path / "logs.db"),
            "OPSBOT_DEPLOYS__GIT_REPO": str(tmp_path / "deploys"), "OPSBOT_PROMETHEUS__URL": "http://127.0.0.1:9",
            "OPSBOT_LLM__BASE_URL": slow_llm.base_url, "OPSBOT_LLM__API_KEY": "test", "OPSBOT_LLM__MODEL": MODEL,
            "OPSBOT_INTENT__USE_MODEL": "false", "OPSBOT_ACCESS__RATE_LIMIT_PER_MINUTE": "0",
            "OPSBOT_REDIS__URL": redis_url, "OPSBOT_REDIS__CLAIM_IDLE_S": "2",
            **extra,
        }  # fmt: skip
        log_path = tmp_path / f"replica-{len(started)}.log"
        with log_path.open("wb") as out:
            process = subprocess.Popen([OPSBOT, "serve"], env=env, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT)
        replica = Replica(process, f"http://127.0.0.1:{port}", log_path)
        started.append(replica)
        wait_until(lambda: _ready(replica), timeout_s=60, what=f"replica {len(started)} to be ready")
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


def _job(redis_url: str, trace_id: str) -> dict[str, str]:
    raw = redis.Redis.from_url(redis_url, decode_responses=True).hgetall(f"opsbot:job:{trace_id}")
    return {str(k): str(v) for k, v in raw.items()}


def _finished(store_path: Path, trace_id: str) -> dict[str, Any] | None:
    store = SqliteTraceStore(store_path)
    try:
        trace = store.get(trace_id)
    finally:
        store.close()
    if trace is None or "partial" in " ".join(trace.notes):
        return None
    return {"answer": trace.answer, "complete": trace.complete, "notes": trace.notes}


def test_a_slack_retry_delivered_to_the_other_replica_gives_one_reply(
    redis_url: str, start_replica: StartReplica, fake_slack: FakeSlackAPI
) -> None:
    one, other = start_replica(redis_url), start_replica(redis_url)
    body = event_body(mention_event("why is order slow since 15:05?"), event_id="EvRetry1")
    assert post_event(f"{one.url}/slack/events", body).status_code == 200
    assert post_event(f"{other.url}/slack/events", body, retry_num=1).status_code == 200  # Slack's retry
    [stop] = fake_slack.wait_for("chat.stopStream", timeout_s=60)
    assert "connection pool is exhausted" in json.dumps(stop)
    assert len(fake_slack.calls_to("chat.startStream")) == 1
    assert len([c for c in fake_slack.calls_to("reactions.add") if c.get("name") == "eyes"]) == 1
    assert "duplicate delivery ignored" in one.log() + other.log()


def test_kill_9_of_the_replica_running_a_diagnosis_the_other_finishes_it(
    redis_url: str, start_replica: StartReplica, tmp_path: Path
) -> None:
    replicas = [start_replica(redis_url), start_replica(redis_url)]
    trace_id = replicas[0].diagnose_async("why is order slow since 15:05?")
    wait_until(lambda: _job(redis_url, trace_id).get("status") == "running", timeout_s=30, what="the job to run")
    owner_pid = int(_job(redis_url, trace_id)["owner"].rsplit("-", 1)[1])
    [victim] = [r for r in replicas if r.pid == owner_pid]
    [survivor] = [r for r in replicas if r.pid != owner_pid]
    os.kill(victim.pid, signal.SIGKILL)
    victim.process.wait(10)
    mid = survivor.api("GET", f"/api/traces/{trace_id}")
    assert mid.status_code == 202 and mid.json()["status"] in ("running", "queued")  # not "unknown id"
    wait_until(lambda: _finished(tmp_path / "traces.db", trace_id) is not None, timeout_s=60,
               what="the survivor to finish the job")
    done = survivor.api("GET", f"/api/traces/{trace_id}").json()
    assert done["answer"] == ANSWER and done["complete"] is True
    assert _job(redis_url, trace_id)["attempts"] == "2"
    assert f"re-running job {trace_id}" in survivor.log()


@pytest.mark.parametrize("shared", ["redis", "memory"])
def test_sigterm_during_4_running_and_4_queued_runs_ends_none_as_internal_error(
    shared: str, request: pytest.FixtureRequest, start_replica: StartReplica, tmp_path: Path
) -> None:
    redis_url = str(request.getfixturevalue("redis_url")) if shared == "redis" else ""
    leaving = start_replica(redis_url, OPSBOT_SERVER__API_QUEUE_SIZE="8", OPSBOT_SERVER__SHUTDOWN_DRAIN_S="30")
    ids = [leaving.diagnose_async(f"why is order slow since 15:0{n}?") for n in range(8)]
    wait_until(lambda: _running(leaving, ids) == 4, timeout_s=30, what="4 runs to be running")
    leaving.process.send_signal(signal.SIGTERM)
    assert leaving.process.wait(60) == 0
    if redis_url:  # the queued ones went back to the stream: the next replica answers them
        start_replica(redis_url)
    wait_until(lambda: all(_finished(tmp_path / "traces.db", t) for t in ids), timeout_s=90,
               what="every run to end")
    ends = [_finished(tmp_path / "traces.db", t) for t in ids]
    answers = [str(e["answer"]) for e in ends if e]
    assert not any("internal error" in a for a in answers)
    assert answers.count(ANSWER) == (8 if redis_url else 4)
    if not redis_url:
        assert sum("restarting" in a and "Re-run?" in a for a in answers) == 4


def _running(replica: Replica, ids: list[str]) -> int:
    return sum(replica.api("GET", f"/api/traces/{t}").json().get("status") == "running" for t in ids)
