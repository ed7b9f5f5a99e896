"""Slack diagnoses on the job runner's Redis backend (real redis-server, FakeSlackAPI): two Runners are two replicas."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator

import pytest
import redis

from bot.durable.attempt import Attempt, step_to_record
from bot.durable.capacity import Capacity, Workers
from bot.durable.group import ConsumerGroup
from bot.durable.redisjobs import RedisJobs
from bot.durable.runner import JobRunner, RunnerOptions, interrupted_text
from bot.engine.types import Question, Step, Trace
from bot.slack.delivery.progress import ProgressOptions, ThreadProgress
from bot.slack.intake.listeners import build_web_client
from bot.slack.jobs.backlog import SLACK_JOBS, Lanes, SlackState
from bot.slack.jobs.handover import MOVED_TEXT, RERUN_TEXT, AttemptOwner
from bot.slack.jobs.redisstate import RedisDedupe, RedisThreadMemory
from bot.slack.jobs.runner import Runner
from bot.slack.jobs.state import Job, job_to_payload
from bot.slack.jobs.steplog import StepLog
from bot.store.base import TraceStore
from tests.fakes.slack import BOT_TOKEN, FakeSlackAPI, ScriptedResponder
from tests.slack.conftest import wait_until

MakeRunner = Callable[..., Runner]
STREAM = "opsbot:slack-jobs"


def a_job(n: int = 1, thread_ts: str = "1700000000.000100") -> Job:
    text = f"why is order slow since 15:0{n}?"
    return Job(
        Question(text, user="U1", channel="C1", thread_ts=thread_ts, source="slack"),
        "C1",
        thread_ts,
        react_ts=thread_ts,
        user="U1",
    )


def options(workers: int = 1, lease_s: float = 0.5, max_attempts: int = 2) -> RunnerOptions:
    return RunnerOptions(name="slack-jobs", workers=workers, queue_size=32, lease_s=lease_s, max_attempts=max_attempts)


@pytest.fixture
def make_runner(redis_url: str, fake_slack: FakeSlackAPI) -> Iterator[MakeRunner]:
    made: list[Runner] = []

    def make(
        responder: ScriptedResponder | None = None,
        *,
        workers: int = 1,
        claim_idle_s: float = 0.5,
        max_attempts: int = 2,
        start: bool = True,
        store: TraceStore | None = None,
    ) -> Runner:
        client = redis.Redis.from_url(redis_url)
        runner = Runner(
            build_web_client(BOT_TOKEN, fake_slack.base_url),
            responder or ScriptedResponder(),
            persist=store.save if store else lambda trace: None,
            state=SlackState(
                RedisDedupe(client),
                RedisThreadMemory(client),
                jobs=JobRunner(options(workers, claim_idle_s, max_attempts), client),
                steps=StepLog(store) if store else None,
            ),
            lanes=Lanes(workers=workers),
            progress=ProgressOptions(append_interval_s=0.0),
        )
        if start:
            runner.start()
        made.append(runner)
        return runner

    yield make
    for runner in made:
        runner.stop(timeout_s=1)


def _concluded(fake: FakeSlackAPI) -> int:
    """Jobs marked done (💡, ✅ or ⚠️ on the asking message)."""
    return sum(c.get("name") in ("bulb", "white_check_mark", "warning") for c in fake.calls_to("reactions.add"))


def _dead_replica_took(
    redis_url: str, job: Job, *, attempts: int, marks: dict[str, str] | None = None, steps: tuple[Step, ...] = ()
) -> str:
    """Queue `job` as a replica that then read it, kept `steps`, and died: never acked or settled."""
    client = redis.Redis.from_url(redis_url)
    put = JobRunner(options(), client).put(SLACK_JOBS, job_to_payload(job), "d" * 32)
    assert put is not None
    job_id = put[0]
    assert ConsumerGroup(client, STREAM, claim_idle_s=0.5).next_message("deadhost-1-slack-0", block_ms=10)
    client.hset(f"opsbot:job:{job_id}", mapping={"attempts": attempts, "status": "running"})
    for name, value in (marks or {}).items():
        client.hset(f"opsbot:job:{job_id}", f"m:{name}", value)
    for step in steps:
        client.rpush(f"opsbot:job:{job_id}:steps", step_to_record(step, attempts))
    return job_id


def test_a_durable_diagnosis_is_answered_in_its_thread_and_leaves_the_stream(
    make_runner: MakeRunner, fake_slack: FakeSlackAPI, redis_url: str
) -> None:
    runner = make_runner()
    assert runner.submit(a_job()).outcome in ("started", "queued")
    [stop] = fake_slack.wait_for("chat.stopStream", timeout_s=20)
    assert stop["channel"] == "C1"
    [start] = fake_slack.calls_to("chat.startStream")
    assert start["thread_ts"] == "1700000000.000100"
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    wait_until(lambda: client.xlen(STREAM) == 0, what="the job to be acked")
    [key] = [k for k in client.scan_iter("opsbot:job:*") if client.type(k) == "hash"]
    assert client.hget(key, "status") == "done"
    assert client.hget(key, "m:progress_ts") == fake_slack.responses_to("chat.startStream")[0]["ts"] == stop["ts"]
    assert not client.exists(f"{key}:steps")  # settled: the steps in flight left Redis, the trace is in the store


def test_a_repeat_on_another_replica_while_the_first_runs_is_not_a_second_run(
    make_runner: MakeRunner, fake_slack: FakeSlackAPI
) -> None:
    gate = threading.Event()
    responder = ScriptedResponder(gate=gate)
    one, other = make_runner(responder), make_runner(responder)
    assert one.submit(a_job()).outcome in ("started", "queued")
    assert other.submit(a_job()).outcome == "duplicate"
    gate.set()
    wait_until(lambda: _concluded(fake_slack) == 1, what="the answer")
    assert len(responder.questions) == 1


def test_a_takeover_closes_the_dead_stream_and_goes_on_from_the_steps_found_in_redis(
    make_runner: MakeRunner, fake_slack: FakeSlackAPI, redis_url: str
) -> None:
    job = a_job()
    found = Step(1, "look", "query_logs", {"service": "order"}, "142x HikariPool timeout\nmore", "ok")
    job_id = _dead_replica_took(redis_url, job, attempts=1, marks={"progress_ts": "1700000001.000200"}, steps=(found,))
    responder = ScriptedResponder(steps=1)
    make_runner(responder)
    wait_until(lambda: _concluded(fake_slack) == 1, timeout_s=30, what="the takeover's answer")
    [stop] = fake_slack.calls_to("chat.stopStream")
    assert stop["ts"] == "1700000001.000200" and stop["markdown_text"] == MOVED_TEXT  # the dead attempt's stream
    [takeover] = fake_slack.calls_to("chat.postMessage")
    assert "going on here from what it had found (attempt 2)" in takeover["text"]
    assert (
        "Attempt 1 got through 1 step before its replica stopped: `query_logs` ok: 142x HikariPool" in takeover["text"]
    )
    takeover_ts = fake_slack.responses_to("chat.postMessage")[0]["ts"]
    progress, final = fake_slack.calls_to("chat.update")[0], fake_slack.calls_to("chat.update")[-1]
    assert progress["ts"] == final["ts"] == takeover_ts  # the notice became the progress, then the answer
    assert "Logs: order" in json.dumps(progress["blocks"])  # the earlier step shown before any new one
    steps_list = json.dumps(final["blocks"], ensure_ascii=False)
    assert "*Steps* (2)" in steps_list and "`1`" in steps_list and "`2`" in steps_list
    [asked] = responder.questions
    assert "query_logs ok: 142x HikariPool timeout" in asked.history[-1]
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    wait_until(lambda: client.hget(f"opsbot:job:{job_id}", "status") == "done", what="the job settled")
    wait_until(lambda: client.xlen(STREAM) == 0, what="the job to be acked")
    group = ConsumerGroup(redis.Redis.from_url(redis_url), STREAM, claim_idle_s=0.5)
    wait_until(
        lambda: not any(c["name"].startswith("deadhost-") for c in group.consumers()),
        timeout_s=30,
        what="the dead replica's consumer to be removed by the survivor's heartbeat",
    )


def test_a_stream_opened_by_a_replica_that_died_before_it_learnt_the_ts_is_found_and_stopped(
    make_runner: MakeRunner, fake_slack: FakeSlackAPI, redis_url: str
) -> None:
    fake_slack.wall_clock_ts = True
    job = a_job()
    client = build_web_client(BOT_TOKEN, fake_slack.base_url)
    earlier_answer = client.chat_postMessage(channel="C1", thread_ts=job.thread_ts, text="an earlier answer")["ts"]
    time.sleep(CLOCK_GAP_S)
    _dead_replica_took(redis_url, job, attempts=1, marks={"stream_pending": f"{time.time():.6f}"})
    opened = client.chat_startStream(channel="C1", thread_ts=job.thread_ts)["ts"]  # Slack answered; nobody heard
    make_runner(ScriptedResponder(steps=1))
    wait_until(lambda: _concluded(fake_slack) == 1, timeout_s=30, what="the takeover's answer")
    stopped = [c for c in fake_slack.calls_to("chat.stopStream") if c.get("markdown_text") == MOVED_TEXT]
    assert [c["ts"] for c in stopped] == [opened]  # the orphan stream, not the earlier answer
    assert not [u for u in fake_slack.calls_to("chat.update") if u["ts"] == earlier_answer]
    [rerun] = [c for c in fake_slack.calls_to("chat.postMessage") if "(attempt 2)" in c["text"]]
    assert rerun["text"] == RERUN_TEXT.format(attempt=2)  # it had found nothing to go on from


CLOCK_GAP_S = 2.5  # longer than the skew a takeover allows between a replica's clock and Slack's


def test_past_max_attempts_the_job_is_finished_in_its_thread_as_interrupted_with_what_was_found(
    make_runner: MakeRunner, fake_slack: FakeSlackAPI, redis_url: str
) -> None:
    job = a_job()
    found = Step(1, "look", "query_metrics", {}, "change: 15:05 212 ms -> 1,180 ms", "ok")
    _dead_replica_took(redis_url, job, attempts=2, steps=(found,))
    responder = ScriptedResponder()
    make_runner(responder, max_attempts=2)
    [said] = fake_slack.wait_for("chat.postMessage", timeout_s=30)
    assert said["text"].startswith("⚠️ " + interrupted_text(2)) and said["thread_ts"] == job.thread_ts
    assert "Re-run?" in said["text"] and "`query_metrics` ok: change: 15:05 212 ms" in said["text"]
    assert responder.questions == []  # not run a third time
    wait_until(
        lambda: any(c.get("name") == "warning" for c in fake_slack.calls_to("reactions.add")), what="the ⚠️ reaction"
    )


def test_on_stop_queued_jobs_stay_in_the_stream_for_another_replica_and_none_is_told_restarting(
    make_runner: MakeRunner, fake_slack: FakeSlackAPI
) -> None:
    gate = threading.Event()
    leaving = make_runner(ScriptedResponder(gate=gate))
    for n in range(3):
        leaving.submit(a_job(n, thread_ts=f"1700000000.00010{n}"))
    wait_until(lambda: leaving.active == 1 and leaving.queued == 2, what="one running, two queued")
    leaving.stop(timeout_s=0.2)  # the running one is held past the deadline
    assert not any("restarting" in str(c.get("text")) for c in fake_slack.calls_to("chat.postMessage"))
    assert leaving.queued == 2
    responder = ScriptedResponder()
    make_runner(responder, workers=2)
    wait_until(lambda: len(responder.questions) == 3, timeout_s=30, what="the other replica to take all three")
    gate.set()


def test_an_attempt_taken_over_while_its_replica_was_paused_writes_no_more(
    redis_url: str, fake_slack: FakeSlackAPI
) -> None:
    client = redis.Redis.from_url(redis_url)
    job_id = _dead_replica_took(redis_url, a_job(), attempts=1)
    attempt = Attempt(job_id, SLACK_JOBS, job_to_payload(a_job()), 1, ledger=RedisJobs(client, options()))
    progress = ThreadProgress(
        build_web_client(BOT_TOKEN, fake_slack.base_url),
        a_job(),
        ProgressOptions(use_streaming=False, update_interval_s=0.0),
        owner=AttemptOwner(attempt),
    )
    trace: Trace = ScriptedResponder(steps=2)(a_job().question, None)
    progress.on_step(trace.steps[0])
    assert len(fake_slack.calls_to("chat.postMessage")) == 1
    client.hincrby(f"opsbot:job:{job_id}", "attempts", 1)  # another replica took the job over meanwhile
    progress.on_step(trace.steps[1])
    assert progress.finish(trace) is False
    assert fake_slack.calls_to("chat.update") == [] and len(fake_slack.calls_to("chat.postMessage")) == 1


def test_a_queue_position_counts_the_idle_workers_of_other_replicas(
    make_runner: MakeRunner, fake_slack: FakeSlackAPI, redis_url: str
) -> None:
    gate = threading.Event()
    busy = make_runner(ScriptedResponder(gate=gate))  # its one worker is busy...
    busy.submit(a_job(0, thread_ts="1700000000.000100"))
    other = Capacity(redis.Redis.from_url(redis_url), STREAM, "otherhost-2", ttl_s=60)
    wait_until(lambda: other.workers() == Workers(total=1, idle=0), what="its worker registered busy")
    other.register(workers=3, busy=0)  # ...while another replica has 3 idle workers not reading the stream yet
    outcomes = [busy.submit(a_job(n, thread_ts=f"1700000000.00020{n}")) for n in range(1, 5)]
    assert [o.outcome for o in outcomes] == ["started", "started", "started", "queued"]
    assert outcomes[-1].position == 1
    [notice] = [c for c in fake_slack.wait_for("chat.postMessage", timeout_s=10) if "⏳" in str(c["text"])]
    assert notice["thread_ts"] == "1700000000.000204"
    assert "You're next in line: all 4 diagnosis workers are busy" in notice["text"]  # the cluster's 4, not 1
    gate.set()


def test_two_replicas_see_each_others_idle_workers_and_a_job_that_one_cannot_take_is_not_queued(
    make_runner: MakeRunner, fake_slack: FakeSlackAPI
) -> None:
    gate = threading.Event()
    busy = make_runner(ScriptedResponder(gate=gate))
    busy.submit(a_job(0, thread_ts="1700000000.000100"))
    wait_until(lambda: busy.active == 1, what="the busy replica's worker busy")
    idle = make_runner(ScriptedResponder(), workers=2)
    outcomes = [busy.submit(a_job(n, thread_ts=f"1700000000.00020{n}")) for n in (1, 2)]
    assert [o.outcome for o in outcomes] == ["started", "started"]  # the other replica's two idle workers
    wait_until(lambda: _concluded(fake_slack) == 2, timeout_s=30, what="the other replica's two answers")
    assert not any("⏳" in str(c["text"]) for c in fake_slack.calls_to("chat.postMessage"))
    wait_until(lambda: idle.active == 0, what="the other replica's workers free again")
    gate.set()
