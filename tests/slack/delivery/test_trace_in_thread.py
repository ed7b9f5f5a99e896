"""The trace is in the thread on every path: a stream's task cards, or the step list of an answer sent as one message
(streaming off, a stream that failed, no budget to open one). FakeSlackAPI, ThreadProgress on a fake clock."""

from __future__ import annotations

import json

from bot.engine.types import Intent, Question, Step, StopReason, Totals, Trace
from bot.slack.delivery.budget import CallBudget
from bot.slack.delivery.progress import ProgressOptions, ThreadProgress
from bot.slack.delivery.render import limit_violations
from bot.slack.delivery.steplist import steps_block
from bot.slack.intake.listeners import build_web_client
from bot.slack.jobs.state import Job
from tests.fakes.clock import FakeClock
from tests.fakes.slack import BOT_TOKEN, FakeSlackAPI

JOB = Job(Question("why is order slow?"), "C1", "1.0", "1.0", "U1", "T1")


def step(index: int) -> Step:
    return Step(index, "t", "query_metrics", {"service": "order", "metric": "p99_latency"}, f"p99 #{index}", "ok")


def trace(steps: int = 3, intent: Intent | None = None) -> Trace:
    return Trace(
        trace_id="t1",
        question="why is order slow?",
        protocol="native",
        steps=tuple(step(n) for n in range(1, steps + 1)),
        answer="order v2.8.1 exhausted the connection pool.",
        complete=True,
        stop_reason=StopReason.FINISH,
        totals=Totals(steps=steps),
        intent=intent,
    )


def progress(fake: FakeSlackAPI, **options: object) -> ThreadProgress:
    client = build_web_client(BOT_TOKEN, fake.base_url)
    return ThreadProgress(client, JOB, ProgressOptions(**options), clock=FakeClock(now=0.0))  # type: ignore[arg-type]


def listed(blocks: object) -> str:
    return json.dumps(blocks, ensure_ascii=False)


def test_with_no_budget_to_open_a_stream_the_plain_answer_lists_every_step(fake_slack: FakeSlackAPI) -> None:
    budget = CallBudget({"chat.startStream": 6})  # one call of burst...
    assert budget.try_take("chat.startStream")  # ...spent by other runs
    shown = progress(fake_slack, budget=budget)
    done = trace()
    for s in done.steps:
        shown.on_step(s)
    assert shown.finish(done)
    assert fake_slack.calls_to("chat.startStream") == []
    [post] = fake_slack.calls_to("chat.postMessage")
    text = listed(post["blocks"])
    assert "connection pool" in text and "*Steps* (3)" in text
    assert all(f"`{n}` Metrics: order p99 latency" in text for n in (1, 2, 3))  # what each looked at and found
    assert text.index("*Steps*") < text.index("opsbot traces show t1")  # before the footer and the buttons


def test_the_edited_progress_message_keeps_the_steps_in_its_final_answer(fake_slack: FakeSlackAPI) -> None:
    shown = progress(fake_slack, use_streaming=False, update_interval_s=0.0)
    done = trace()
    for s in done.steps:
        shown.on_step(s)
    assert shown.finish(done)
    final = fake_slack.calls_to("chat.update")[-1]
    assert final["ts"] == fake_slack.responses_to("chat.postMessage")[0]["ts"]
    assert "*Steps* (3)" in listed(final["blocks"]) and "connection pool" in listed(final["blocks"])


def test_a_stream_that_failed_mid_run_ends_in_an_answer_with_its_steps(fake_slack: FakeSlackAPI) -> None:
    fake_slack.fail("chat.appendStream", error="message_not_in_streaming_state", times=10)
    shown = progress(fake_slack, append_interval_s=0.0)
    done = trace()
    for s in done.steps:
        shown.on_step(s)
    assert shown.finish(done)
    [start] = fake_slack.responses_to("chat.startStream")
    final = fake_slack.calls_to("chat.update")[-1]
    assert final["ts"] == start["ts"] and "*Steps* (3)" in listed(final["blocks"])


def test_a_streamed_answer_keeps_its_task_cards_and_adds_no_list(fake_slack: FakeSlackAPI) -> None:
    shown = progress(fake_slack, append_interval_s=0.0)
    done = trace()
    for s in done.steps:
        shown.on_step(s)
    assert shown.finish(done)
    streamed = listed(fake_slack.calls_to("chat.startStream") + fake_slack.calls_to("chat.appendStream"))
    assert streamed.count('"task_update"') == 3
    assert "*Steps*" not in listed(fake_slack.calls_to("chat.stopStream"))


def test_a_plain_reply_gets_no_step_list(fake_slack: FakeSlackAPI) -> None:
    shown = progress(fake_slack, use_streaming=False)
    assert shown.finish(trace(steps=0, intent=Intent("help", 1.0, "rules", "help")))
    [post] = fake_slack.calls_to("chat.postMessage")
    assert "*Steps*" not in listed(post["blocks"])


def test_a_long_run_lists_its_first_steps_and_says_how_many_more_within_slacks_limits() -> None:
    block = steps_block(trace(steps=40))
    assert block is not None and limit_violations([block]) == []
    text = block["text"]["text"]
    assert "*Steps* (40)" in text and "`12`" in text and "`13`" not in text and "… and 28 more" in text
