"""The small pool that posts each queued diagnosis' marks: 👀, the status and, when it waits, the "queued" notice.

No lane waits on Slack's latency for them. A diagnosis starts once its marks are posted (its worker takes the
job's future here), and its "queued" notice becomes its progress message: a durable job's notice is kept with the
job (`set_notice`), for whichever replica runs it.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from slack_sdk import WebClient

from bot.slack.delivery.budget import CallBudget
from bot.slack.delivery.marks import acknowledge
from bot.slack.delivery.notices import queued_text
from bot.slack.jobs.state import Job

log = logging.getLogger(__name__)

REMEMBERED = 2_000  # futures of durable jobs another replica ran are forgotten past this

SetNotice = Callable[[str, str], None]  # job id, the notice's ts


class MarkPool:
    """`workers` threads posting marks, and each job's future for its notice's ts (by job id)."""

    def __init__(
        self, client: WebClient, workers: int, budget: CallBudget, status_text: str, set_notice: SetNotice
    ) -> None:
        self._client, self._budget, self._status_text, self._set_notice = client, budget, status_text, set_notice
        self._pool = ThreadPoolExecutor(max(workers, 1), thread_name_prefix="opsbot-marks")
        self._lock = threading.Lock()
        self._posted: OrderedDict[str, Future[str]] = OrderedDict()

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
