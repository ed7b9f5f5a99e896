"""Durable API work on a real redis-server: two dispatchers on the job runner's Redis backend are two replicas."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from bot.durable.attempt import step_to_record
from bot.durable.group import ConsumerGroup
from bot.durable.runner import RunnerOptions
from bot.engine.types import Question, Responder, Step, StepObserver, Trace
from bot.http.dispatch import Deliver, Dispatcher, JobFailed, QueueFull, api_dispatcher
from bot.store.sqlite import SqliteTraceStore
from tests.http.conftest import canned_responder
from tests.slack.conftest import wait_until

Make = Callable[..., Dispatcher]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteTraceStore]:
    store = SqliteTraceStore(tmp_path / "traces.db")
    yield store
    store.close()


@pytest.fixture
def make(redis_url: str, store: SqliteTraceStore) -> Iterator[Make]:
    made: list[Dispatcher] = []

    def build(responder: Responder | None = None, deliver: Deliver | None = None, **options: Any) -> Dispatcher:
        client = redis.Redis.from_url(redis_url)
        dispatcher = api_dispatcher(
            responder or canned_responder(), store, RunnerOptions(**options), client=client, deliver=deliver
        )
        made.append(dispatcher)
        return dispatcher

    yield build
    for dispatcher in made:
        dispatcher.close(5.0)


def blocked_responder(release: threading.Event, started: threading.Event | None = None) -> Responder:
    canned = canned_responder()

    def respond(question: Question, on_step: StepObserver | None) -> Trace:
        if started is not None:
            started.set()
        assert release.wait(30)
        return canned(question, on_step)

    return respond


def test_the_heartbeat_removes_the_consumers_of_replicas_gone_for_good(make: Make, redis_url: str) -> None:
    group = ConsumerGroup(redis.Redis.from_url(redis_url), "opsbot:jobs", claim_idle_s=0.2)
    group.add({"trace_id": "gone"})
    done = group.next_message("deadhost-7-0", block_ms=10)  # a replica that ran a job, then was restarted
    assert done is not None
    group.ack(done.message_id)
    make(workers=1, lease_s=0.2)
    wait_until(
        lambda: "deadhost-7-0" not in {c["name"] for c in group.consumers()},
        timeout_s=30,
        what="the dead consumer to be removed",
    )


def test_a_submitted_job_is_stored_under_its_id_and_waited_for(make: Make, store: SqliteTraceStore) -> None:
    dispatcher = make()
    trace_id = dispatcher.submit(Question("why is order slow?", source="api"))
    trace = dispatcher.wait(trace_id, 20)
    assert trace is not None and trace.trace_id == trace_id and trace.answer.startswith("order v2.8.1")
    assert dispatcher.status(trace_id)[0] == "done"
    assert store.get(trace_id) == trace


def test_a_job_submitted_on_one_replica_can_be_awaited_on_another(make: Make) -> None:
    submitter = make(workers=0)  # this replica takes no work: another one must run it
    make(workers=1)
    other = make(workers=0)
    trace_id = submitter.submit(Question("q"))
    trace = other.wait(trace_id, 20)
    assert trace is not None and trace.trace_id == trace_id


def test_an_alert_queued_on_one_replica_is_posted_by_the_replica_that_ran_it_and_an_api_job_by_none(
    make: Make,
) -> None:
    posted: list[tuple[str, str, str]] = []
    submitter = make(workers=0, deliver=lambda q, t: posted.append(("submitter", q.channel, t.trace_id)))
    make(workers=1, deliver=lambda q, t: posted.append(("runner", q.channel, t.trace_id)))
    alert = Question("why is order failing?", channel="C-alerts", source="alertmanager")
    trace_id = submitter.submit(alert, then=lambda t: posted.append(("callback", "", t.trace_id)))
    asked = submitter.submit(Question("why is order slow?"))
    assert submitter.wait(trace_id, 20) is not None and submitter.wait(asked, 20) is not None
    assert posted == [("runner", "C-alerts", trace_id)]  # the job carried its channel; the callback stayed behind


def test_steps_in_flight_live_in_redis_and_the_store_gets_the_finished_trace(
    make: Make, store: SqliteTraceStore
) -> None:
    release, seen = threading.Event(), threading.Event()
    canned = canned_responder()

    def stepping(question: Question, on_step: StepObserver | None) -> Trace:
        def hold(step: Step) -> None:
            if on_step:
                on_step(step)
            seen.set()
            assert release.wait(30)

        return canned(question, hold)

    dispatcher = make(stepping)
    trace_id = dispatcher.submit(Question("q"))
    assert seen.wait(20)
    assert store.get(trace_id) is None  # no replica's disk holds a run in flight
    running = make(workers=0).running(trace_id)  # another replica reads its steps from Redis
    assert running is not None and [s.action for s in running.steps] == ["query_metrics"]
    assert dispatcher.status(trace_id)[0] == "running"
    release.set()
    done = dispatcher.wait(trace_id, 20)
    assert done is not None and len(done.steps) == 2 and store.get(trace_id) == done
    assert dispatcher.running(trace_id) is None  # settled: its steps left Redis with it


def test_a_takeover_goes_on_from_the_steps_the_dead_replica_found(redis_url: str, make: Make) -> None:
    asked: list[Question] = []
    canned = canned_responder()

    def recording(question: Question, on_step: StepObserver | None) -> Trace:
        asked.append(question)
        return canned(question, on_step)

    dead = make(workers=0)
    trace_id = dead.submit(Question("why is order slow?"))
    client = redis.Redis.from_url(redis_url)
    client.xreadgroup("workers", "dead-replica-0", {"opsbot:jobs": ">"}, count=1)
    client.hset(f"opsbot:job:{trace_id}", mapping={"attempts": 1, "status": "running"})
    found = Step(1, "look at the logs", "query_logs", {"service": "order"}, "142x HikariPool timeout", "ok", 40)
    client.rpush(f"opsbot:job:{trace_id}:steps", step_to_record(found, 1))
    survivor = make(recording, workers=1, lease_s=0.5)
    trace = survivor.wait(trace_id, 20)
    assert trace is not None and trace.complete
    assert [(s.index, s.action) for s in trace.steps] == [(1, "query_logs"), (2, "query_metrics"), (3, "finish")]
    assert trace.totals.steps == 3 and trace.totals.elapsed_ms == 1_200 + 40
    assert any("taken over: attempt 2" in n for n in trace.notes)
    [question] = asked
    assert "query_logs ok: 142x HikariPool timeout" in question.history[-1]  # the model is told what was found


def test_a_job_whose_worker_died_is_claimed_and_rerun_by_another_replica(
    redis_url: str, make: Make, store: SqliteTraceStore
) -> None:
    # A "replica" that read the job and died: its consumer took the message and never acknowledged it.
    dead = make(workers=0)
    trace_id = dead.submit(Question("why is order slow?"))
    client = redis.Redis.from_url(redis_url)
    client.xreadgroup("workers", "dead-replica-0", {"opsbot:jobs": ">"}, count=1)
    client.hincrby(f"opsbot:job:{trace_id}", "attempts", 1)
    client.hset(f"opsbot:job:{trace_id}", "status", "running")
    survivor = make(workers=1, lease_s=0.5)
    trace = survivor.wait(trace_id, 20)
    assert trace is not None and trace.complete and trace.answer.startswith("order v2.8.1")
    wait_until(lambda: client.xlen("opsbot:jobs") == 0, what="the job to be acknowledged and removed")


def test_a_job_interrupted_too_often_is_finished_as_interrupted_not_dropped(redis_url: str, make: Make) -> None:
    dead = make(workers=0)
    trace_id = dead.submit(Question("why is order slow?"))
    client = redis.Redis.from_url(redis_url)
    client.xreadgroup("workers", "dead-replica-0", {"opsbot:jobs": ">"}, count=1)
    client.hset(f"opsbot:job:{trace_id}", mapping={"attempts": 2, "status": "running"})
    survivor = make(workers=1, lease_s=0.5, max_attempts=2)
    trace = survivor.wait(trace_id, 20)
    assert trace is not None and not trace.complete and "Re-run?" in trace.answer
    assert survivor.status(trace_id)[0] == "interrupted"


def test_a_running_job_is_not_stolen_while_its_replica_lives(make: Make) -> None:
    release, started = threading.Event(), threading.Event()
    owner = make(blocked_responder(release, started), workers=1, lease_s=0.6)
    trace_id = owner.submit(Question("q"))
    assert started.wait(20)
    thief = make(canned_responder("stolen"), workers=1, lease_s=0.6)
    assert thief.wait(trace_id, 2.5) is None  # the heartbeat keeps the job's idle time below claim_idle_s
    release.set()
    trace = owner.wait(trace_id, 20)
    assert trace is not None and trace.answer.startswith("order v2.8.1")


def test_the_queue_limit_holds_across_replicas(make: Make) -> None:
    release = threading.Event()
    dispatcher = make(blocked_responder(release), workers=1, queue_size=2)
    outcomes = []
    for n in range(5):
        try:
            dispatcher.submit(Question(f"q{n}"))
            outcomes.append("accepted")
        except QueueFull:
            outcomes.append("full")
    release.set()
    assert outcomes.count("accepted") in (2, 3) and outcomes[-1] == "full"  # 1 running (once picked up) + 2 waiting


def test_a_failing_job_reports_its_error(make: Make) -> None:
    def broken(question: Question, on_step: StepObserver | None) -> Trace:
        raise ValueError("the backend said no")

    dispatcher = make(broken)
    trace_id = dispatcher.submit(Question("q"))
    with pytest.raises(JobFailed, match="ValueError"):
        dispatcher.wait(trace_id, 20)
    assert dispatcher.status(trace_id) == ("failed", "ValueError: the backend said no")


def test_closing_leaves_queued_jobs_in_the_stream_for_another_replica(make: Make) -> None:
    release = threading.Event()
    leaving = make(blocked_responder(release), workers=1)
    first = leaving.submit(Question("q1"))
    queued = leaving.submit(Question("q2"))
    closer = threading.Thread(target=leaving.close, args=(20.0,))
    closer.start()
    release.set()  # the running job finishes within the drain
    closer.join(30)
    assert leaving.status(first)[0] == "done"
    assert leaving.status(queued)[0] == "queued"
    successor = make(workers=1)
    trace = successor.wait(queued, 20)
    assert trace is not None and trace.complete


def test_an_alert_renotified_to_another_replica_starts_no_second_run(redis_url: str) -> None:
    from bot.http.jobstream import RedisAlertDedupe

    one = RedisAlertDedupe(redis.Redis.from_url(redis_url), 3_600)
    other = RedisAlertDedupe(redis.Redis.from_url(redis_url), 3_600)
    assert one.first_time("group-1")
    assert not other.first_time("group-1")
    other.forget("group-1")  # the run could not start: a later notification may try again
    assert one.first_time("group-1")


def test_the_waiting_depth_is_shared_by_every_replica(make: Make) -> None:
    submitter = make(workers=0)
    for n in range(3):
        submitter.submit(Question(f"q{n}"))
    assert make(workers=0).waiting_or_nan() == 3 == submitter.waiting_or_nan()
