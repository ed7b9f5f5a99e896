"""The API's jobs across real `opsbot serve` processes sharing one real redis-server and no filesystem.

The trace store is the Elasticsearch stand-in. The LLM is the ScriptedLLM: a tool call, then the answer, 3 s in all,
so a diagnosis is still running when a replica is killed or stopped. The replicas come from tests/fakes/replicas.py.
"""

from __future__ import annotations

import os
import signal
from typing import Any

import pytest
import redis

from bot.store.base import is_partial
from bot.store.elastic import ElasticsearchTraceStore
from tests.fakes.replicas import ANSWER, Replica, StartReplica
from tests.slack.conftest import wait_until


def _job(redis_url: str, trace_id: str) -> dict[str, str]:
    raw = redis.Redis.from_url(redis_url, decode_responses=True).hgetall(f"opsbot:job:{trace_id}")
    return {str(k): str(v) for k, v in raw.items()}


def _finished(store: ElasticsearchTraceStore, trace_id: str) -> dict[str, Any] | None:
    trace = store.get(trace_id)
    if trace is None or is_partial(trace):
        return None
    return {"answer": trace.answer, "complete": trace.complete, "notes": trace.notes, "steps": len(trace.steps)}


def test_kill_9_of_the_replica_running_a_diagnosis_the_other_goes_on_from_its_step(
    redis_url: str, start_replica: StartReplica, fleet_store: ElasticsearchTraceStore
) -> None:
    replicas = [start_replica(redis_url), start_replica(redis_url)]
    trace_id = replicas[0].diagnose_async("why is order slow since 15:05?")
    wait_until(
        lambda: redis.Redis.from_url(redis_url).llen(f"opsbot:job:{trace_id}:steps") == 1,
        timeout_s=60,
        what="the first step kept in Redis",
    )
    owner_pid = int(_job(redis_url, trace_id)["owner"].rsplit("-", 1)[1])
    [victim] = [r for r in replicas if r.pid == owner_pid]
    [survivor] = [r for r in replicas if r.pid != owner_pid]
    mid = survivor.api("GET", f"/api/traces/{trace_id}")  # any replica reads the steps in flight from Redis
    assert mid.status_code == 202 and mid.json()["status"] == "running"
    assert [s["action"] for s in mid.json()["steps"]] == ["query_metrics"]
    os.kill(victim.pid, signal.SIGKILL)
    victim.process.wait(10)
    wait_until(lambda: _finished(fleet_store, trace_id) is not None, timeout_s=90, what="the survivor to finish")
    done = survivor.api("GET", f"/api/traces/{trace_id}").json()
    assert done["answer"] == ANSWER and done["complete"] is True
    assert [s["action"] for s in done["steps"]][:2] == ["query_metrics", "query_metrics"]  # the dead one's, then its
    assert any("taken over: attempt 2" in n for n in done["notes"])
    assert _job(redis_url, trace_id)["attempts"] == "2"
    assert f"taking over job {trace_id} (attempt 2) with the 1 steps found so far" in survivor.log()


@pytest.mark.parametrize("shared", ["redis", "memory"])
def test_sigterm_during_4_running_and_4_queued_runs_ends_none_as_internal_error(
    shared: str, request: pytest.FixtureRequest, start_replica: StartReplica, fleet_store: ElasticsearchTraceStore
) -> None:
    redis_url = str(request.getfixturevalue("redis_url")) if shared == "redis" else ""
    leaving = start_replica(redis_url, OPSBOT_SERVER__API_QUEUE_SIZE="8", OPSBOT_SERVER__SHUTDOWN_DRAIN_S="30")
    ids = [leaving.diagnose_async(f"why is order slow since 15:0{n}?") for n in range(8)]
    wait_until(lambda: _running(leaving, ids) == 4, timeout_s=60, what="4 runs to be running")
    leaving.process.send_signal(signal.SIGTERM)
    assert leaving.process.wait(60) == 0
    if redis_url:  # the queued ones stayed in the stream: the next replica answers them
        start_replica(redis_url)
    wait_until(lambda: all(_finished(fleet_store, t) for t in ids), timeout_s=120, what="every run to end")
    ends = [_finished(fleet_store, t) for t in ids]
    answers = [str(e["answer"]) for e in ends if e]
    assert not any("internal error" in a for a in answers)
    assert answers.count(ANSWER) == (8 if redis_url else 4)
    if not redis_url:
        assert sum("restarting" in a and "Re-run?" in a for a in answers) == 4


def _running(replica: Replica, ids: list[str]) -> int:
    return sum(replica.api("GET", f"/api/traces/{t}").json().get("status") == "running" for t in ids)
