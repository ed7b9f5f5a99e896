"""One process without Redis: a Slack diagnosis' steps in the trace store as they complete, and a stop that leaves a
run unfinished. Real SQLite store, FakeSlackAPI. With Redis the steps live there instead: tests/slack/jobs/
test_slack_stream.py and, with real processes, test_slack_replicas.py.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.durable.runner import RunnerOptions, interrupted_text
from bot.engine.types import StopReason
from bot.http.dispatch import api_dispatcher
from bot.slack.delivery.progress import ProgressOptions
from bot.slack.intake.listeners import build_web_client
from bot.slack.jobs.backlog import Lanes, SlackState
from bot.slack.jobs.runner import Runner
from bot.slack.jobs.state import MemoryDedupe
from bot.slack.jobs.steplog import StepLog
from bot.store.base import is_partial
from bot.store.sqlite import SqliteTraceStore
from tests.fakes.slack import BOT_TOKEN, FakeSlackAPI, ScriptedResponder
from tests.slack.conftest import wait_until
from tests.slack.jobs.test_slack_stream import a_job


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteTraceStore]:
    kept = SqliteTraceStore(tmp_path / "traces.db")
    yield kept
    kept.close()


def _runner(fake_slack: FakeSlackAPI, store: SqliteTraceStore, responder: ScriptedResponder) -> Runner:
    runner = Runner(
        build_web_client(BOT_TOKEN, fake_slack.base_url),
        responder,
        persist=store.save,
        state=SlackState(MemoryDedupe(60), steps=StepLog(store)),
        lanes=Lanes(workers=1, queue_size=4),
        progress=ProgressOptions(append_interval_s=0.0),
    )
    runner.start()
    return runner


def test_a_slack_diagnosis_stores_each_step_as_it_completes_then_its_final_trace_under_one_id(
    fake_slack: FakeSlackAPI, store: SqliteTraceStore
) -> None:
    gate = threading.Event()
    runner = _runner(fake_slack, store, ScriptedResponder(steps=3, gate=gate, gate_after_steps=2))
    api = api_dispatcher(ScriptedResponder(), store, RunnerOptions(workers=1), also_running=runner.runs)
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


def test_a_run_still_going_when_the_process_stops_is_told_interrupted_with_its_steps_and_says_no_more(
    fake_slack: FakeSlackAPI, store: SqliteTraceStore
) -> None:
    gate = threading.Event()
    runner = _runner(fake_slack, store, ScriptedResponder(steps=2, gate=gate, gate_after_steps=1))
    runner.submit(a_job())
    wait_until(lambda: [len(t.steps) for t in store.list()] == [1], what="one step stored mid-run")
    runner.stop(timeout_s=0.3)  # no Redis, no other replica: this process has to give the last word
    [said] = [c for c in fake_slack.calls_to("chat.postMessage") if "interrupted" in str(c.get("text"))]
    assert (
        said["text"].startswith("⚠️ " + interrupted_text(1))
        and "`query_metrics` ok: order p99 latency 212 ms → 1,180 ms (x5.6) at 15:05" in said["text"]
    )
    [kept] = store.list()
    assert not is_partial(kept) and kept.stop_reason == StopReason.INTERRUPTED and len(kept.steps) == 1
    posts_before = len(fake_slack.calls)
    gate.set()  # the run goes on on borrowed time: it is no longer the job's attempt, so nothing is posted
    wait_until(lambda: runner.active == 0, what="the abandoned run to end")
    later = [c.method for c in fake_slack.calls[posts_before:]]
    assert not [m for m in later if m in ("chat.stopStream", "chat.update", "chat.postMessage")]
    assert store.get(kept.trace_id) == kept  # and it did not overwrite the interrupted trace
    assert "interrupted" in json.dumps(kept.notes)
