"""The one job runner, with a recording delivery: in this process, and on a real redis-server as two replicas."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace

import pytest
import redis

from bot.durable.attempt import Attempt, step_to_record
from bot.durable.group import ConsumerGroup
from bot.durable.runner import RESTARTING_TEXT, JobRunner, RunnerOptions, interrupted_text
from bot.engine.context import step_to_line
from bot.engine.types import Question, Step, StopReason, Totals, Trace
from tests import toolresults
from tests.slack.conftest import wait_until
from tests.toolresults import series


def a_step(index: int, action: str = "query_metrics", elapsed_ms: int = 10) -> Step:
    return Step(index, "look", action, {"service": "order"}, f"finding {index}\nmore", "ok", elapsed_ms, 100, 10)


class RecordingDelivery:
    """Runs a job by keeping `steps` steps, then waiting for `gate` (when given); records every call."""

    def __init__(self, steps: int = 1, gate: threading.Event | None = None) -> None:
        self.steps, self.gate = steps, gate
        self.runs: list[Attempt] = []
        self.said: list[tuple[str, Attempt, str]] = []
        self.started = threading.Semaphore(0)

    def run(self, attempt: Attempt) -> None:
        self.runs.append(attempt)
        show = attempt.observer(None)
        for n in range(1, self.steps + 1):
            show(a_step(n))
        self.started.release()
        if self.gate is not None:
            assert self.gate.wait(30)

    def interrupted(self, attempt: Attempt, text: str) -> None:
        self.said.append(("interrupted", attempt, text))

    def restarting(self, attempt: Attempt, text: str) -> None:
        self.said.append(("restarting", attempt, text))


@pytest.fixture
def runners(redis_url: str) -> Iterator[list[JobRunner]]:
    made: list[JobRunner] = []
    yield made
    for runner in made:
        runner.close(1.0)


def test_in_memory_a_job_gets_its_place_in_line_and_a_full_queue_refuses() -> None:
    runner = JobRunner(RunnerOptions(workers=0, queue_size=2))
    places = [runner.put("api", {"n": n}) for n in range(2)]
    assert [p[1] for p in places if p] == [1, 2] and runner.waiting() == 2
    assert runner.put("api", {}, job_id="x") is None and runner.status("x") == ("unknown", "")
    assert all(runner.status(p[0]) == ("queued", "") for p in places if p)


def test_in_memory_a_stop_answers_what_waits_restarting_and_what_still_runs_interrupted_with_its_steps() -> None:
    gate = threading.Event()
    delivery = RecordingDelivery(steps=2, gate=gate)
    runner = JobRunner(RunnerOptions(workers=1, queue_size=4))
    runner.start({"api": delivery})
    running = runner.put("api", {"q": "first"})
    waiting = runner.put("api", {"q": "second"})
    assert running is not None and waiting is not None
    assert delivery.started.acquire(timeout=10)
    runner.close(0.2)
    said = {attempt.payload["q"]: (kind, text, attempt.earlier_steps) for kind, attempt, text in delivery.said}
    assert said["second"] == ("restarting", RESTARTING_TEXT, ())
    kind, text, steps = said["first"]
    assert (kind, text) == ("interrupted", interrupted_text(1)) and [s.index for s in steps] == [1, 2]
    assert not delivery.runs[0].current()  # the run going on on borrowed time may write nothing more
    gate.set()
    wait_until(lambda: runner.active == 0, what="the abandoned run to end")
    assert runner.status(running[0])[0] == runner.status(waiting[0])[0] == "interrupted"  # its late end changes nothing


def test_an_attempt_goes_on_from_the_steps_found_before() -> None:
    earlier = (a_step(1, "query_logs", 40), a_step(2, "query_deploy_records", 2))
    attempt = Attempt("j", "api", {}, 2, earlier)
    seen: list[Step] = []
    attempt.observer(seen.append)(a_step(1))
    assert [s.index for s in seen] == [3]  # numbered after the earlier ones
    asked = attempt.question(Question("why?", history=("Q: before",)))
    assert asked.history[0] == "Q: before" and "query_logs ok: finding 1" in asked.history[1]
    own = Trace(
        "t",
        "why?",
        "native",
        (a_step(1), a_step(2, "finish")),
        "pool",
        True,
        StopReason.FINISH,
        Totals(2, 200, 20, 30, 1),
    )
    trace = attempt.continued(own)
    assert [(s.index, s.action) for s in trace.steps] == [
        (1, "query_logs"),
        (2, "query_deploy_records"),
        (3, "query_metrics"),
        (4, "finish"),
    ]
    assert trace.totals == Totals(4, 400, 40, 72, 3, 0, 0)
    assert trace.notes == ("taken over: attempt 2 went on from the 2 steps found before",)


def test_a_taken_over_attempt_tells_the_model_each_earlier_finding_as_the_engine_words_it_old_steps() -> None:
    metric = toolresults.step(1, "query_metrics", series(), service="order", range="6h")
    runner = JobRunner(RunnerOptions(workers=1, step_line=step_to_line))
    delivery = RecordingDelivery()
    runner.start({"api": delivery})
    try:
        assert runner.put("api", {}) is not None and delivery.started.acquire(timeout=10)
    finally:
        runner.close(1.0)
    taken_over = replace(delivery.runs[0], number=2, earlier_steps=(metric,))  # the options' wording travels along
    [told] = taken_over.question(Question("why?")).history
    assert "#1 query_metrics(service=order, range=6h) -> ok: change: 15:05 212 ms -> 1,180 ms (x5.6)" in told
    [plain] = replace(taken_over, step_line=None).question(Question("why?")).history
    assert "query_metrics ok: p99_latency of order" in plain  # without it: the result's first line only


def test_on_redis_a_job_past_its_attempts_is_finished_as_interrupted_with_every_step_kept(
    redis_url: str, runners: list[JobRunner]
) -> None:
    client = redis.Redis.from_url(redis_url)
    options = RunnerOptions(workers=1, lease_s=0.3, max_attempts=2)
    put = JobRunner(options, client).put("api", {"q": "why?"}, "j1")
    assert put == ("j1", 1)
    assert ConsumerGroup(client, "opsbot:jobs", claim_idle_s=0.3).next_message("deadhost-1-jobs-0", block_ms=10)
    client.hset("opsbot:job:j1", mapping={"attempts": 2, "status": "running"})
    client.rpush("opsbot:job:j1:steps", step_to_record(a_step(1), 1), step_to_record(a_step(2), 2))
    delivery = RecordingDelivery()
    survivor = JobRunner(options, client)
    runners.append(survivor)
    survivor.start({"api": delivery})
    wait_until(lambda: survivor.status("j1")[0] == "interrupted", timeout_s=20, what="the job settled")
    [(kind, attempt, text)] = delivery.said
    assert (kind, text, attempt.number) == ("interrupted", interrupted_text(2), 3)
    assert [s.index for s in attempt.earlier_steps] == [1, 2] and delivery.runs == []


def test_on_redis_a_paused_attempt_taken_over_records_nothing_late(redis_url: str, runners: list[JobRunner]) -> None:
    gate = threading.Event()
    client = redis.Redis.from_url(redis_url)
    options = RunnerOptions(workers=1, lease_s=0.5)
    paused, other = RecordingDelivery(gate=gate), RecordingDelivery()
    one = JobRunner(options, client)
    runners.append(one)
    one.start({"api": paused})
    put = one.put("api", {"q": "why?"})
    assert put is not None and paused.started.acquire(timeout=10)
    job_id = put[0]
    client.hincrby(f"opsbot:job:{job_id}", "attempts", 1)  # as if another replica had claimed it meanwhile
    client.hset(f"opsbot:job:{job_id}", "status", "interrupted")
    assert not paused.runs[0].current()
    gate.set()
    wait_until(lambda: client.xlen("opsbot:jobs") == 0, what="the paused attempt to end")
    assert one.status(job_id)[0] == "interrupted"  # its own late "done" was not recorded
    ConsumerGroup(client, "opsbot:jobs", claim_idle_s=0.5).add({"job_id": job_id})  # delivered again
    two = JobRunner(options, client)
    runners.append(two)
    two.start({"api": other})
    wait_until(lambda: client.xlen("opsbot:jobs") == 0, what="the repeat delivery to be read and acked")
    assert other.runs == []  # a settled job is never run again


def test_a_hold_is_shared_by_every_replica_and_released(redis_url: str) -> None:
    one, other = (JobRunner(RunnerOptions(), redis.Redis.from_url(redis_url)) for _ in range(2))
    assert one.hold("C1|1.0|why?") and not other.hold("C1|1.0|why?")
    one.release("C1|1.0|why?")
    assert other.hold("C1|1.0|why?")
