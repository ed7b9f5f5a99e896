"""Slack diagnoses on a Redis stream (real redis-server, FakeSlackAPI): two Runners are two replicas."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest
import redis

from bot.durable.capacity import Capacity, Workers
from bot.durable.group import ConsumerGroup
from bot.engine.types import Question, Trace
from bot.slack.delivery.progress import ProgressOptions, ThreadProgress
from bot.slack.intake.listeners import build_web_client
from bot.slack.jobs.backlog import Lanes, SlackState
from bot.slack.jobs.handover import INTERRUPTED_TEXT, MOVED_TEXT, MessageOwnership
from bot.slack.jobs.redisstate import RedisDedupe, RedisThreadMemory
from bot.slack.jobs.restart import RESTARTING_TEXT
from bot.slack.jobs.runner import Runner
from bot.slack.jobs.slackstream import SlackJobStream
from bot.slack.jobs.state import Job, MemoryWorkQueue
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
        stream = SlackJobStream(
            client, workers=workers, queue_size=32, claim_idle_s=claim_idle_s, max_attempts=max_attempts
        )
        runner = Runner(
            build_web_client(BOT_TOKEN, fake_slack.base_url),
            responder or ScriptedResponder(),
            persist=store.save if store else lambda trace: None,
            state=SlackState(
                RedisDedupe(client),
                RedisThreadMemory(client),
                MemoryWorkQueue(1),
                durable=stream,
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


def _dead_replica_took(redis_url: str, job: Job, *, attempts: int, progress_ts: str = "") -> str:
    """Queue `job` as a replica that then read it and died: never acked, attempts and progress as given."""
    client = redis.Redis.from_url(redis_url)
    stream = SlackJobStream(client, claim_idle_s=0.5)
    put = stream.put(job)
    assert put is not None
    job_id = put[0]
    assert ConsumerGroup(client, STREAM, claim_idle_s=0.5).next_message("deadhost-1-slack-0", block_ms=10)
    client.hset(f"opsbot:slack-job:{job_id}", "attempts", attempts)
    if progress_ts:
        stream.take_message(job_id, job.channel, progress_ts)
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
    wait_until(lambda: redis.Redis.from_url(redis_url).xlen(STREAM) == 0, what="the job to be acked")


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


def test_a_job_whose_replica_died_is_re_run_in_its_thread_by_another_replica(
    make_runner: MakeRunner, fake_slack: FakeSlackAPI, redis_url: str
) -> None:
    job = a_job()
    _dead_replica_took(redis_url, job, attempts=1, progress_ts="1700000001.000200")
    responder = ScriptedResponder()
    survivor = make_runner(responder)
    wait_until(lambda: _concluded(fake_slack) == 1, timeout_s=30, what="the re-run's answer")
    [stop] = fake_slack.calls_to("chat.stopStream")
    assert stop["ts"] == "1700000001.000200" and stop["markdown_text"] == MOVED_TEXT  # the dead attempt's stream
    [takeover] = fake_slack.calls_to("chat.postMessage")
    assert "re-running it here (attempt 2)" in takeover["text"] and takeover["thread_ts"] == job.thread_ts
    takeover_ts = fake_slack.responses_to("chat.postMessage")[0]["ts"]
    final = fake_slack.calls_to("chat.update")[-1]  # the re-run continues in its own message, edited in place
    assert final["ts"] == takeover_ts and "hikari.maximumPoolSize" in str(final)
    assert [q.text for q in responder.questions] == [job.question.text]
    owner = redis.Redis.from_url(redis_url).get("opsbot:slack-owner:C1:1700000001.000200")
    assert owner is not None and owner.decode() == survivor._durable.replica  # type: ignore[union-attr]
    wait_until(lambda: redis.Redis.from_url(redis_url).xlen(STREAM) == 0, what="the job to be acked")
    group = ConsumerGroup(redis.Redis.from_url(redis_url), STREAM, claim_idle_s=0.5)
    wait_until(
        lambda: not any(c["name"].startswith("deadhost-") for c in group.consumers()),
        timeout_s=30,
        what="the dead replica's consumer to be removed by the survivor's heartbeat",
    )


def test_past_max_attempts_the_job_is_finished_in_its_thread_as_interrupted(
    make_runner: MakeRunner, fake_slack: FakeSlackAPI, redis_url: str
) -> None:
    job = a_job()
    _dead_replica_took(redis_url, job, attempts=2)
    responder = ScriptedResponder()
    make_runner(responder, max_attempts=2)
    [said] = fake_slack.wait_for("chat.postMessage", timeout_s=30)
    assert said["text"] == INTERRUPTED_TEXT.format(attempts=2) and said["thread_ts"] == job.thread_ts
    assert "Re-run?" in said["text"]
    assert responder.questions == []  # not run a third time
    wait_until(
        lambda: any(c.get("name") == "warning" for c in fake_slack.calls_to("reactions.add")), what="the ⚠️ reaction"
    )


def test_on_stop_queued_jobs_stay_in_the_stream_for_another_replica_and_none_is_told_restarting(
    make_runner: MakeRunner, fake_slack: FakeSlackAPI, redis_url: str
) -> None:
    gate = threading.Event()
    leaving = make_runner(ScriptedResponder(gate=gate))
    for n in range(3):
        leaving.submit(a_job(n, thread_ts=f"1700000000.00010{n}"))
    wait_until(lambda: leaving.active == 1 and leaving.queued == 2, what="one running, two queued")
    leaving.stop(timeout_s=0.2)  # the running one is held past the deadline
    assert not any(RESTARTING_TEXT in str(c.get("text")) for c in fake_slack.calls_to("chat.postMessage"))
    assert leaving.queued == 2
    responder = ScriptedResponder()
    make_runner(responder, workers=2)
    wait_until(lambda: len(responder.questions) == 3, timeout_s=30, what="the other replica to take all three")
    gate.set()


def test_a_replica_whose_progress_message_was_taken_over_writes_to_it_no_more(
    redis_url: str, fake_slack: FakeSlackAPI
) -> None:
    client = redis.Redis.from_url(redis_url)
    paused, other = SlackJobStream(client, claim_idle_s=1), SlackJobStream(redis.Redis.from_url(redis_url))
    other.replica = "otherhost-2"
    progress = ThreadProgress(
        build_web_client(BOT_TOKEN, fake_slack.base_url),
        a_job(),
        ProgressOptions(use_streaming=False, update_interval_s=0.0),
        owner=MessageOwnership(paused, "job1", "C1"),
    )
    steps = ScriptedResponder(steps=2)
    trace: Trace = steps(a_job().question, None)
    progress.on_step(trace.steps[0])
    [posted] = fake_slack.calls_to("chat.postMessage")
    ts = fake_slack.responses_to("chat.postMessage")[0]["ts"]
    assert posted["channel"] == "C1" and paused.owns_message("C1", ts)
    other.take_message("job1", "C1", ts)  # the job was claimed by another replica while this one was paused
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
