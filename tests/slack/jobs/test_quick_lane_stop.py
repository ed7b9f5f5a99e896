"""On stop, acked mentions the quick lane could not get to within half the drain are answered in their threads."""

from __future__ import annotations

import threading

from bot.durable.runner import RESTARTING_TEXT
from bot.engine.types import Intent, Question
from bot.slack.jobs.backlog import Lanes
from bot.slack.jobs.state import Job
from tests.fakes.slack import FakeSlackAPI, ScriptedResponder
from tests.slack.conftest import SurfaceFactory, wait_until


def _job(n: int) -> Job:
    ts = f"1700000000.00010{n}"
    return Job(
        Question(f"why is order slow since 15:0{n}?", user="U1", channel="C1", thread_ts=ts, source="slack"),
        "C1",
        ts,
        react_ts=ts,
        user="U1",
    )


def test_acked_mentions_left_on_the_quick_lane_at_stop_are_told_restarting_and_never_queued_after(
    make_surface: SurfaceFactory, fake_slack: FakeSlackAPI
) -> None:
    release, triaged = threading.Event(), []

    def stuck_gate(text: str) -> Intent:  # the intent gate hangs (a slow model): the quick lane cannot finish
        release.wait(30)
        triaged.append(text)
        return Intent("diagnose", 1.0, "rules", "a diagnosis")

    responder = ScriptedResponder()
    surface = make_surface(responder, classify=stuck_gate, lanes=Lanes(workers=1, quick_workers=2))
    runner, outcomes = surface.runner, surface.submissions
    for n in range(4):  # two are being triaged, two wait in the lane's queue
        runner.accept(_job(n), keys=(f"EvStop{n}",))
    runner.accept(_job(3), keys=("EvStop3",))  # Slack's retry of the last: its thread is told once, not twice
    runner.stop(timeout_s=0.4)
    told = [c["thread_ts"] for c in fake_slack.calls_to("chat.postMessage") if RESTARTING_TEXT in str(c["text"])]
    assert sorted(told) == [_job(n).thread_ts for n in range(4)]
    release.set()  # the two stuck in the gate go on now, and must not queue a run the thread was told is off
    wait_until(lambda: len(outcomes) == 2, what="the two triaged submissions")
    assert [o.outcome for o in outcomes] == ["rejected", "rejected"] and len(triaged) == 2
    posts = [str(c["text"]) for c in fake_slack.calls_to("chat.postMessage")]
    assert len(posts) == 4 and not any("busy" in p for p in posts)
    assert responder.questions == []
