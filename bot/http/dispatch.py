"""The API's and webhook's own worker pool: run a diagnosis, store its trace, then hand it on.

The HTTP thread only enqueues (or, in sync mode, waits for) a job, never runs one. The trace is stored
before anything is posted, so it survives a Slack outage. The pool is bounded: when the queue is full
the caller gets QueueFull (HTTP 503), not an ever-growing backlog during an alert storm.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import Literal

from bot.engine.types import Question, Responder, Trace, new_trace_id
from bot.store.base import TraceStore

log = logging.getLogger(__name__)

AfterRun = Callable[[Trace], None]
JobStatus = Literal["queued", "running", "failed", "unknown"]
MAX_REMEMBERED_FAILURES = 200


class QueueFull(Exception):
    """Every worker is busy and the queue is at its limit."""


class Dispatcher:
    """Runs diagnoses on `workers` threads with at most `queue_size` waiting; ids are assigned up front."""

    def __init__(
        self,
        responder: Responder,
        store: TraceStore,
        *,
        workers: int = 2,
        queue_size: int = 16,
        on_queue_depth: Callable[[int], None] | None = None,
    ) -> None:
        self._responder = responder
        self._store = store
        self._queue_size = queue_size
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="diagnose")
        self._lock = threading.Lock()
        self._jobs: dict[str, JobStatus] = {}
        self._failures: OrderedDict[str, str] = OrderedDict()
        self._on_queue_depth = on_queue_depth or (lambda depth: None)

    def submit(self, question: Question, then: AfterRun | None = None) -> tuple[str, Future[Trace]]:
        """Queue one diagnosis; returns its trace id and a future of the stored trace."""
        trace_id = new_trace_id()
        with self._lock:
            waiting = sum(1 for s in self._jobs.values() if s == "queued")
            if waiting >= self._queue_size:
                raise QueueFull(f"{len(self._jobs)} diagnoses in progress; try again in a minute")
            self._jobs[trace_id] = "queued"
            self._report_depth()
        return trace_id, self._pool.submit(self._run, trace_id, question, then)

    def status(self, trace_id: str) -> tuple[JobStatus, str]:
        """Where a job is that the store does not hold yet, and the error text when it failed."""
        with self._lock:
            if trace_id in self._failures:
                return "failed", self._failures[trace_id]
            return self._jobs.get(trace_id, "unknown"), ""

    def _run(self, trace_id: str, question: Question, then: AfterRun | None) -> Trace:
        self._set(trace_id, "running")
        try:
            trace = replace(self._responder(question, None), trace_id=trace_id)
            self._save(trace)
        except Exception as exc:  # the one place a job's unexpected failure is caught for the API surface
            log.exception("diagnosis %s failed", trace_id)
            with self._lock:
                self._failures[trace_id] = f"{type(exc).__name__}: {exc}"
                while len(self._failures) > MAX_REMEMBERED_FAILURES:
                    self._failures.popitem(last=False)
            raise
        finally:
            self._set(trace_id, None)
        if then is not None:
            self._hand_on(then, trace)
        return trace

    def _save(self, trace: Trace) -> None:
        try:
            self._store.save(trace)
        except Exception:  # a broken store must not cost the user the answer: still post it
            log.exception("could not store trace %s", trace.trace_id)

    def _hand_on(self, then: AfterRun, trace: Trace) -> None:
        try:
            then(trace)
        except Exception:  # e.g. Slack is down; the trace is already in the store
            log.exception("could not deliver trace %s (it is stored)", trace.trace_id)

    def _set(self, trace_id: str, status: JobStatus | None) -> None:
        with self._lock:
            if status is None:
                self._jobs.pop(trace_id, None)
            else:
                self._jobs[trace_id] = status
            self._report_depth()

    def _report_depth(self) -> None:
        self._on_queue_depth(sum(1 for s in self._jobs.values() if s == "queued"))

    def shutdown(self, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=not wait)
