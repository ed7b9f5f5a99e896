"""The API's and webhook's diagnoses on the job runner (bot/durable/runner.py): accept, run, store, hand on.

The HTTP thread only queues a job (or, in sync mode, waits a bounded time for it), never runs one. The trace is
stored before anything is posted, so it survives a Slack outage. The queue is bounded: when it is full the caller
gets QueueFull (HTTP 503), not an ever-growing backlog during an alert storm.

Where the steps of a running job live depends on the runner. With one process (no Redis), the trace store holds an
accepted job at once (a partial trace that gains each step), so after a crash `GET /api/traces/<id>` can tell
"interrupted" from "unknown id". With replicas, the job and its steps live in Redis, where every replica reads them
and a takeover goes on from them; the store (Elasticsearch for a fleet) gets the finished trace.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import asdict, replace
from typing import Any, Literal, Protocol, cast

from bot.durable.attempt import Attempt
from bot.durable.runner import JobRunner, RunnerOptions
from bot.engine.types import (
    Question,
    Responder,
    Step,
    StepObserver,
    StopReason,
    Trace,
    new_trace_id,
    trace_from_answer,
)
from bot.store.base import TraceStore, partial_with_step, step_keeper, store_quietly

log = logging.getLogger(__name__)

AfterRun = Callable[[Trace], None]
Deliver = Callable[[Question, Trace], None]  # e.g. post an alert's diagnosis to its Slack channel
JobStatus = Literal["queued", "running", "done", "failed", "interrupted", "unknown"]
API, ALERT = "api", "alertmanager"  # the job kinds
MAX_LOCAL = 500


class QueueFull(Exception):
    """Every worker is busy and the queue is at its limit (or the process is shutting down)."""


class JobFailed(Exception):
    """The diagnosis raised; the message says what (the trace id is the caller's)."""


class Dispatch(Protocol):
    def submit(self, question: Question, then: AfterRun | None = None) -> str:
        """Accept one diagnosis and return its trace id. `then` runs with the stored trace (on another replica,
        that replica's own delivery for alerts runs instead)."""
        ...

    def wait(self, trace_id: str, timeout_s: float) -> Trace | None:
        """The finished trace, or None after timeout_s; JobFailed when the run raised."""
        ...

    def status(self, trace_id: str) -> tuple[JobStatus, str]:
        """Where a job is that the store does not hold finished, and the error text when it failed."""
        ...

    def running(self, trace_id: str) -> Trace | None:
        """A queued or running job's steps so far, as a partial trace (None when the runner keeps none)."""
        ...

    def close(self, drain_s: float) -> None:
        """Take no new work; give running jobs up to drain_s; what is left is handed over or answered."""
        ...


class ApiDelivery:
    """What an API or Alertmanager job does on whichever replica runs it (the runner's Delivery for both kinds)."""

    def __init__(
        self, responder: Responder, store: TraceStore, *, deliver: Deliver | None = None, partials: bool = True
    ) -> None:
        """`deliver` posts an alert's diagnosis; `partials`: keep each step in the store as it completes (one
        process: the store is the only record a crash leaves)."""
        self._responder, self._store, self._deliver, self.partials = responder, store, deliver, partials
        # in-process deliveries, by trace id, for jobs queued here (forgotten past MAX_LOCAL: another replica ran them)
        self._then: OrderedDict[str, AfterRun] = OrderedDict()

    def accept(self, trace_id: str, question: Question, then: AfterRun | None) -> None:
        if then is not None:
            self._then[trace_id] = then
            while len(self._then) > MAX_LOCAL:
                self._then.popitem(last=False)
        if self.partials:
            store_quietly("record accepted job", lambda: self._store.save(_stub(trace_id, question.text)))

    def forget(self, trace_id: str) -> None:
        self._then.pop(trace_id, None)

    def run(self, attempt: Attempt) -> None:
        trace_id, question = attempt.job_id, question_from_payload(attempt.payload)
        if self.partials:  # a re-run starts from what is kept, never from a dead run's stale stub
            store_quietly("record the run", lambda: self._store.save(_stub(trace_id, question.text, attempt)))
        keep: StepObserver | None = step_keeper(self._store, trace_id, question.text) if self.partials else None
        trace = self._responder(attempt.question(question), attempt.observer(keep))
        trace = attempt.continued(replace(trace, trace_id=trace_id))
        if not attempt.current():  # another replica took this job over while this one was away
            log.warning("not storing trace %s: another replica took the job over", trace_id)
            return
        self._finish(attempt, question, trace)

    def interrupted(self, attempt: Attempt, text: str) -> None:
        self._unrun(attempt, text)

    def restarting(self, attempt: Attempt, text: str) -> None:
        self._unrun(attempt, text)

    def _unrun(self, attempt: Attempt, text: str) -> None:
        """Finish a job without (re-)running it: the steps kept so far and `text` ("re-run?")."""
        question = question_from_payload(attempt.payload)
        unrun = trace_from_answer(
            question, text, complete=False, stop_reason=StopReason.INTERRUPTED, notes=("interrupted",)
        )
        trace = replace(unrun, trace_id=attempt.job_id, steps=attempt.earlier_steps)
        self._finish(attempt, question, trace)

    def _finish(self, attempt: Attempt, question: Question, trace: Trace) -> None:
        store_quietly("store trace", lambda: self._store.save(trace))
        then = self._then.pop(attempt.job_id, None)
        if then is None and attempt.kind == ALERT and self._deliver is not None:
            deliver = self._deliver
            then = lambda t: deliver(question, t)  # noqa: E731 -- queued on another replica: this one's own poster
        if then is not None:
            try:
                then(trace)
            except Exception:  # e.g. Slack is down; the trace is already in the store
                log.exception("could not deliver trace %s (it is stored)", trace.trace_id)


class Dispatcher:
    """The Dispatch seam over a JobRunner (in this process, or the Redis stream every replica shares)."""

    def __init__(
        self,
        runner: JobRunner,
        delivery: ApiDelivery,
        store: TraceStore,
        *,
        also_running: Callable[[str], bool] | None = None,
    ) -> None:
        """`also_running` tells which traces this process runs elsewhere (Slack's, without Redis; with Redis their
        status is in the same place as the API's)."""
        self._runner, self._delivery, self._store = runner, delivery, store
        self._also_running = also_running or (lambda trace_id: False)
        runner.start({API: delivery, ALERT: delivery})

    def submit(self, question: Question, then: AfterRun | None = None) -> str:
        if self._runner.waiting() >= self._runner.options.queue_size:
            raise QueueFull(f"{self._runner.waiting()} diagnoses waiting; try again in a minute")
        trace_id = new_trace_id()
        self._delivery.accept(trace_id, question, then)
        if self._runner.put(ALERT if then is not None else API, payload_from_question(question), trace_id) is None:
            self._delivery.forget(trace_id)
            raise QueueFull("opsbot is restarting or its queue is full; try again in a minute")
        return trace_id

    def wait(self, trace_id: str, timeout_s: float) -> Trace | None:
        status = self._runner.wait(trace_id, timeout_s)
        if status == "failed":
            raise JobFailed(self._runner.status(trace_id)[1])
        return self._store.get(trace_id) if status in ("done", "interrupted") else None

    def status(self, trace_id: str) -> tuple[JobStatus, str]:
        status, error = self._runner.status(trace_id)
        if status == "unknown" and self._also_running(trace_id):
            status = "running"
        return cast(JobStatus, status), error

    def running(self, trace_id: str) -> Trace | None:
        steps = self._runner.steps(trace_id)
        return _partial(trace_id, "", steps) if steps else None

    def waiting_or_nan(self) -> float:
        return self._runner.waiting_or_nan()

    def close(self, drain_s: float) -> None:
        self._runner.close(drain_s)

    def shutdown(self, wait: bool = True) -> None:
        """Close with a short drain (tests)."""
        self.close(30.0 if wait else 0.0)


def payload_from_question(question: Question) -> dict[str, Any]:
    return {k: v for k, v in asdict(question).items() if k != "intent"}


def question_from_payload(data: Any) -> Question:
    return Question(
        text=str(data.get("text", "")),
        user=str(data.get("user", "")),
        channel=str(data.get("channel", "")),
        thread_ts=str(data.get("thread_ts", "")),
        source=str(data.get("source", "api")),
        history=tuple(str(h) for h in data.get("history", ())),
    )


def api_dispatcher(
    responder: Responder,
    store: TraceStore,
    options: RunnerOptions,
    *,
    client: Any | None = None,
    deliver: Deliver | None = None,
    also_running: Callable[[str], bool] | None = None,
) -> Dispatcher:
    """The API's dispatcher: its jobs in this process, or on the Redis stream every replica reads (`client`)."""
    delivery = ApiDelivery(responder, store, deliver=deliver, partials=client is None)
    return Dispatcher(JobRunner(options, client), delivery, store, also_running=also_running)


def _stub(trace_id: str, question: str, attempt: Attempt | None = None) -> Trace:
    """The partial trace of an accepted run: no step yet, or the steps an earlier attempt found."""
    return _partial(trace_id, question, attempt.earlier_steps if attempt is not None else ())


def _partial(trace_id: str, question: str, steps: tuple[Step, ...]) -> Trace:
    partial = partial_with_step(None, trace_id, question, None)
    for step in steps:
        partial = partial_with_step(partial, trace_id, question, step)
    return partial
