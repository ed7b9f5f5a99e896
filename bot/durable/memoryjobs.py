"""The job runner's backend for one process (no Redis): a bounded FIFO, `workers` threads, the ledger in memory.

Nothing outlives the process, so there is no takeover: on close, what waits and what still runs at the deadline
go back to the runner, which answers them (bot/durable/runner.py). A job abandoned that way is no longer current,
so its worker, still running on borrowed time, writes nothing more.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from bot.durable.capacity import Workers
from bot.durable.runner import SETTLED, JobRecord, Leftovers, RunnerOptions

log = logging.getLogger(__name__)

REMEMBERED = 500  # settled jobs whose status is still answered (GET /api/traces/<id> right after the run)


@dataclass
class _Job:
    kind: str
    payload: str
    status: str = "queued"
    error: str = ""
    attempts: int = 0
    marks: dict[str, str] = field(default_factory=dict)
    records: list[str] = field(default_factory=list)


class MemoryJobs:
    """The runner's Backend in this process (see the module docstring)."""

    def __init__(self, options: RunnerOptions) -> None:
        self._options = options
        self._workers = max(options.workers, 0)
        self._changed = threading.Condition()
        self._queue: deque[str] = deque()
        self._jobs: OrderedDict[str, _Job] = OrderedDict()
        self._running: set[str] = set()
        self._holds: set[str] = set()
        self._closing = threading.Event()
        self._threads: list[threading.Thread] = []

    @property
    def active(self) -> int:
        with self._changed:
            return len(self._running)

    def add(self, job_id: str, kind: str, payload: str) -> int | None:
        with self._changed:  # the position must be this add's, not a concurrent one's
            if self._closing.is_set() or len(self._queue) >= self._options.queue_size:
                return None
            self._jobs[job_id] = _Job(kind, payload)
            self._forget_settled()
            self._queue.append(job_id)
            self._changed.notify_all()
            return len(self._queue)

    def begin(self, job_id: str) -> JobRecord | None:
        with self._changed:
            job = self._jobs.get(job_id)
            if job is None:
                return None
            job.attempts += 1
            job.status = "running"
            self._running.add(job_id)
            return JobRecord(job_id, job.kind, job.payload, job.attempts, dict(job.marks), tuple(job.records))

    def abandon(self, job_id: str) -> JobRecord | None:
        with self._changed:
            job = self._jobs.get(job_id)
            if job is None:
                return None
            job.attempts += 1  # whoever still runs the old attempt is no longer current
            return JobRecord(job_id, job.kind, job.payload, job.attempts - 1, dict(job.marks), tuple(job.records))

    def settle(self, job_id: str, attempt: int, status: str, error: str = "") -> None:
        with self._changed:
            job = self._jobs.get(job_id)
            if attempt == self._current_attempt(job_id) or status == "interrupted":
                self._running.discard(job_id)
            if job is not None and (attempt == job.attempts or status == "interrupted"):
                job.status, job.error = status, error
                job.records.clear()  # settled: its trace is in the store, its steps are not needed here
            self._changed.notify_all()

    def keep_step(self, job_id: str, attempt: int, record: str) -> None:
        with self._changed:
            if (job := self._jobs.get(job_id)) is not None:
                job.records.append(record)

    def mark(self, job_id: str, name: str, value: str) -> None:
        with self._changed:
            if (job := self._jobs.get(job_id)) is not None:
                if value:
                    job.marks[name] = value
                else:
                    job.marks.pop(name, None)

    def current(self, job_id: str, attempt: int) -> bool:
        with self._changed:
            return self._current_attempt(job_id) == attempt

    def status(self, job_id: str) -> tuple[str, str]:
        with self._changed:
            job = self._jobs.get(job_id)
            return (job.status, job.error) if job is not None else ("unknown", "")

    def wait(self, job_id: str, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                job = self._jobs.get(job_id)
                if job is None or job.status in SETTLED or time.monotonic() >= deadline:
                    return job.status if job is not None else "unknown"
                self._changed.wait(max(deadline - time.monotonic(), 0.0))

    def steps(self, job_id: str) -> list[str]:
        with self._changed:
            job = self._jobs.get(job_id)
            return list(job.records) if job is not None and job.status not in SETTLED else []

    def hold(self, key: str) -> bool:
        with self._changed:
            if key in self._holds:
                return False
            self._holds.add(key)
            return True

    def release(self, key: str) -> None:
        with self._changed:
            self._holds.discard(key)

    def waiting(self) -> int:
        with self._changed:
            return len(self._queue)

    def capacity(self) -> Workers:
        return Workers(self._workers, max(self._workers - self.active, 0))

    def start(self, handle: Callable[[str], None]) -> None:
        if self._threads:
            return
        for n in range(self._workers):
            thread = threading.Thread(target=self._work, args=(handle,), name=f"{self._options.name}-{n}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def close(self, drain_s: float) -> Leftovers:
        """Take no more; running jobs get drain_s; what waits and what still runs go back to the runner."""
        self._closing.set()
        with self._changed:
            self._changed.notify_all()
        deadline = time.monotonic() + drain_s
        for thread in self._threads:
            thread.join(max(deadline - time.monotonic(), 0.0))
        with self._changed:
            queued, self._queue = tuple(self._queue), deque()
            running = tuple(self._running)
        if running:
            log.warning("stopping with %d %s jobs still running past the deadline", len(running), self._options.name)
        return Leftovers(queued, running)

    def _work(self, handle: Callable[[str], None]) -> None:
        while not self._closing.is_set():
            job_id = self._next()
            if job_id is None:
                continue
            try:
                handle(job_id)
            except Exception:  # the runner settles every job it handled; this is a bug, not a job's failure
                log.exception("a %s worker failed on job %s", self._options.name, job_id)
            finally:
                with self._changed:
                    self._running.discard(job_id)

    def _next(self) -> str | None:
        with self._changed:
            if not self._queue:
                self._changed.wait(0.2)
            if self._closing.is_set() or not self._queue:
                return None
            return self._queue.popleft()

    def _current_attempt(self, job_id: str) -> int:
        job = self._jobs.get(job_id)
        return job.attempts if job is not None else -1

    def _forget_settled(self) -> None:
        settled = [job_id for job_id, job in self._jobs.items() if job.status in SETTLED]
        for job_id in settled[: max(len(settled) - REMEMBERED, 0)]:
            del self._jobs[job_id]
