"""ThreadProgress on a fake clock: edits are throttled, the status is refreshed on long runs, stream falls back."""

from __future__ import annotations

import json

from bot.engine.types import Question, Step, StopReason, Totals, Trace
from bot.slack.delivery.progress import ProgressOptions, ThreadProgress
from bot.slack.intake.listeners import build_web_client
from bot.slack.jobs.state import Job
from tests.fakes.clock import FakeClock
from tests.fakes.slack import BOT_TOKEN, FakeSlackAPI, stream_text

JOB = Job(Question("why is order slow?"), "C1", "1.0", "1.0", "U1", "T1")


def step(index: int) -> Step:
    return Step(
        index=index,
        thought="t",
        action="query_metrics",
        args={"service": "order"},
        observation="change: 15:05 212 ms -> 1,180 ms",
        status="ok",
    )


def trace() -> Trace:
    return Trace(
        trace_id="t1",
        question="why is order slow?",
        protocol="native",
        steps=(step(1),),
        answer="pool size",
        complete=True,
        stop_reason=StopReason.FINISH,
        totals=Totals(steps=1),
    )


def test_progress_edits_one_message_at_most_every_3_s(fake_slack: FakeSlackAPI) -> None:
    clock = FakeClock(now=0.0)
    progress = ThreadProgress(
        build_web_client(BOT_TOKEN, fake_slack.base_url),
        JOB,
        ProgressOptions(use_streaming=False, update_interval_s=3.0),
        clock=clock,
    )
    for index, at in enumerate((0.0, 1.0, 2.0, 3.5, 4.0, 7.0), start=1):
        clock.now = at
        progress.on_step(step(index))
    assert len(fake_slack.calls_to("chat.postMessage")) == 1  # t=0
    assert len(fake_slack.calls_to("chat.update")) == 2  # t=3.5 and t=7
    assert progress.finish(trace())
    final = fake_slack.calls_to("chat.update")[-1]
    assert (
        "pool size" in json.dumps(final["blocks"])
        and final["ts"] == fake_slack.responses_to("chat.postMessage")[0]["ts"]
    )


def test_status_is_refreshed_during_long_runs(fake_slack: FakeSlackAPI) -> None:
    clock = FakeClock(now=0.0)
    progress = ThreadProgress(build_web_client(BOT_TOKEN, fake_slack.base_url), JOB, clock=clock)
    progress.set_status()
    for index, at in enumerate((10.0, 60.0, 95.0, 120.0), start=1):
        clock.now = at
        progress.on_step(step(index))
    statuses = fake_slack.calls_to("assistant.threads.setStatus")
    assert [s["status"] for s in statuses] == ["Diagnosing…", "Diagnosing…"]  # t=0 and t=95


def test_stream_that_never_starts_falls_back_to_a_threaded_message(fake_slack: FakeSlackAPI) -> None:
    fake_slack.fail("chat.startStream", error="agent_feature_disabled", times=10)
    progress = ThreadProgress(build_web_client(BOT_TOKEN, fake_slack.base_url), JOB, clock=FakeClock(now=0.0))
    progress.on_step(step(1))
    assert progress.finish(trace())
    assert progress.stream_failures == 1
    posts = fake_slack.calls_to("chat.postMessage")
    assert posts[0]["thread_ts"] == "1.0"
    assert "pool size" in json.dumps(fake_slack.calls_to("chat.update")[-1]["blocks"])


def test_stop_stream_failure_still_delivers(fake_slack: FakeSlackAPI) -> None:
    fake_slack.fail("chat.stopStream", error="message_not_in_streaming_state")
    progress = ThreadProgress(build_web_client(BOT_TOKEN, fake_slack.base_url), JOB, clock=FakeClock(now=0.0))
    progress.on_step(step(1))
    assert progress.finish(trace())
    [start] = fake_slack.responses_to("chat.startStream")
    [update] = fake_slack.calls_to("chat.update")
    assert update["ts"] == start["ts"] and "pool size" in json.dumps(update["blocks"])


def test_a_run_handed_elsewhere_closes_its_stream_with_a_line_saying_so(fake_slack: FakeSlackAPI) -> None:
    progress = ThreadProgress(
        build_web_client(BOT_TOKEN, fake_slack.base_url), JOB, ProgressOptions(append_interval_s=0.0)
    )
    progress.on_step(step(1))
    assert len(fake_slack.calls_to("chat.startStream")) == 1
    progress.close("_The quick lookup could not answer this; the full diagnosis runs next._")
    [stop] = fake_slack.calls_to("chat.stopStream")
    assert stream_text(stop).startswith("_The quick lookup could not answer") and "blocks" not in stop


def test_nothing_shown_means_nothing_to_close(fake_slack: FakeSlackAPI) -> None:
    progress = ThreadProgress(build_web_client(BOT_TOKEN, fake_slack.base_url), JOB)
    progress.close("_handed over_")
    assert fake_slack.calls == []
