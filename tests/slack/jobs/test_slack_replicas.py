"""Slack diagnoses on a fleet: two real `opsbot serve` processes that share no filesystem, only a real redis-server,
the Elasticsearch stand-in (the trace store, logs and deploys), a real Prometheus, and a fake Slack API that answers
each call after 150 ms (tests/fakes/replicas.py).

Signed Events API deliveries go to a replica's /slack/events. The ScriptedLLM makes a tool call, then answers (3 s
in all), so a diagnosis is still running when a replica is killed or stopped. Every case checks the same promise:
each mention is answered exactly once, in its own thread, and the answer shows the steps.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

import redis

from bot.durable.runner import RESTARTING_TEXT
from bot.slack.jobs.handover import MOVED_TEXT
from bot.store.elastic import ElasticsearchTraceStore
from tests.fakes.llm import ScriptedLLM, tool_results
from tests.fakes.replicas import ANSWER, Replica, StartReplica, thread_answers, tool_then_answer
from tests.fakes.slack import FakeSlackAPI, event_body, mention_event, post_event
from tests.slack.conftest import wait_until

THREAD = "1699999999.000100"


def _mention(replica: Replica, n: int, ts: str, *, retry: int | None = None) -> None:
    body = event_body(mention_event(f"why is order slow since 15:{n:02d}?", ts=ts), event_id=f"EvFleet{n}")
    assert post_event(f"{replica.url}/slack/events", body, retry_num=retry).status_code == 200


def _slack_jobs(redis_url: str) -> list[dict[str, str]]:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    jobs = [client.hgetall(key) for key in client.scan_iter("opsbot:job:*") if not str(key).endswith(":steps")]
    return [{str(k): str(v) for k, v in job.items()} for job in jobs if job.get("kind") == "slack"]


def _answered_once_with_steps(fake: FakeSlackAPI, threads: list[str]) -> None:
    answers = thread_answers(fake)
    assert {t: len(answers.get(t, [])) for t in threads} == dict.fromkeys(threads, 1)
    assert all(answers[t][0].steps_shown for t in threads), "an answer without its steps"
    assert all(ANSWER.split(" because")[0] in answers[t][0].text for t in threads)


def _concluded(fake: FakeSlackAPI) -> int:
    return sum(c.get("name") in ("bulb", "white_check_mark", "warning") for c in fake.calls_to("reactions.add"))


def _held_first_reply(slow_llm: ScriptedLLM) -> threading.Event:
    """Every run's first model reply waits for the returned event (a run must not end before the test looked)."""
    release = threading.Event()

    def held(body: dict[str, Any]) -> dict[str, Any]:
        if not tool_results(body.get("messages", [])):
            release.wait(90)
        return tool_then_answer(body)

    slow_llm.responder = held
    return release


def test_a_retry_delivered_to_the_other_replica_is_answered_once(
    redis_url: str, start_replica: StartReplica, fake_slack: FakeSlackAPI
) -> None:
    one, other = start_replica(redis_url), start_replica(redis_url)
    _mention(one, 5, THREAD)
    _mention(other, 5, THREAD, retry=1)  # Slack's retry of the same event, to the other replica
    wait_until(lambda: _concluded(fake_slack) == 1, timeout_s=90, what="the answer")
    _answered_once_with_steps(fake_slack, [THREAD])
    assert len(fake_slack.calls_to("chat.startStream")) == 1
    assert "duplicate delivery ignored" in one.log() + other.log()


def test_a_burst_split_across_two_replicas_is_answered_once_each_with_its_steps(
    redis_url: str, start_replica: StartReplica, fake_slack: FakeSlackAPI
) -> None:
    two_workers = {"OPSBOT_SLACK__WORKERS": "2"}
    replicas = [start_replica(redis_url, **two_workers), start_replica(redis_url, **two_workers)]
    threads = [f"1700000200.{n:06d}" for n in range(12)]
    for n, ts in enumerate(threads):  # 4 workers in all: most wait, and answer in their "queued" notice
        _mention(replicas[n % 2], n, ts)
    wait_until(lambda: _concluded(fake_slack) == len(threads), timeout_s=240, what="all twelve answers")
    _answered_once_with_steps(fake_slack, threads)
    assert all(r.log().count("answered trace_id=") >= 1 for r in replicas)  # both took their share


def test_kill_9_mid_run_the_other_replica_goes_on_in_the_same_thread_from_the_step_found(
    redis_url: str, start_replica: StartReplica, fake_slack: FakeSlackAPI, fleet_store: ElasticsearchTraceStore
) -> None:
    replicas = [start_replica(redis_url), start_replica(redis_url)]
    _mention(replicas[0], 5, THREAD)
    client = redis.Redis.from_url(redis_url)
    wait_until(lambda: any(j.get("owner") for j in _slack_jobs(redis_url)), timeout_s=60, what="the job to run")
    [job] = _slack_jobs(redis_url)
    [trace_id] = [k.decode().split(":")[2] for k in client.scan_iter("opsbot:job:*") if not k.endswith(b":steps")]
    [victim] = [r for r in replicas if r.pid == int(job["owner"].rsplit("-", 1)[1])]
    [survivor] = [r for r in replicas if r is not victim]
    # killed once its first step is kept (in Redis) and shown in its stream, while the model's answer is 1.5 s away
    wait_until(lambda: client.llen(f"opsbot:job:{trace_id}:steps") == 1, timeout_s=60, what="the first step kept")
    wait_until(lambda: bool(_slack_jobs(redis_url)[0].get("m:progress_ts")), timeout_s=30, what="its stream opened")
    os.kill(victim.pid, signal.SIGKILL)
    victim.process.wait(10)
    wait_until(lambda: _concluded(fake_slack) == 1, timeout_s=90, what="the survivor's answer")
    _answered_once_with_steps(fake_slack, [THREAD])
    [takeover] = [c for c in fake_slack.calls_to("chat.postMessage") if "going on here" in str(c.get("text"))]
    assert takeover["thread_ts"] == THREAD
    assert "Attempt 1 got through 1 step before its replica stopped: `query_metrics` ok" in takeover["text"]
    [moved] = [c for c in fake_slack.calls_to("chat.stopStream") if c.get("markdown_text") == MOVED_TEXT]
    assert moved["ts"] == fake_slack.responses_to("chat.startStream")[0]["ts"]  # the dead attempt's stream, closed
    [answer] = thread_answers(fake_slack)[THREAD]
    assert "`1`" in answer.text and "`2`" in answer.text  # its own step and the one the dead replica found
    stored = fleet_store.get(trace_id)
    assert stored is not None and [s.action for s in stored.steps][:2] == ["query_metrics", "query_metrics"]
    assert any("taken over: attempt 2" in n for n in stored.notes)
    assert "taking over job" in survivor.log()


def test_a_replica_killed_as_slack_opens_its_stream_leaves_no_stream_open(
    redis_url: str, start_replica: StartReplica, fake_slack: FakeSlackAPI
) -> None:
    replicas = [start_replica(redis_url), start_replica(redis_url)]
    slack_answers = threading.Event()
    fake_slack.hold("chat.startStream", slack_answers)  # Slack opened the stream; its answer is on the way
    _mention(replicas[0], 5, THREAD)
    [opened] = fake_slack.wait_for("chat.startStream", timeout_s=60)
    [job] = _slack_jobs(redis_url)
    [victim] = [r for r in replicas if r.pid == int(job["owner"].rsplit("-", 1)[1])]
    assert job.get("m:stream_pending") and not job.get("m:progress_ts")  # the intent, recorded before the call
    os.kill(victim.pid, signal.SIGKILL)
    victim.process.wait(10)
    slack_answers.set()
    stream_ts = fake_slack.responses_to("chat.startStream")[0]["ts"]
    wait_until(lambda: _concluded(fake_slack) == 1, timeout_s=90, what="the survivor's answer")
    stops = [c for c in fake_slack.calls_to("chat.stopStream") if c["ts"] == stream_ts]
    assert [c["markdown_text"] for c in stops] == [MOVED_TEXT]  # found in the thread and stopped
    assert opened["thread_ts"] == THREAD
    _answered_once_with_steps(fake_slack, [THREAD])


def test_sigterm_during_a_burst_hands_the_queued_jobs_over_and_none_is_told_restarting(
    redis_url: str, start_replica: StartReplica, fake_slack: FakeSlackAPI, slow_llm: ScriptedLLM
) -> None:
    release = _held_first_reply(slow_llm)
    one_worker = {"OPSBOT_SLACK__WORKERS": "1", "OPSBOT_SERVER__SHUTDOWN_DRAIN_S": "30"}
    leaving, staying = start_replica(redis_url, **one_worker), start_replica(redis_url, **one_worker)
    threads = [f"1700000300.{n:06d}" for n in range(6)]
    for n, ts in enumerate(threads):
        _mention(leaving, n, ts)
    wait_until(
        lambda: (
            leaving.health().get("workers_busy") == 1
            and staying.health().get("workers_busy") == 1
            and leaving.health().get("queued") == 4
        ),
        timeout_s=90,
        what="one run on each replica, four queued",
    )
    leaving.process.send_signal(signal.SIGTERM)
    release.set()  # the held replies still take the LLM's time: the signal is handled long before a run ends
    assert leaving.process.wait(60) == 0
    wait_until(lambda: _concluded(fake_slack) == len(threads), timeout_s=180, what="all six answers")
    _answered_once_with_steps(fake_slack, threads)
    posts = [str(c.get("text")) for c in fake_slack.calls_to("chat.postMessage")]
    assert not any(RESTARTING_TEXT in p or "interrupted" in p for p in posts)
    assert [c["name"] for c in fake_slack.calls_to("reactions.add")].count("warning") == 0
    assert leaving.log().count("answered trace_id=") == 1  # its running one, finished within the drain
    wait_until(lambda: staying.log().count("answered trace_id=") == 5, what="the staying replica's 5 answers")


def test_the_queued_notice_counts_the_workers_of_every_replica(
    redis_url: str, start_replica: StartReplica, fake_slack: FakeSlackAPI, slow_llm: ScriptedLLM
) -> None:
    release = _held_first_reply(slow_llm)
    one = start_replica(redis_url, OPSBOT_SLACK__WORKERS="1")
    two = start_replica(redis_url, OPSBOT_SLACK__WORKERS="2")
    try:
        for n in range(3):
            _mention(one if n == 0 else two, n, f"16999999{n}9.000100")
        wait_until(
            lambda: one.health().get("workers_busy") == 1 and two.health().get("workers_busy") == 2,
            timeout_s=120,
            what="all three workers of the two replicas busy",
        )
        _mention(one, 3, "1699999939.000100")
        [notice] = fake_slack.wait_for("chat.postMessage", timeout_s=60, where=lambda p: "⏳" in str(p.get("text")))
        assert notice["thread_ts"] == "1699999939.000100"
        assert "You're next in line: all 3 diagnosis workers are busy" in notice["text"]  # not "the worker"
    finally:
        release.set()
    wait_until(lambda: _concluded(fake_slack) == 4, timeout_s=120, what="all four answers")
