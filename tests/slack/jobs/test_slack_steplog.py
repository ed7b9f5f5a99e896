"""A Slack diagnosis' steps in the trace store as they complete, and what a takeover makes of a dead attempt's.

Real SQLite store, real redis-server for the durable cases, FakeSlackAPI; two Runners are two replicas. The
same with two real `opsbot serve` processes and kill -9: tests/slack/jobs/test_slack_replicas.py.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from bot.engine.types import Step, StopReason
from bot.http.dispatch import Dispatcher
from bot.slack.delivery.progress import ProgressOptions
from bot.slack.intake.listeners import build_web_client
from bot.slack.jobs.backlog import Lanes, SlackState
from bot.slack.jobs.handover import INTERRUPTED_TEXT
from bot.slack.jobs.runner import Runner
from bot.slack.jobs.state import MemoryDedupe, MemoryWorkQueue
from bot.slack.jobs.steplog import StepLog
from bot.store.base import is_partial
from bot.store.sqlite import SqliteTraceStore
from tests.fakes.slack import BOT_TOKEN, FakeSlackAPI, ScriptedResponder
from tests.slack.conftest import wait_until
from tests.slack.jobs.test_slack_stream import MakeRunner, _dead_replica_took, a_job, make_runner  # noqa: F401

EARLIER = "e" * 32  # the dead attempt's trace id


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteTraceStore]:
    kept = SqliteTraceStore(tmp_path / "traces.db")
    yield kept
    kept.close()


def _dead_attempt(redis_url: str, store: SqliteTraceStore, *, attempts: int, steps: int) -> None:
    """A replica took a_job(), stored `steps` steps of its run under EARLIER, and died."""
    job_id = _dead_replica_took(redis_url, a_job(), attempts=attempts)
    client = redis.Redis.from_url(redis_url)
    client.hset(f"opsbot:slack-job:{job_id}", "trace_id", EARLIER)
    client.hset(f"opsbot:job:{EARLIER}", "status", "running")
    store.append_step(EARLIER, a_job().question.text, None)
    for n in range(1, steps + 1):
        store.append_step(
            EARLIER,
            a_job().question.text,
            Step(n, f"look {n}", "search_logs" if n == 2 else "query_metrics", {}, f"finding {n}\nmore", "ok"),
        )


def test_a_slack_diagnosis_stores_each_step_as_it_completes_then_its_final_trace_under_one_id(
    fake_slack: FakeSlackAPI, store: SqliteTraceStore
) -> None:
    gate = threading.Event()
    runner = Runner(
        build_web_client(BOT_TOKEN, fake_slack.base_url),
        ScriptedResponder(steps=3, gate=gate, gate_after_steps=2),
        persist=store.save,
        state=SlackState(MemoryDedupe(60), queue=MemoryWorkQueue(4), steps=StepLog(store)),
        lanes=Lanes(workers=1),
        progress=ProgressOptions(append_interval_s=0.0),
    )
    runner.start()
    api = Dispatcher(ScriptedResponder(), store, workers=1, also_running=runner.runs)
    try:
        runner.submit(a_job())
        wait_until(lambda: [len(t.steps) for t in store.list()] == [2], what="two steps stored mid-run")
        [partial] = store.list()
        assert is_partial(partial) and partial.answer == "" and partial.question == a_job().question.text
        # the API of this process says "running" for it, not "interrupted" (in memory, no Redis to ask)
        assert api.status(partial.trace_id) == ("running", "") and api.status("f" * 32) == ("unknown", "")
        gate.set()
        wait_until(lambda: not is_partial(store.list()[0]), what="the final trace to replace the partial one")
        [final] = store.list()
        assert final.trace_id == partial.trace_id and len(final.steps) == 3
        assert final.stop_reason == StopReason.FINISH
        wait_until(lambda: not runner.runs(final.trace_id), what="the run to be over")
    finally:
        gate.set()
        runner.stop(timeout_s=1)
        api.close(0)


def test_a_takeover_closes_the_dead_attempts_trace_as_interrupted_and_says_what_it_had_found(
    make_runner: MakeRunner,  # noqa: F811
    fake_slack: FakeSlackAPI,
    redis_url: str,
    store: SqliteTraceStore,
) -> None:
    _dead_attempt(redis_url, store, attempts=1, steps=3)
    make_runner(ScriptedResponder(), store=store)
    wait_until(
        lambda: len(store.list()) == 2 and not any(is_partial(t) for t in store.list()),
        timeout_s=30,
        what="the dead attempt closed and the re-run stored",
    )
    [takeover] = [c for c in fake_slack.calls_to("chat.postMessage") if "re-running it here" in str(c["text"])]
    text = str(takeover["text"])
    assert "Attempt 1 got through 3 steps before its replica stopped" in text
    assert "`query_metrics` ok: finding 1" in text and "`search_logs` ok: finding 2" in text
    assert f"opsbot traces show {EARLIER}" in text
    earlier = store.get(EARLIER)
    assert earlier is not None and not is_partial(earlier) and len(earlier.steps) == 3
    assert earlier.stop_reason == StopReason.INTERRUPTED and "interrupted" in earlier.answer
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    assert client.hget(f"opsbot:job:{EARLIER}", "status") == "interrupted"
    [rerun] = [t for t in store.list() if t.trace_id != EARLIER]
    assert rerun.stop_reason == StopReason.FINISH and len(rerun.steps) == 2
    wait_until(lambda: client.hget(f"opsbot:job:{rerun.trace_id}", "status") == "done", what="the re-run done")


def test_past_max_attempts_the_last_word_in_the_thread_says_what_the_dead_attempt_had_found(
    make_runner: MakeRunner,  # noqa: F811
    fake_slack: FakeSlackAPI,
    redis_url: str,
    store: SqliteTraceStore,
) -> None:
    _dead_attempt(redis_url, store, attempts=2, steps=1)
    responder = ScriptedResponder()
    make_runner(responder, store=store)
    [said] = fake_slack.wait_for("chat.postMessage", timeout_s=30)
    assert str(said["text"]).startswith(INTERRUPTED_TEXT.format(attempts=2))
    assert "Attempt 2 got through 1 step before its replica stopped: `query_metrics` ok: finding 1" in said["text"]
    earlier = store.get(EARLIER)
    assert earlier is not None and not is_partial(earlier) and earlier.stop_reason == StopReason.INTERRUPTED
    assert responder.questions == []
