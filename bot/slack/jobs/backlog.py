"""Where accepted Slack diagnoses wait and who runs them: this process (the default) or a Redis stream.

`Backlog` is the seam; `MemoryBacklog` is the zero-config one: a bounded WorkQueue and `workers` threads of
this process, one run per (thread, question) guarded here, and on SIGTERM the queued jobs are told
"restarting: re-run?". `SlackJobStream` (bot/slack/jobs/slackstream.py) is the one every replica shares.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from slack_sdk import WebClient

from bot.durable.capacity import Workers
from bot.slack.jobs.restart import answer_queued_restarting
from bot.slack.jobs.slackstream import Delivery, SlackJobStream
from bot.slack.jobs.state import (
    Dedupe,
    Job,
    MemoryDedupe,
    MemoryThreadMemory,
    MemoryWorkQueue,
    ThreadMemory,
    WorkQueue,
)
from bot.slack.jobs.steplog import StepLog

log = logging.getLogger(__name__)

RunDelivery = Callable[[Delivery], None]


@dataclass(frozen=True)
class Submission:
    """What became of one accepted question (`position`: its place when it had to wait)."""

    outcome: Literal["started", "queued", "answered", "asked", "duplicate", "refused", "rejected"]
    position: int = 0


@dataclass(frozen=True)
class Lanes:
    """How many threads each pool has, and when the intent gate counts as unsure (built once by wiring)."""

    workers: int = 4  # diagnoses
    quick_workers: int = 8  # triage, help, chit-chat, quick lookups
    marks_workers: int = 16  # 👀, status, "queued" notices
    ask_below_confidence: float = 0.6


@dataclass(frozen=True)
class SlackState:
    """What the Slack surface keeps across jobs, built once by wiring: in this process by default; with Redis,
    dedupe and thread memory are shared by every replica and diagnoses wait in the shared stream (`durable`).
    With `steps`, a diagnosis' steps are stored as they complete."""

    dedupe: Dedupe = field(default_factory=MemoryDedupe)
    memory: ThreadMemory = field(default_factory=MemoryThreadMemory)
    queue: WorkQueue = field(default_factory=lambda: MemoryWorkQueue(32))  # the in-process queue (no `durable`)
    durable: SlackJobStream | None = None
    steps: StepLog | None = None


class Backlog(Protocol):
    @property
    def active(self) -> int:
        """Diagnoses running now in this process."""
        ...

    def waiting(self) -> int:
        """Diagnoses not started yet (-1 when that cannot be known now)."""
        ...

    def capacity(self) -> Workers:
        """The workers that take these jobs (on a stream: every replica's) and how many are free now."""
        ...

    def put(self, job: Job) -> tuple[str, int] | None:
        """Queue a job: its id and 1-based place among the waiting, or None when full."""
        ...

    def set_notice(self, job_id: str, ts: str) -> None:
        """The job's "queued" notice, for whichever worker runs it."""
        ...

    def claim_inflight(self, key: str) -> bool:
        """False when a run of this (thread, question) is already queued or running."""
        ...

    def release_inflight(self, key: str) -> None: ...

    def start(self, run: RunDelivery) -> None: ...

    def close(self, drain_s: float) -> list[str]:
        """Take no more; running jobs get drain_s; what waits is handed over or answered. Returns the ids of
        jobs still running at the deadline."""
        ...


def inflight_key(job: Job) -> str:
    """One run per (thread, question): an impatient repeat or a double-clicked Re-run is not a new run."""
    return "|".join((job.channel, job.thread_ts, " ".join(job.question.text.lower().split())))


class MemoryBacklog:
    """The WorkQueue and the diagnosis workers of this process."""

    def __init__(self, client: WebClient, queue: WorkQueue, workers: int) -> None:
        self._client, self._queue, self._workers = client, queue, max(workers, 1)
        self._lock = threading.Lock()
        self._active = 0
        self._inflight: set[str] = set()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    @property
    def active(self) -> int:
        return self._active

    def waiting(self) -> int:
        return self._queue.depth()

    def capacity(self) -> Workers:
        return Workers(self._workers, max(self._workers - self._active, 0))

    def put(self, job: Job) -> tuple[str, int] | None:
        position = self._queue.put(job)
        return None if position is None else (inflight_key(job), position)

    def set_notice(self, job_id: str, ts: str) -> None:
        """Nothing to keep: the worker gets the notice from the runner's own future."""

    def claim_inflight(self, key: str) -> bool:
        with self._lock:
            if key in self._inflight:
                return False
            self._inflight.add(key)
            return True

    def release_inflight(self, key: str) -> None:
        with self._lock:
            self._inflight.discard(key)

    def start(self, run: RunDelivery) -> None:
        if self._threads:
            return
        self._stop.clear()
        for n in range(self._workers):
            thread = threading.Thread(target=self._work, args=(run,), name=f"opsbot-worker-{n}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def close(self, drain_s: float) -> list[str]:
        self._stop.set()
        deadline = time.monotonic() + drain_s
        for thread in self._threads:
            thread.join(max(deadline - time.monotonic(), 0.0))
        self._threads = []
        answer_queued_restarting(self._client, self._queue)
        if self._active:
            log.warning("stopping with %d diagnoses still running past the deadline", self._active)
        return [f"{self._active} running"] if self._active else []

    def _work(self, run: RunDelivery) -> None:
        while not self._stop.is_set():
            job = self._queue.get(timeout_s=0.2)
            if job is None:
                continue
            with self._lock:
                self._active += 1
            try:
                run(Delivery(inflight_key(job), job, attempt=1, notice_ts="", progress_ts=""))
            except Exception:
                log.exception("worker failed channel=%s thread=%s", job.channel, job.thread_ts)
            finally:
                with self._lock:
                    self._active -= 1
