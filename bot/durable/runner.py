"""The one job runner: where every surface's diagnoses wait, who runs them, and what a stopped replica leaves behind.

Slack's diagnoses and the API's (and Alertmanager's) run on it alike; what a job *is* and how its answer is delivered
stay the surface's (a `Delivery` per job kind: a Slack thread, the API's stored trace, an alert's channel). The
runner keeps the rest, one way for all of them:

- where jobs wait: in this process (bot/durable/memoryjobs.py, the default for one replica) or on a Redis stream
  with a consumer group that every replica reads (bot/durable/redisjobs.py);
- claim and re-claim: a worker reads a job only when it is free; a running job is renewed by a heartbeat, and the
  job of a replica that stopped renewing it (kill -9, a lost node) is claimed by another one after the lease;
- takeover with the steps found so far: each step is kept in the ledger as it completes, so the next attempt is
  handed them (bot/durable/attempt.py) and goes on from there; past `max_attempts` the job is finished as
  interrupted, with those steps;
- drain: on SIGTERM the workers stop reading and running jobs get the drain time. On Redis, what waits (or still
  runs at the deadline) stays in the stream for the other replicas; in memory, what waits is answered "restarting"
  and what still runs "interrupted". The words for both are here, once.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from bot.durable.attempt import Attempt, Ledger, steps_from_records
from bot.durable.capacity import Workers
from bot.engine.types import Step

log = logging.getLogger(__name__)

RESTARTING_TEXT = "opsbot is restarting and did not get to this question. Re-run? Ask again in a minute."
SETTLED = frozenset({"done", "failed", "interrupted"})


def interrupted_text(times: int) -> str:
    """The last word on a job whose replica stopped before it finished (`times` attempts)."""
    how_often = f", {times} times" if times > 1 else ""
    return (
        f"opsbot was interrupted (a replica stopped) before finishing this diagnosis{how_often}. Re-run? Ask again "
        "to start it anew; the steps it had taken are kept."
    )


@dataclass(frozen=True)
class RunnerOptions:
    """One runner's options, built once by wiring from settings (the Slack runner's and the API's differ)."""

    name: str = "jobs"  # the queue's name: the Redis stream `<prefix>:<name>`, the worker threads' prefix
    workers: int = 4  # 0: this replica only adds jobs (another one runs them)
    queue_size: int = 32  # jobs waiting beyond this are refused
    lease_s: float = 30.0  # a running job its replica has not renewed for this long is taken over by another
    max_attempts: int = 2  # deliveries of one job; past that it is finished as interrupted
    prefix: str = "opsbot"  # every Redis key starts with it: two deployments can share one Redis
    # how a taken-over attempt tells the model each earlier step (None: its action, status and first line)
    step_line: Callable[[Step], str] | None = None


class Delivery(Protocol):
    """What a surface does with its jobs (one per job kind)."""

    def run(self, attempt: Attempt) -> None:
        """Run the job and deliver its answer; on a takeover `attempt.earlier_steps` holds what was found."""
        ...

    def interrupted(self, attempt: Attempt, text: str) -> None:
        """Finish a job that will not run (again) with `text` and the steps kept so far."""
        ...

    def restarting(self, attempt: Attempt, text: str) -> None:
        """Answer a job that never started because this process is stopping (memory only)."""
        ...


@dataclass(frozen=True)
class JobRecord:
    """A job as a backend hands it to the runner for one attempt."""

    job_id: str
    kind: str
    payload: str
    number: int
    marks: Mapping[str, str] = field(default_factory=dict)
    records: tuple[str, ...] = ()  # the steps kept so far (bot/durable/attempt.py's records)


@dataclass(frozen=True)
class Leftovers:
    """What a closing backend could not finish: ids the runner must still answer (memory only)."""

    queued: tuple[str, ...] = ()
    running: tuple[str, ...] = ()


class Backend(Ledger, Protocol):
    """Where jobs wait and how workers get them: this process (MemoryJobs) or a Redis stream (RedisJobs)."""

    @property
    def active(self) -> int: ...

    def add(self, job_id: str, kind: str, payload: str) -> int | None: ...

    def begin(self, job_id: str) -> JobRecord | None: ...

    def abandon(self, job_id: str) -> JobRecord | None: ...

    def settle(self, job_id: str, attempt: int, status: str, error: str = "") -> None: ...

    def status(self, job_id: str) -> tuple[str, str]: ...

    def wait(self, job_id: str, timeout_s: float) -> str: ...

    def steps(self, job_id: str) -> list[str]: ...

    def hold(self, key: str) -> bool: ...

    def release(self, key: str) -> None: ...

    def waiting(self) -> int: ...

    def capacity(self) -> Workers: ...

    def start(self, handle: Callable[[str], None]) -> None: ...

    def close(self, drain_s: float) -> Leftovers: ...


class JobRunner:
    """Jobs of several kinds on one backend; `start` names the Delivery of each kind."""

    def __init__(self, options: RunnerOptions, client: Any | None = None) -> None:
        """In this process by default; on the Redis stream `<prefix>:<name>` with `client` (a ready redis.Redis)."""
        self.options = options
        self._backend: Backend
        # the backends import this module's records: imported here, and only the one used (redis-py is optional)
        if client is None:
            from bot.durable.memoryjobs import MemoryJobs

            self._backend = MemoryJobs(options)
        else:
            from bot.durable.redisjobs import RedisJobs

            self._backend = RedisJobs(client, options)
        self._deliveries: dict[str, Delivery] = {}

    @property
    def active(self) -> int:
        """Jobs running now in this process."""
        return self._backend.active

    def start(self, deliveries: Mapping[str, Delivery]) -> None:
        """Start the workers (and, on Redis, the heartbeat); idempotent."""
        self._deliveries = dict(deliveries)
        self._backend.start(self._handle)

    def put(self, kind: str, payload: Mapping[str, Any], job_id: str = "") -> tuple[str, int] | None:
        """Queue a job: its id and its 1-based place among the waiting (0: a free worker took it already), or None
        when the queue is full or the runner is closing."""
        job_id = job_id or uuid.uuid4().hex
        position = self._backend.add(job_id, kind, json.dumps(payload))
        return None if position is None else (job_id, position)

    def mark(self, job_id: str, name: str, value: str) -> None:
        """Keep a small fact with a job (e.g. a Slack notice's ts) for whichever replica runs it."""
        self._backend.mark(job_id, name, value)

    def hold(self, key: str) -> bool:
        """Take `key` while a job for it waits or runs (one run per Slack thread and question); False: taken."""
        return self._backend.hold(key)

    def release(self, key: str) -> None:
        self._backend.release(key)

    def status(self, job_id: str) -> tuple[str, str]:
        """queued | running | done | failed | interrupted | unknown, and the error of a failed one."""
        return self._backend.status(job_id)

    def wait(self, job_id: str, timeout_s: float) -> str:
        """The job's status once it settled (done, failed, interrupted), or as it is after `timeout_s`."""
        return self._backend.wait(job_id, timeout_s)

    def steps(self, job_id: str) -> tuple[Step, ...]:
        """The steps a waiting or running job has found so far (every attempt's)."""
        records = self._backend.steps(job_id)
        return steps_from_records(records) if records else ()

    def waiting(self) -> int:
        """Jobs no worker has started; -1 while that cannot be known (Redis away)."""
        try:
            return self._backend.waiting()
        except Exception:
            return -1

    def waiting_or_nan(self) -> float:
        """waiting() for a metrics scrape: NaN rather than -1 while Redis does not answer."""
        waiting = self.waiting()
        return float(waiting) if waiting >= 0 else float("nan")

    def capacity(self) -> Workers:
        """The workers that take these jobs (on Redis: every live replica's) and how many are free."""
        return self._backend.capacity()

    def close(self, drain_s: float) -> None:
        """Take no more; running jobs get `drain_s`; then what is left is answered (memory) or left to the other
        replicas (Redis)."""
        left = self._backend.close(drain_s)
        for job_id in left.queued:
            self._unrun(job_id, RESTARTING_TEXT, restarting=True)
        for job_id in left.running:
            log.warning("job %s still running at the end of the drain; answered as interrupted", job_id)
            self._unrun(job_id, interrupted_text(1), restarting=False)

    def _handle(self, job_id: str) -> None:
        record = self._backend.begin(job_id)  # raises when Redis is away: the job stays pending, claimed again
        if record is None:  # expired or unknown: nothing left to answer with
            return
        attempt = self._attempt(record, before=record.number)
        delivery = self._deliveries.get(record.kind)
        if delivery is None:
            log.error("no delivery for job %s of kind %r", job_id, record.kind)
            self._backend.settle(job_id, record.number, "failed", f"no delivery for {record.kind!r}")
        elif record.number > self.options.max_attempts:
            log.warning("job %s was interrupted %d times; finishing it as interrupted", job_id, record.number - 1)
            self._deliver(delivery.interrupted, attempt, interrupted_text(record.number - 1))
            self._backend.settle(job_id, record.number, "interrupted")
        else:
            self._run(delivery, attempt)

    def _run(self, delivery: Delivery, attempt: Attempt) -> None:
        if attempt.taken_over:
            log.warning(
                "taking over job %s (attempt %d) with the %d steps found so far",
                attempt.job_id,
                attempt.number,
                len(attempt.earlier_steps),
            )
        try:
            delivery.run(attempt)
        except Exception as exc:  # the one place a job's unexpected failure is caught, for every surface
            log.exception("job %s failed", attempt.job_id)
            self._backend.settle(attempt.job_id, attempt.number, "failed", f"{type(exc).__name__}: {exc}")
            return
        self._backend.settle(attempt.job_id, attempt.number, "done")

    def _unrun(self, job_id: str, text: str, *, restarting: bool) -> None:
        record = self._backend.abandon(job_id)  # the attempt still running (if any) is no longer current
        delivery = self._deliveries.get(record.kind) if record is not None else None
        if record is None or delivery is None:
            return
        attempt = self._attempt(record, before=None)  # every step kept, the abandoned attempt's too
        self._deliver(delivery.restarting if restarting else delivery.interrupted, attempt, text)
        self._backend.settle(job_id, record.number, "interrupted")

    def _attempt(self, record: JobRecord, *, before: int | None) -> Attempt:
        return Attempt(
            record.job_id,
            record.kind,
            json.loads(record.payload),
            record.number,
            steps_from_records(list(record.records), before) if record.records else (),
            dict(record.marks),
            self._backend,
            self.options.step_line,
        )

    @staticmethod
    def _deliver(action: Callable[[Attempt, str], None], attempt: Attempt, text: str) -> None:
        try:
            action(attempt, text)
        except Exception:  # the job is settled all the same: its status says what happened
            log.exception("could not tell job %s's asker that it was not finished", attempt.job_id)
