"""Slack diagnoses across two real `opsbot serve` processes sharing one real redis-server.

Signed Events API deliveries go to a replica's /slack/events; both replicas talk to one FakeSlackAPI and one
ScriptedLLM (a tool call, then the answer, 3 s in all: a diagnosis is still running when a replica is killed
or stopped). The replicas come from tests/fakes/replicas.py.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any

import redis
import requests

from bot.engine.types import Trace
from bot.slack.jobs.restart import RESTARTING_TEXT
from bot.store.sqlite import SqliteTraceStore
from tests.fakes.llm import ScriptedLLM, tool_results
from tests.fakes.replicas import ANSWER, Replica, StartReplica, tool_then_answer
from tests.fakes.slack import FakeSlackAPI, event_body, mention_event, post_event
from tests.slack.conftest import wait_until

THREAD = "1699999999.000100"


def _slack_jobs(redis_url: str) -> list[dict[str, str]]:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    jobs = [client.hgetall(key) for key in client.scan_iter("opsbot:slack-job:*")]
    return [{str(k): str(v) for k, v in job.items()} for job in jobs]


def _mention(replica: Replica, n: int, ts: str) -> None:
    body = event_body(mention_event(f"why is order slow since 15:0{n}?", ts=ts), event_id=f"EvReplica{n}")
    assert post_event(f"{replica.url}/slack/events", body).status_code == 200


def _concluded(fake: FakeSlackAPI) -> list[dict[str, object]]:
    return [c for c in fake.calls_to("reactions.add") if c.get("name") in ("bulb", "white_check_mark", "warning")]


def _health(replica: Replica) -> dict[str, int]:
    try:
        return dict(requests.get(f"{replica.url}/readyz", timeout=2).json())
    except (requests.RequestException, ValueError):
        return {}


def _stored(tmp_path: Path, trace_id: str) -> Trace | None:
    store = SqliteTraceStore(tmp_path / "traces.db")  # the one the replicas share (tests/fakes/replicas.py)
    try:
        return store.get(trace_id)
    finally:
        store.close()


def test_kill_9_of_the_replica_running_a_slack_diagnosis_the_other_answers_in_the_same_thread(
    redis_url: str, start_replica: StartReplica, fake_slack: FakeSlackAPI, tmp_path: Path
) -> None:
    replicas = [start_replica(redis_url), start_replica(redis_url)]
    _mention(replicas[0], 5, THREAD)
    wait_until(lambda: any(j.get("trace_id") for j in _slack_jobs(redis_url)), timeout_s=30, what="the job to run")
    [job] = _slack_jobs(redis_url)
    owner_pid, first = int(job["owner"].rsplit("-", 1)[1]), job["trace_id"]
    [victim] = [r for r in replicas if r.pid == owner_pid]
    [survivor] = [r for r in replicas if r.pid != owner_pid]
    # killed once its first step (the tool call) is stored, while the model's answer is still 1.5 s away
    wait_until(
        lambda: len(getattr(_stored(tmp_path, first), "steps", ())) == 1,
        timeout_s=30,
        what="the first step in the store",
    )
    running = survivor.api("GET", f"/api/traces/{first}")  # any replica knows it runs
    assert running.status_code == 202 and running.json()["status"] == "running"
    assert [s["action"] for s in running.json()["steps"]] == ["query_metrics"]
    os.kill(victim.pid, signal.SIGKILL)
    victim.process.wait(10)
    wait_until(lambda: len(_concluded(fake_slack)) == 1, timeout_s=60, what="the survivor's answer")
    assert "re-running slack job" in survivor.log()
    [takeover] = [c for c in fake_slack.calls_to("chat.postMessage") if "re-running it here" in str(c.get("text"))]
    assert takeover["thread_ts"] == THREAD and takeover["channel"] == "C1"
    assert "Attempt 1 got through 1 step before its replica stopped: `query_metrics` error" in takeover["text"]
    assert f"opsbot traces show {first}" in takeover["text"]
    interrupted = survivor.api("GET", f"/api/traces/{first}").json()
    assert interrupted["stop_reason"] == "interrupted" and len(interrupted["steps"]) == 1
    assert "partial" not in " ".join(interrupted["notes"])  # closed: no longer "running" anywhere
    answered = [c for c in fake_slack.calls if ANSWER in str(c.params) and c.method != "chat.postEphemeral"]
    final = answered[-1].params
    assert final.get("thread_ts", THREAD) == THREAD and final["channel"] == "C1"
    assert [c["name"] for c in _concluded(fake_slack)] != ["warning"]  # a full answer, not "interrupted"
    wait_until(lambda: _slack_jobs(redis_url) == [], what="the job to be acked and forgotten")


def test_sigterm_with_slack_jobs_queued_hands_them_to_the_other_replica_and_none_says_restarting(
    redis_url: str, start_replica: StartReplica, fake_slack: FakeSlackAPI, slow_llm: ScriptedLLM
) -> None:
    # Every run's first model reply waits for `release`: on a loaded machine a run could otherwise end (and its
    # worker take a queued job) before "one running on each, two queued" was ever observed.
    release = threading.Event()

    def held(body: dict[str, Any]) -> dict[str, Any]:
        if not tool_results(body.get("messages", [])):
            release.wait(90)
        return tool_then_answer(body)

    slow_llm.responder = held
    one_worker = {"OPSBOT_SLACK__WORKERS": "1", "OPSBOT_SERVER__SHUTDOWN_DRAIN_S": "30"}
    leaving, staying = start_replica(redis_url, **one_worker), start_replica(redis_url, **one_worker)
    for n in range(4):
        _mention(leaving, n, f"16999999{n}9.000100")
    wait_until(
        lambda: (
            _health(leaving).get("workers_busy") == 1
            and _health(staying).get("workers_busy") == 1
            and _health(leaving).get("queued") == 2
        ),
        timeout_s=60,
        what="one run on each replica, two queued",
    )
    leaving.process.send_signal(signal.SIGTERM)
    release.set()  # the held replies still take LLM_DELAY_S: the signal is handled long before a run can end
    assert leaving.process.wait(60) == 0
    wait_until(lambda: len(_concluded(fake_slack)) == 4, timeout_s=90, what="all four answers")
    posts = [str(c.get("text")) for c in fake_slack.calls_to("chat.postMessage")]
    assert not any(RESTARTING_TEXT in p or "restarting" in p for p in posts)
    assert not any("internal error" in str(c) for c in fake_slack.calls)
    assert [c["name"] for c in _concluded(fake_slack)].count("warning") == 0
    assert leaving.log().count("answered trace_id=") == 1  # its running one, finished within the drain
    # its own and the two handed over (the log line follows the reaction: wait for it rather than race it)
    wait_until(lambda: staying.log().count("answered trace_id=") == 3, what="the staying replica's 3 answers")


def test_the_queued_notice_counts_the_workers_of_every_replica(
    redis_url: str, start_replica: StartReplica, fake_slack: FakeSlackAPI, slow_llm: ScriptedLLM
) -> None:
    release = threading.Event()

    def held(body: dict[str, Any]) -> dict[str, Any]:  # every run holds until the notice was seen
        if not tool_results(body.get("messages", [])):
            release.wait(90)
        return tool_then_answer(body)

    slow_llm.responder = held
    one = start_replica(redis_url, OPSBOT_SLACK__WORKERS="1")
    two = start_replica(redis_url, OPSBOT_SLACK__WORKERS="2")
    try:
        for n in range(3):
            _mention(one if n == 0 else two, n, f"16999999{n}9.000100")
        wait_until(
            lambda: _health(one).get("workers_busy") == 1 and _health(two).get("workers_busy") == 2,
            timeout_s=120,
            what="all three workers of the two replicas busy",
        )  # two processes, a loaded box
        _mention(one, 3, "1699999939.000100")
        wait_until(
            lambda: any("⏳" in str(c.get("text")) for c in fake_slack.calls_to("chat.postMessage")),
            timeout_s=60,
            what="the fourth mention's queued notice",
        )
        [notice] = [c for c in fake_slack.calls_to("chat.postMessage") if "⏳" in str(c.get("text"))]
        assert notice["thread_ts"] == "1699999939.000100"
        assert "You're next in line: all 3 diagnosis workers are busy" in notice["text"]  # not "the worker"
    finally:
        release.set()
    wait_until(lambda: len(_concluded(fake_slack)) == 4, timeout_s=90, what="all four answers")
