"""Durable API and webhook work on a Redis stream with a consumer group, shared by every replica.

Why a bare stream rather than a queue library (RQ, Celery, Dramatiq): the stream's consumer group already
gives what we need (at-most-one running owner per job, a pending list that outlives a crashed worker, and
XAUTOCLAIM to take over after an idle time) without a second worker process model, pickled jobs or a broker
abstraction. A job is only its trace id; the question lives in a hash next to its status. The group's mechanics
(claim, heartbeat, ack, removing dead consumers) are shared with Slack's stream: bot/durable/group.py.

A worker reads one job only when it is free, so a replica never hoards queued work: what it has not started
stays in the stream for the others. While a job runs, a heartbeat re-claims it (XCLAIM JUSTID resets its idle
time); when the replica dies the heartbeat stops, and after `claim_idle_s` another replica claims it and
re-runs it, or, past `max_attempts` deliveries, finishes it as "interrupted: re-run?". Never silently dropped.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from bot.durable.group import ConsumerGroup, Message, replica_id, text_from_redis
from bot.durable.pool import StreamWorkers
from bot.engine.types import Question, Responder, Trace, new_trace_id
from bot.http.dispatch import INTERRUPTED_ANSWER, AfterRun, Execution, JobFailed, JobStatus, QueueFull
from bot.store.base import TraceStore

log = logging.getLogger(__name__)

Deliver = Callable[[Question, Trace], None]  # e.g. post an alert's diagnosis to its Slack channel
STATUS_TTL_S = 86_400
POLL_S = 0.2


class StreamDispatcher:
    """The Dispatch seam over Redis (see the module docstring). `client` is a ready `redis.Redis`."""

    def __init__(
        self,
        client: Any,
        responder: Responder,
        store: TraceStore,
        *,
        prefix: str = "opsbot",
        workers: int = 2,
        queue_size: int = 16,
        claim_idle_s: float = 30.0,
        max_attempts: int = 2,
        deliver: Deliver | None = None,
    ) -> None:
        self._redis = client
        self._execution = Execution(responder, store)
        self._prefix, self._queue_size, self._max_attempts = prefix, queue_size, max_attempts
        self._group = ConsumerGroup(client, f"{prefix}:jobs", claim_idle_s=claim_idle_s)
        self._deliver = deliver
        self._replica = replica = replica_id()
        self._pool = StreamWorkers(self._group, replica, name="diagnose", workers=workers, handle=self._handle)
        self._pool.start()

    def submit(self, question: Question, then: AfterRun | None = None) -> str:
        if self._pool.closing:
            raise QueueFull("opsbot is restarting; try again in a minute")
        if self.waiting() >= self._queue_size:
            raise QueueFull(f"{self.waiting()} diagnoses waiting; try again in a minute")
        trace_id = new_trace_id()
        self._execution.accept(trace_id, question)
        pipe = self._redis.pipeline()
        pipe.hset(
            self._job(trace_id),
            mapping={
                "question": json.dumps(asdict(question)),
                "status": "queued",
                "deliver": "1" if then is not None else "",
                "attempts": 0,
            },
        )
        pipe.expire(self._job(trace_id), STATUS_TTL_S)
        self._group.add({"trace_id": trace_id}, pipe)
        pipe.execute()
        return trace_id

    def waiting(self) -> int:
        """Jobs in the stream that no worker has picked up yet."""
        return self._group.waiting()

    def waiting_or_unknown(self) -> float:
        """waiting() for a metrics scrape: NaN while Redis does not answer, rather than a failed scrape."""
        try:
            return float(self.waiting())
        except Exception:
            return float("nan")

    def wait(self, trace_id: str, timeout_s: float) -> Trace | None:
        deadline = time.monotonic() + timeout_s
        while True:
            status, error = self.status(trace_id)
            if status == "failed":
                raise JobFailed(error)
            if status in ("done", "interrupted"):
                return self._execution.stored(trace_id)
            if time.monotonic() >= deadline:
                return None
            time.sleep(POLL_S)

    def status(self, trace_id: str) -> tuple[JobStatus, str]:
        fields = self._redis.hmget(self._job(trace_id), "status", "error")
        status, error = (v.decode() if isinstance(v, bytes) else (v or "") for v in fields)
        return (status or "unknown"), error  # type: ignore[return-value]

    def close(self, drain_s: float) -> None:
        """Stop reading; running jobs get drain_s. Queued jobs never left the stream; a job still running at the
        deadline stays pending there and another replica claims it once its heartbeat has stopped."""
        left = [m.fields.get("trace_id", "") for m in self._pool.close(drain_s)]
        if left:
            log.warning(
                "stopping with %d diagnoses running; another replica re-runs them: %s", len(left), ",".join(left)
            )

    def shutdown(self, wait: bool = True) -> None:
        self.close(30.0 if wait else 0.0)

    def _handle(self, message: Message) -> None:
        trace_id = message.fields.get("trace_id", "")
        job = self._job(trace_id)
        raw_question, deliver = self._redis.hmget(job, "question", "deliver")
        if raw_question is None:  # its status expired: nothing to run or report
            return
        question = question_from_json(raw_question)
        attempts = int(self._redis.hincrby(job, "attempts", 1))
        trace = self._attempt(trace_id, question, attempts)
        if trace is not None and deliver and self._deliver is not None:
            self._execution.deliver(lambda t: self._deliver(question, t) if self._deliver else None, trace)

    def _attempt(self, trace_id: str, question: Question, attempts: int) -> Trace | None:
        job = self._job(trace_id)
        if attempts > self._max_attempts:
            log.warning("job %s was interrupted %d times; finishing it as interrupted", trace_id, attempts - 1)
            trace = self._execution.unrun(trace_id, question, INTERRUPTED_ANSWER)
            self._redis.hset(job, "status", "interrupted")
            return trace
        if attempts > 1:
            log.warning("re-running job %s (attempt %d) after its worker stopped", trace_id, attempts)
            self._execution.accept(trace_id, question)
        self._redis.hset(job, mapping={"status": "running", "owner": self._replica})
        try:
            trace = self._execution.run(trace_id, question)
        except Exception as exc:  # the one place a durable job's unexpected failure is caught
            log.exception("diagnosis %s failed", trace_id)
            self._redis.hset(job, mapping={"status": "failed", "error": f"{type(exc).__name__}: {exc}"})
            return None
        self._redis.hset(job, "status", "done")
        return trace

    def _job(self, trace_id: str) -> str:
        return f"{self._prefix}:job:{trace_id}"


class RedisAlertDedupe:
    """The AlertDedupe seam on Redis (SET NX EX): a re-notification that reaches another replica starts no run."""

    def __init__(self, client: Any, ttl_s: float, *, prefix: str = "opsbot") -> None:
        self._client, self._ttl_s, self._prefix = client, max(int(ttl_s), 1), f"{prefix}:alert:"

    def first_time(self, key: str) -> bool:
        return bool(self._client.set(self._prefix + key, "1", nx=True, ex=self._ttl_s))

    def forget(self, key: str) -> None:
        self._client.delete(self._prefix + key)


def job_statuses_from_redis(client: Any, trace_ids: list[str], *, prefix: str = "opsbot") -> dict[str, str]:
    """Each job's status in the shared queue (queued, running, done, failed, interrupted); absent: unknown."""
    pipe = client.pipeline()
    for trace_id in trace_ids:
        pipe.hget(f"{prefix}:job:{trace_id}", "status")
    found = zip(trace_ids, pipe.execute(), strict=True)
    return {t: text_from_redis(v) for t, v in found if v}


def question_from_json(raw: str | bytes) -> Question:
    data = json.loads(raw)
    return Question(
        text=str(data["text"]),
        user=str(data.get("user", "")),
        channel=str(data.get("channel", "")),
        thread_ts=str(data.get("thread_ts", "")),
        source=str(data.get("source", "api")),
        history=tuple(str(h) for h in data.get("history", ())),
    )
