"""A worker that takes a job before the runner has registered its marks still waits for them: the runner holds the
pool's queueing lock across its put and `post`, and `take` waits on that lock. Real threads, the Slack stand-in."""

from __future__ import annotations

import threading
from concurrent.futures import Future

from bot.engine.types import Question
from bot.slack.delivery.budget import CallBudget
from bot.slack.delivery.marks import MarkPool
from bot.slack.delivery.notices import queued_text
from bot.slack.intake.listeners import build_web_client
from bot.slack.jobs.state import Job
from tests.fakes.slack import BOT_TOKEN, FakeSlackAPI

JOB = Job(Question("why is order slow?"), "C1", "1.0", "1.0", "U1", "T1")


def test_a_take_while_the_job_is_being_queued_waits_for_its_marks(fake_slack: FakeSlackAPI) -> None:
    notices: dict[str, str] = {}
    client = build_web_client(BOT_TOKEN, fake_slack.base_url)
    pool = MarkPool(client, 1, CallBudget({}), "Diagnosing…", notices.__setitem__)
    taken: list[Future[str] | None] = []
    queued = threading.Event()
    try:
        with pool.queueing():  # the runner's put: the job is in the queue, its marks not yet registered
            worker = threading.Thread(target=lambda: taken.append(pool.take("job-1")))
            worker.start()
            queued.wait(0.2)  # the worker reaches `take` while the put is still under way
            assert taken == []  # it waits rather than running without its notice
            pool.post(JOB, 1, "job-1", 1)
        worker.join(10)
        [future] = taken
        assert future is not None
        ts = future.result(10)
        assert ts and notices == {"job-1": ts}  # the queued notice was posted and recorded before the job runs
        [notice] = fake_slack.calls_to("chat.postMessage")
        assert notice["text"] == queued_text(0, 1) and notice["thread_ts"] == JOB.thread_ts
    finally:
        pool.shutdown()


def test_a_job_this_replica_did_not_queue_has_no_marks_to_wait_for(fake_slack: FakeSlackAPI) -> None:
    client = build_web_client(BOT_TOKEN, fake_slack.base_url)
    pool = MarkPool(client, 1, CallBudget({}), "Diagnosing…", lambda job_id, ts: None)
    try:
        assert pool.take("queued-elsewhere") is None
    finally:
        pool.shutdown()
