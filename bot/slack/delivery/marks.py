"""The marks a job leaves on its Slack thread besides the answer: reactions, the assistant status, short notices.

A job is acknowledged with 👀 and a status the moment it is taken, and concluded with 💡 (a likely cause), ✅ (a
confirmed or looked-up answer) or ⚠️ (partial, or not delivered); a job that will not run is withdrawn to 🚦.
All of it is cosmetic: a failed call (already_reacted, a missing scope) is logged and never stops the run, and a
call the shared CallBudget has no room for is skipped.

A queued diagnosis' marks (👀, the status and, when it waits, the "queued" notice) are posted on a small pool of
their own (`MarkPool`), so no lane waits on Slack's latency for them. A diagnosis starts once its marks are posted
(its worker takes the job's future there), and its "queued" notice becomes its progress message: a durable job's
notice is kept with the job (`set_notice`), for whichever replica runs it.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from slack_sdk import WebClient

from bot.engine.types import Trace
from bot.slack.delivery.answer import is_guess
from bot.slack.delivery.budget import CallBudget
from bot.slack.delivery.notices import queued_text
from bot.slack.jobs.state import Job

log = logging.getLogger(__name__)

REMEMBERED = 2_000  # futures of durable jobs another replica ran are forgotten past this

SetNotice = Callable[[str, str], None]  # job id, the notice's ts


def acknowledge(client: WebClient, job: Job, status_text: str, budget: CallBudget | None = None) -> None:
    """Show at once that the job was taken: 👀 on the asking message and the status in its thread."""
    if job.react_ts:
        call_quietly(client, "reactions_add", budget, channel=job.channel, timestamp=job.react_ts, name="eyes")
    call_quietly(
        client,
        "assistant_threads_setStatus",
        budget,
        channel_id=job.channel,
        thread_ts=job.thread_ts,
        status=status_text,
    )


def withdraw(client: WebClient, job: Job, budget: CallBudget | None = None) -> None:
    """Undo the acknowledgement of a job that will not run: no status, and 🚦 instead of 👀."""
    call_quietly(
        client, "assistant_threads_setStatus", budget, channel_id=job.channel, thread_ts=job.thread_ts, status=""
    )
    if job.react_ts:
        call_quietly(client, "reactions_remove", budget, channel=job.channel, timestamp=job.react_ts, name="eyes")
        call_quietly(
            client, "reactions_add", budget, channel=job.channel, timestamp=job.react_ts, name="vertical_traffic_light"
        )


def conclude(client: WebClient, job: Job, trace: Trace, delivered: bool, budget: CallBudget | None = None) -> None:
    """Mark a finished job: 💡 for a likely cause, ✅ for a confirmed or looked-up answer, ⚠️ when partial or
    undelivered."""
    # Posting clears the status; clear it explicitly too, so an error path never leaves "Diagnosing…".
    call_quietly(
        client, "assistant_threads_setStatus", budget, channel_id=job.channel, thread_ts=job.thread_ts, status=""
    )
    if job.react_ts:
        emoji = "warning" if not (trace.complete and delivered) else "bulb" if is_guess(trace) else "white_check_mark"
        call_quietly(client, "reactions_add", budget, channel=job.channel, timestamp=job.react_ts, name=emoji)


def say(client: WebClient, job: Job, text: str) -> None:
    """A short notice in the job's thread (queued, busy, already working on it)."""
    call_quietly(client, "chat_postMessage", channel=job.channel, thread_ts=job.thread_ts, text=text)


def call_quietly(client: WebClient, method: str, budget: CallBudget | None = None, **kwargs: object) -> None:
    """Call a Web API method whose failure must not stop the run; the failure is logged. With `budget`, the call
    is skipped when the method's budget is spent (e.g. after a 429)."""
    if budget is not None and not budget.try_take(method.replace("_", ".")):
        log.info("slack %s skipped: over its budget", method)
        return
    try:
        getattr(client, method)(**kwargs)
    except Exception as exc:
        log.info("slack %s failed channel=%s: %s", method, kwargs.get("channel") or kwargs.get("channel_id"), exc)


class MarkPool:
    """`workers` threads posting marks, and each job's future for its notice's ts (by job id)."""

    def __init__(
        self, client: WebClient, workers: int, budget: CallBudget, status_text: str, set_notice: SetNotice
    ) -> None:
        self._client, self._budget, self._status_text, self._set_notice = client, budget, status_text, set_notice
        self._pool = ThreadPoolExecutor(max(workers, 1), thread_name_prefix="opsbot-marks")
        # Re-entrant: the runner holds it across its put and `post`, so a worker's `take` waits for the future
        # of a job it took from the queue before `post` registered it (else its status clear could land first).
        self._lock = threading.RLock()
        self._posted: OrderedDict[str, Future[str]] = OrderedDict()

    def queueing(self) -> threading.RLock:
        """Held while a job is put in the queue and its marks posted: a worker's `take` waits until both are done."""
        return self._lock

    def post(self, job: Job, place: int, job_id: str, workers: int) -> None:
        """Post the marks of a job queued at `place` (0: it starts at once) among `workers` diagnosis workers."""
        future = self._pool.submit(self._mark, job, place, job_id, workers)
        with self._lock:
            self._posted[job_id] = future
            while len(self._posted) > REMEMBERED:
                self._posted.popitem(last=False)

    def take(self, job_id: str) -> Future[str] | None:
        """The job's future for its notice's ts, when this replica queued it."""
        with self._lock:
            return self._posted.pop(job_id, None)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _mark(self, job: Job, place: int, job_id: str, workers: int) -> str:
        acknowledge(self._client, job, self._status_text, self._budget)
        if not place or not self._budget.try_take("chat.postMessage", job.channel):
            return ""  # a burst in one channel: the notice is skipped, never the job
        try:
            response = self._client.chat_postMessage(
                channel=job.channel, thread_ts=job.thread_ts, text=queued_text(place - 1, workers)
            )
            ts = str(response.get("ts") or "")
            self._set_notice(job_id, ts)
            return ts
        except Exception as exc:
            log.info("posting the queued notice failed channel=%s: %s", job.channel, exc)
            return ""
