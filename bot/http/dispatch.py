"""The API's and webhook's own worker pool: run a diagnosis, store its trace, then hand it on.

The HTTP thread only enqueues (or, in sync mode, waits a bounded time for) a job, never runs one. An
accepted job is in the store at once (a partial trace that gains each step as it completes), so a crash
keeps what was done and `GET /api/traces/<id>` can tell "interrupted" from "unknown id". The trace is stored
before anything is posted, so it survives a Slack outage. The pool is bounded: when the queue is full the
caller gets QueueFull (HTTP 503), not an ever-growing backlog during an alert storm.

Two implementations of the `Dispatch` seam: `Dispatcher` below (one process, threads we own) and
`StreamDispatcher` in bot/http/jobstream.py (a Redis stream shared by every replica).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import replace
from typing import Literal, Protocol

from bot.engine.types import Question, Responder, StopReason, Trace, new_trace_id, trace_from_answer
from bot.store.base import TraceStore, partial_with_step, step_keeper, store_quietly

log = logging.getLogger(__name__)

AfterRun = Callable[[Trace], None]
JobStatus = Literal["queued", "running", "done", "failed", "interrupted", "unknown"]
MAX_REMEMBERED = 500
RESTARTING_ANSWER = "opsbot was restarting and did not get to this question. Re-run? Ask again to start it anew."
INTERRUPTED_ANSWER = (
    "opsbot was interrupted (a replica stopped) before finishing this diagnosis. Re-run? Ask again to start it "
    "anew; the steps it had taken are kept in this trace."
)


class QueueFull(Exception):
    """Every worker is busy and the queue is at its limit (or the process is shutting down)."""


class JobFailed(Exception):
    """The diagnosis raised; the message says what (the trace id is the caller's)."""


class Dispatch(Protocol):
    def submit(self, question: Question, then: AfterRun | None = None) -> str:
        """Accept one diagnosis and return its trace id. `then` runs with the stored trace (a durable
        dispatcher records only that a delivery is wanted and delivers from whichever replica finishes)."""
        ...

    def wait(self, trace_id: str, timeout_s: float) -> Trace | None:
        """The finished trace, or None after timeout_s; JobFailed when the run raised."""
        ...

    def status(self, trace_id: str) -> tuple[JobStatus, str]:
        """Where a job is that the store does not hold finished, and the error text when it failed."""
        ...

    def close(self, drain_s: float) -> None:
        """Take no new work; give running jobs up to drain_s; hand queued ones back or answer them."""
        ...


class Execution:
    """What running one job means on any dispatcher: stub, steps appended, final trace stored, delivered."""

    def __init__(self, responder: Responder, store: TraceStore) -> None:
        self._responder = responder
        self._store = store

    def accept(self, trace_id: str, question: Question) -> None:
        # a fresh stub: a re-run after a crash starts over rather than append to the dead run's steps
        store_quietly(
            "record accepted job", lambda: self._store.save(partial_with_step(None, trace_id, question.text, None))
        )

    def run(self, trace_id: str, question: Question) -> Trace:
        trace = replace(self._responder(question, step_keeper(self._store, trace_id, question.text)), trace_id=trace_id)
        store_quietly("store trace", lambda: self._store.save(trace))
        return trace

    def stored(self, trace_id: str) -> Trace | None:
        return self._store.get(trace_id)

    def unrun(self, trace_id: str, question: Question, answer: str) -> Trace:
        """Finish a job without (re-)running it: the steps kept so far plus `answer` ("re-run?")."""
        kept = self._store.get(trace_id)
        if kept is not None and not question.text:
            question = replace(question, text=kept.question)
        unrun = trace_from_answer(
            question, answer, complete=False, stop_reason=StopReason.INTERRUPTED, notes=("interrupted",)
        )
        trace = replace(unrun, trace_id=trace_id, steps=kept.steps if kept is not None else ())
        store_quietly("store trace", lambda: self._store.save(trace))
        return trace

    @staticmethod
    def deliver(then: AfterRun, trace: Trace) -> None:
        try:
            then(trace)
        except Exception:  # e.g. Slack is down; the trace is already in the store
            log.exception("could not deliver trace %s (it is stored)", trace.trace_id)


class Dispatcher:
    """Runs diagnoses on `workers` threads of its own with at most `queue_size` waiting; ids are assigned up front."""

    def __init__(
        self,
        responder: Responder,
        store: TraceStore,
        *,
        workers: int = 2,
        queue_size: int = 16,
        on_queue_depth: Callable[[int], None] | None = None,
        also_running: Callable[[str], bool] | None = None,
    ) -> None:
        self._execution = Execution(responder, store)
        self._also_running = also_running or (lambda trace_id: False)  # e.g. this process's Slack runs
        self._queue_size = queue_size
        self._queue: queue.Queue[tuple[str, Question, AfterRun | None]] = queue.Queue()
        self._lock = threading.Lock()
        self._jobs: dict[str, JobStatus] = {}
        self._futures: OrderedDict[str, Future[Trace]] = OrderedDict()
        self._failures: OrderedDict[str, str] = OrderedDict()
        self._on_queue_depth = on_queue_depth or (lambda depth: None)
        self._closing = threading.Event()
        self._threads = [
            threading.Thread(target=self._work, name=f"diagnose-{n}", daemon=True) for n in range(max(workers, 1))
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, question: Question, then: AfterRun | None = None) -> str:
        if self._closing.is_set():
            raise QueueFull("opsbot is restarting; try again in a minute")
        trace_id = new_trace_id()
        with self._lock:
            waiting = sum(1 for s in self._jobs.values() if s == "queued")
            if waiting >= self._queue_size:
                raise QueueFull(f"{len(self._jobs)} diagnoses in progress; try again in a minute")
            self._jobs[trace_id] = "queued"
            self._futures[trace_id] = Future()
            while len(self._futures) > MAX_REMEMBERED:
                self._futures.popitem(last=False)
            self._report_depth()
        self._execution.accept(trace_id, question)
        self._queue.put((trace_id, question, then))
        return trace_id

    def wait(self, trace_id: str, timeout_s: float) -> Trace | None:
        future = self._futures.get(trace_id)
        if future is None:
            return None
        try:
            return future.result(timeout=timeout_s)
        except FutureTimeout:
            return None
        except Exception as exc:
            raise JobFailed(f"{type(exc).__name__}: {exc}") from exc

    def status(self, trace_id: str) -> tuple[JobStatus, str]:
        with self._lock:
            if trace_id in self._failures:
                return "failed", self._failures[trace_id]
            status = self._jobs.get(trace_id)
        if status is None:
            status = "running" if self._also_running(trace_id) else "unknown"
        return status, ""

    def close(self, drain_s: float) -> None:
        """Stop taking work; queued jobs are answered "restarting: re-run?"; running ones get drain_s."""
        self._closing.set()
        deadline = time.monotonic() + drain_s
        for thread in self._threads:
            thread.join(max(deadline - time.monotonic(), 0.0))
        with self._lock:
            left = [tid for tid, status in self._jobs.items() if status == "running"]
        for trace_id in left:  # past the deadline: the process exits with them; answer rather than drop
            log.warning("diagnosis %s still running at shutdown; answered as interrupted", trace_id)
            self._finish_unrun(trace_id, INTERRUPTED_ANSWER)

    def shutdown(self, wait: bool = True) -> None:
        """Close with a short drain (tests); kept for callers of the executor-based pool."""
        self.close(30.0 if wait else 0.0)

    def _work(self) -> None:
        while True:
            try:
                trace_id, question, then = self._queue.get(timeout=0.1)
            except queue.Empty:
                if self._closing.is_set():
                    return
                continue
            if self._closing.is_set():
                trace = self._execution.unrun(trace_id, question, RESTARTING_ANSWER)
                self._finish(trace_id, trace, then)
                continue
            self._run(trace_id, question, then)

    def _run(self, trace_id: str, question: Question, then: AfterRun | None) -> None:
        self._set(trace_id, "running")
        try:
            trace = self._execution.run(trace_id, question)
        except Exception as exc:  # the one place a job's unexpected failure is caught for the API surface
            log.exception("diagnosis %s failed", trace_id)
            with self._lock:
                self._failures[trace_id] = f"{type(exc).__name__}: {exc}"
                while len(self._failures) > MAX_REMEMBERED:
                    self._failures.popitem(last=False)
            self._settle(trace_id, None, exc)
            return
        self._finish(trace_id, trace, then)

    def _finish_unrun(self, trace_id: str, answer: str) -> None:
        future = self._futures.get(trace_id)
        if future is not None and not future.done():
            self._settle(trace_id, self._execution.unrun(trace_id, Question(""), answer), None)

    def _finish(self, trace_id: str, trace: Trace, then: AfterRun | None) -> None:
        self._settle(trace_id, trace, None)
        if then is not None:
            self._execution.deliver(then, trace)

    def _settle(self, trace_id: str, trace: Trace | None, exc: BaseException | None) -> None:
        self._set(trace_id, None)
        future = self._futures.get(trace_id)
        if future is None or future.done():
            return
        if exc is not None:
            future.set_exception(exc)
        elif trace is not None:
            future.set_result(trace)

    def _set(self, trace_id: str, status: JobStatus | None) -> None:
        with self._lock:
            if status is None:
                self._jobs.pop(trace_id, None)
            else:
                self._jobs[trace_id] = status
            self._report_depth()

    def _report_depth(self) -> None:
        self._on_queue_depth(sum(1 for s in self._jobs.values() if s == "queued"))
