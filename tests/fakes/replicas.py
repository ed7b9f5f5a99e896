"""Real `opsbot serve` processes for multi-replica tests and benches, each stopped by its PID, sharing no filesystem.

Every replica of one test has a working folder of its own (its cwd, home and state folder, where it may leave no
database), and they share only what a fleet shares over the network: one redis-server (when given), the
Elasticsearch stand-in (osmem) as the trace store and as the logs and deploy events, a real Prometheus (the
sandbox's), one FakeSlackAPI answering each call after SLACK_LATENCY_S, and one ScriptedLLM.

Fixtures:
    slow_llm        the session's ScriptedLLM: one tool call, then ANSWER, LLM_DELAY_S in all
    trace_index     the test's own trace index in osmem
    fleet_store     an ElasticsearchTraceStore on that index (what every replica stores into)
    start_replica   factory: start_replica(redis_url="", **env) -> a ready Replica (waits for /readyz)

`thread_answers(fake)` reads the final answers the fake Slack saw, per thread, and whether each showed its steps.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from bot.store.elastic import ElasticsearchTraceStore
from bot.wiring.elastic import es_client
from tests.fakes.backends import RunningSandbox, free_port
from tests.fakes.llm import MODEL, ScriptedLLM, tool_results
from tests.fakes.slack import BOT_TOKEN, SIGNING_SECRET, FakeSlackAPI

OPSBOT = str(Path(sys.executable).with_name("opsbot"))
LLM_DELAY_S = 3.0
SLACK_LATENCY_S = 0.15  # what an operator's Slack takes a call on a normal day

TOKEN = "replica-test-token"
ANSWER = "order is slow because its connection pool is exhausted."
MOVED = "continues in a new message"  # a taken-over job's old progress message, closed: not an answer


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

    def health(self) -> dict[str, Any]:
        try:
            return dict(requests.get(f"{self.url}/readyz", timeout=2).json())
        except (requests.RequestException, ValueError):
            return {}

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
def trace_index() -> str:
    return f"opsbot-traces-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def fleet_store(es_sandbox: str, trace_index: str) -> Iterator[ElasticsearchTraceStore]:
    store = ElasticsearchTraceStore(es_client(es_sandbox, plain_json=True), trace_index)
    yield store
    store.close()


@pytest.fixture
def start_replica(
    fake_slack: FakeSlackAPI,
    slow_llm: ScriptedLLM,
    sandbox: RunningSandbox,
    es_sandbox: str,
    trace_index: str,
    tmp_path: Path,
) -> Iterator[StartReplica]:
    started: list[Replica] = []
    fake_slack.latency_s, fake_slack.wall_clock_ts = SLACK_LATENCY_S, True

    def start(redis_url: str = "", **extra: str) -> Replica:
        port, home = free_port(), tmp_path / f"replica-{len(started)}"
        home.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPSBOT_", "OPENAI_"))}
        env |= {
            "HOME": str(home),  # nothing of one replica's is on another's disk
            "XDG_STATE_HOME": str(home / "state"),
            "OPSBOT_SLACK__BOT_TOKEN": BOT_TOKEN,
            "OPSBOT_SLACK__SIGNING_SECRET": SIGNING_SECRET,
            "OPSBOT_SLACK__API_BASE_URL": fake_slack.base_url,
            "OPSBOT_SERVER__PORT": str(port),
            "OPSBOT_SERVER__API_TOKEN": TOKEN,
            "OPSBOT_SERVER__API_WORKERS": "4",
            "OPSBOT_ELASTICSEARCH__URL": es_sandbox,
            "OPSBOT_ELASTICSEARCH__PLAIN_JSON": "true",
            "OPSBOT_STORE__BACKEND": "elasticsearch",
            "OPSBOT_STORE__INDEX": trace_index,
            "OPSBOT_LOGS__BACKEND": "elasticsearch",
            "OPSBOT_LOGS__INDEX_PATTERN": "logs-sandbox",
            "OPSBOT_DEPLOYS__SOURCE": "index",
            "OPSBOT_PROMETHEUS__URL": sandbox.prometheus_url,
            "OPSBOT_LLM__BASE_URL": slow_llm.base_url,
            "OPSBOT_LLM__API_KEY": "test",
            "OPSBOT_LLM__MODEL": MODEL,
            "OPSBOT_INTENT__USE_MODEL": "false",
            "OPSBOT_ACCESS__RATE_LIMIT_PER_MINUTE": "0",
            "OPSBOT_REDIS__URL": redis_url,
            "OPSBOT_REDIS__CLAIM_IDLE_S": "2",
            **extra,
        }
        log_path = home / "serve.log"
        with log_path.open("wb") as out:
            process = subprocess.Popen([OPSBOT, "serve"], env=env, cwd=home, stdout=out, stderr=subprocess.STDOUT)
        replica = Replica(process, f"http://127.0.0.1:{port}", log_path)
        started.append(replica)
        deadline = time.monotonic() + 90
        while not _ready(replica):
            assert time.monotonic() < deadline, f"replica {len(started)} did not become ready: {replica.log()[-2000:]}"
            time.sleep(0.1)
        return replica

    yield start
    for replica in started:
        if replica.process.poll() is None:
            replica.process.kill()
            replica.process.wait(10)
    kept = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.glob("replica-*/**/*.db*"))
    assert kept == [], f"a replica kept a database on its own disk: {kept}"  # state is in Redis and the fleet store


def _ready(replica: Replica) -> bool:
    assert replica.process.poll() is None, f"opsbot serve exited: {replica.log()[-2000:]}"
    try:
        return requests.get(f"{replica.url}/readyz", timeout=1).status_code == 200
    except requests.RequestException:
        return False


@dataclass(frozen=True)
class Answer:
    """One final answer in a thread: the message it landed in, its text, and whether it showed the steps."""

    ts: str
    text: str
    steps_shown: bool


def thread_answers(fake: FakeSlackAPI) -> dict[str, list[Answer]]:
    """The final answers per thread: a stream stopped with its answer, a message edited into the answer, or a plain
    post of one. A stream shows its steps as task cards; a message as its "*Steps*" list."""
    with fake._changed:  # calls and their responses, read at one moment
        calls = [c for c in fake.calls if c.response]
    thread_of = {
        str(c.response.get("ts")): str(c.params.get("thread_ts"))
        for c in calls
        if c.method in ("chat.postMessage", "chat.startStream")
    }
    cards = {_ts(c): True for c in calls if c.method.endswith("Stream") and "task_update" in json.dumps(c.params)}
    answers: dict[str, list[Answer]] = {}
    for c in calls:
        text = json.dumps(c.params, ensure_ascii=False)
        if MOVED in text or not _final(c.method, c.params):
            continue
        ts = _ts(c)
        shown = cards.get(ts, False) if c.method == "chat.stopStream" else "*Steps*" in text
        answers.setdefault(thread_of.get(ts, "?"), []).append(Answer(ts, text, shown))
    return answers


def _ts(call: Any) -> str:
    return str(call.params.get("ts") or call.response.get("ts") or "")


def _final(method: str, params: dict[str, Any]) -> bool:
    if method == "chat.stopStream":
        return True
    if method == "chat.update":
        return not str(params.get("text", "")).startswith("Diagnosing…")
    return method == "chat.postMessage" and "opsbot traces show" in json.dumps(params.get("blocks") or [])
