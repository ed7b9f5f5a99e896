"""Two real `opsbot serve` processes sharing one real redis-server (and one SQLite trace store).

The LLM is the ScriptedLLM: a tool call, then the answer, 3 s in all, so a diagnosis is still running when a
replica is killed or stopped. The replicas come from tests/fakes/replicas.py.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
import redis

from bot.store.sqlite import SqliteTraceStore
from tests.fakes.replicas import ANSWER, Replica, StartReplica
from tests.fakes.slack import FakeSlackAPI, event_body, mention_event, post_event
from tests.slack.conftest import wait_until


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
    wait_until(
        lambda: _finished(tmp_path / "traces.db", trace_id) is not None,
        timeout_s=60,
        what="the survivor to finish the job",
    )
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
    wait_until(lambda: all(_finished(tmp_path / "traces.db", t) for t in ids), timeout_s=90, what="every run to end")
    ends = [_finished(tmp_path / "traces.db", t) for t in ids]
    answers = [str(e["answer"]) for e in ends if e]
    assert not any("internal error" in a for a in answers)
    assert answers.count(ANSWER) == (8 if redis_url else 4)
    if not redis_url:
        assert sum("restarting" in a and "Re-run?" in a for a in answers) == 4


def _running(replica: Replica, ids: list[str]) -> int:
    return sum(replica.api("GET", f"/api/traces/{t}").json().get("status") == "running" for t in ids)
