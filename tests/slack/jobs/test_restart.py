"""A stopping runner answers its running job and tells every queued one "restarting: re-run?"."""

from __future__ import annotations

import threading

from bot.durable.runner import RESTARTING_TEXT
from bot.engine.types import Question
from bot.slack.jobs.state import Job
from tests.fakes.slack import FakeSlackAPI, ScriptedResponder
from tests.slack.conftest import SurfaceFactory, wait_until


def test_stop_answers_the_running_job_and_tells_queued_ones_to_rerun(
    make_surface: SurfaceFactory, fake_slack: FakeSlackAPI
) -> None:
    gate = threading.Event()
    responder = ScriptedResponder(gate=gate, steps=1)
    surface = make_surface(responder, workers=1, use_streaming=False)
    for n in range(3):
        ts = f"1700000000.00000{n}"
        surface.runner.submit(Job(Question(f"why is order slow? {n}", thread_ts=ts, source="slack"), "C1", ts, ts))
    wait_until(lambda: surface.runner.active == 1, what="one job to run")
    stopper = threading.Thread(target=surface.runner.stop, kwargs={"timeout_s": 20})
    stopper.start()
    gate.set()
    stopper.join(30)
    notices = [c for c in fake_slack.calls_to("chat.postMessage") if c.get("text") == f"♻️ {RESTARTING_TEXT}"]
    assert sorted(c["thread_ts"] for c in notices) == ["1700000000.000001", "1700000000.000002"]
    assert len(surface.persisted) == 1 and surface.persisted[0].answer.startswith("Root cause")
    traffic_lights = [c for c in fake_slack.calls_to("reactions.add") if c.get("name") == "vertical_traffic_light"]
    assert len(traffic_lights) == 2
