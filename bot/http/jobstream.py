"""Durable API and webhook work on a Redis stream with a consumer group, shared by every replica.

Why a bare stream rather than a queue library (RQ, Celery, Dramatiq): the stream's consumer group already
gives what we need (at-most-one running owner per job, a pending list that outlives a crashed worker, and
XAUTOCLAIM to take over after an idle time) without a second worker process model, pickled jobs or a broker
abstraction. A job is only its trace id; the question lives in a hash next to its status.

A worker reads one job only when it is free, so a replica never hoards queued work: what it has not started
stays in the stream for the others. While a job runs, a heartbeat re-claims it (XCLAIM JUSTID resets its idle
time); when the replica dies the heartbeat stops, and after `claim_idle_s` another replica claims it and
re-runs it, or, past `max_attempts` deliveries, finishes it as "interrupted: re-run?". Never silently dropped.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from bot.engine.types import Question, Responder, Trace, new_trace_id
from bot.http.dispatch import INTERRUPTED_ANSWER, AfterRun, Execution, JobFailed, JobStatus, QueueFull
from bot.store.base import TraceStore

log = logging.getLogger(__name__)

Deliver = Callable[[Question, Trace], None]  # e.g. post an alert's diagnosis to its Slack channel
STATUS_TTL_S = 86_400
POLL_S = 0.2


class StreamDispatcher:
    """The Dispatch seam over Redis (see the module docstring). `client` is a ready `redis.Redis`."""

    def __init__(self, client: Any, responder: Responder, store: TraceStore, *, prefix: str = "opsbot",
                 workers: int = 2, queue_size: int = 16, claim_idle_s: float = 30.0, max_attempts: int = 2,
                 deliver: Deliver | None = None) -> None:  # fmt: skip
        self._redis = client
        self._execution = Execution(responder, store)
        self._stream, self._group, self._prefix = f"{prefix}:jobs", "workers", prefix
        self._queue_size, self._claim_idle_ms, self._max_attempts = queue_size, int(claim_idle_s * 1000), max_attempts
        self._deliver = deliver
        self._closing, self._stopped = threading.Event(), threading.Event()
        self._running: dict[str, str] = {}  # stream message id -> trace id, this process only
        self._lock = threading.Lock()
        self._ensure_group()
        self._replica = replica = f"{socket.gethostname()}-{os.getpid()}"
        self._threads = [threading.Thread(target=self._work, args=(f"{replica}-{n}",), name=f"diagnose-{n}",
                                          daemon=True) for n in range(workers)]  # fmt: skip (0: submit only)
        self._threads.append(threading.Thread(target=self._heartbeat, args=(replica,), name="job-heartbeat",
                                              daemon=True))  # fmt: skip
        for thread in self._threads:
            thread.start()

    def _ensure_group(self) -> None:
        try:
            self._redis.xgroup_create(self._stream, self._group, id="0", mkstream=True)
        except Exception as exc:  # BUSYGROUP: another replica created it first
            if "BUSYGROUP" not in str(exc):
                raise

    def submit(self, question: Question, then: AfterRun | None = None) -> str:
        if self._closing.is_set():
            raise QueueFull("opsbot is restarting; try again in a minute")
        if self.waiting() >= self._queue_size:
            raise QueueFull(f"{self.waiting()} diagnoses waiting; try again in a minute")
        trace_id = new_trace_id()
        self._execution.accept(trace_id, question)
        pipe = self._redis.pipeline()
        pipe.hset(self._job(trace_id), mapping={"question": json.dumps(asdict(question)), "status": "queued",
                                                "deliver": "1" if then is not None else "", "attempts": 0})
        pipe.expire(self._job(trace_id), STATUS_TTL_S)
        pipe.xadd(self._stream, {"trace_id": trace_id})
        pipe.execute()
        return trace_id

    def waiting(self) -> int:
        """Jobs in the stream that no worker has picked up yet."""
        pending = self._redis.xpending(self._stream, self._group)
        return max(int(self._redis.xlen(self._stream)) - int(pending.get("pending", 0)), 0)

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
        self._closing.set()
        deadline = time.monotonic() + drain_s
        for thread in self._threads[:-1]:
            thread.join(max(deadline - time.monotonic(), 0.0))
        self._stopped.set()
        with self._lock:
            left = list(self._running.values())
        if left:
            log.warning("stopping with %d diagnoses running; another replica re-runs them: %s", len(left),
                        ",".join(left))

    def shutdown(self, wait: bool = True) -> None:
        self.close(30.0 if wait else 0.0)

    def _work(self, consumer: str) -> None:
        while not self._closing.is_set():
            try:
                message = self._next(consumer)
                if message is not None:
                    self._handle(*message)
            except Exception:  # Redis away for a moment: log, back off, go on (the job stays pending)
                log.exception("job worker %s failed; retrying in 1 s", consumer)
                time.sleep(1.0)

    def _next(self, consumer: str) -> tuple[str, str] | None:
        """A job whose worker died (idle past claim_idle_s) first, else a new one (blocking up to 1 s)."""
        _, claimed, *_ = self._redis.xautoclaim(self._stream, self._group, consumer, self._claim_idle_ms,
                                                start_id="0-0", count=1)  # fmt: skip
        if not claimed:
            read = self._redis.xreadgroup(self._group, consumer, {self._stream: ">"}, count=1, block=1000)
            claimed = read[0][1] if read else []
        for message_id, fields in claimed:
            if fields:  # a deleted entry's id can come back without fields
                return _text(message_id), _text(fields.get(b"trace_id", fields.get("trace_id", b"")))
            self._redis.xack(self._stream, self._group, message_id)
        return None

    def _handle(self, message_id: str, trace_id: str) -> None:
        job = self._job(trace_id)
        raw_question, deliver = self._redis.hmget(job, "question", "deliver")
        if raw_question is None:  # its status expired: nothing to run or report
            self._ack(message_id)
            return
        question = question_from_json(raw_question)
        attempts = int(self._redis.hincrby(job, "attempts", 1))
        with self._lock:
            self._running[message_id] = trace_id
        try:
            trace = self._attempt(trace_id, question, attempts)
            if trace is not None and deliver and self._deliver is not None:
                self._execution.deliver(lambda t: self._deliver(question, t) if self._deliver else None, trace)
        finally:
            with self._lock:
                self._running.pop(message_id, None)
        self._ack(message_id)

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

    def _ack(self, message_id: str) -> None:
        pipe = self._redis.pipeline()
        pipe.xack(self._stream, self._group, message_id)
        pipe.xdel(self._stream, message_id)
        pipe.execute()

    def _heartbeat(self, replica: str) -> None:
        # Re-claim our running jobs to ourselves often enough that their idle time never reaches claim_idle_s.
        # It beats until close() has drained, so a long drain does not hand a still-running job to another replica.
        while not self._stopped.wait(self._claim_idle_ms / 3000):
            with self._lock:
                running = list(self._running)
            try:
                if running:
                    self._redis.xclaim(self._stream, self._group, f"{replica}-hb", 0, running, justid=True)
            except Exception:
                log.exception("job heartbeat failed")

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


def question_from_json(raw: str | bytes) -> Question:
    data = json.loads(raw)
    return Question(text=str(data["text"]), user=str(data.get("user", "")), channel=str(data.get("channel", "")),
                    thread_ts=str(data.get("thread_ts", "")), source=str(data.get("source", "api")),
                    history=tuple(str(h) for h in data.get("history", ())))  # fmt: skip


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
