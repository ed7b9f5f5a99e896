"""The job runner's backend on Redis, shared by every replica: a stream with a consumer group, a hash per job.

Why a bare stream rather than a queue library (RQ, Celery, Dramatiq): the consumer group already gives what is
needed (one running owner per job, a pending list that outlives a crashed worker, XAUTOCLAIM to take over after an
idle time) without a second worker process model, pickled jobs or a broker abstraction. The group's mechanics are
bot/durable/group.py, the workers and the heartbeat bot/durable/pool.py.

Keys (`<prefix>` keeps two deployments apart):
- `<prefix>:<name>`: the stream; a message carries only the job id.
- `<prefix>:job:<id>`: the job: kind, payload, status, error, owner (replica), attempts, and the surface's marks
  (`m:<name>`). Its status is what `GET /api/traces/<id>` and `opsbot traces` read, on any replica.
- `<prefix>:job:<id>:steps`: the steps found so far, one JSON record per step with the attempt that found it: the
  next attempt goes on from them (no replica reads another's disk).
- `<prefix>:hold:<sha1>`: a key held while a job for it waits or runs (one run per Slack thread and question).

An attempt is current while the job's `attempts` is its number: a replica paused past its lease, whose job was
taken over, finds that out before it writes anything, and its late status is not recorded.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from typing import Any

from bot.durable.capacity import Capacity, Workers
from bot.durable.group import ConsumerGroup, Message, replica_id, text_from_redis
from bot.durable.pool import StreamWorkers
from bot.durable.runner import SETTLED, JobRecord, Leftovers, RunnerOptions

log = logging.getLogger(__name__)

JOB_TTL_S = 86_400  # a job's status is answered for a day
HOLD_TTL_S = 3_600  # a hold whose replica died frees itself after this
POLL_S = 0.2

# Record the status only while `attempt` is still the job's current one; a settled job's steps are not needed
# any more (its trace is in the store).
_SETTLE = """
if redis.call('HGET', KEYS[1], 'attempts') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'error', ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[4])
redis.call('DEL', KEYS[2])
return 1
"""


class RedisJobs:
    """The runner's Backend on Redis (see the module docstring); `client` is a ready `redis.Redis`."""

    def __init__(self, client: Any, options: RunnerOptions) -> None:
        self._redis, self._options, self._prefix = client, options, options.prefix
        self._group = ConsumerGroup(client, f"{options.prefix}:{options.name}", claim_idle_s=options.lease_s)
        self.replica = replica_id()
        self._capacity = Capacity(client, self._group.stream, self.replica, ttl_s=max(options.lease_s * 3, 3.0))
        self._settle = client.register_script(_SETTLE)
        self._pool: StreamWorkers | None = None
        self._closing = False

    @property
    def active(self) -> int:
        return self._pool.active if self._pool is not None else 0

    def add(self, job_id: str, kind: str, payload: str) -> int | None:
        if self._closing or self._group.waiting() >= self._options.queue_size:
            return None
        key = self._job(job_id)
        pipe = self._redis.pipeline()
        pipe.hset(key, mapping={"kind": kind, "payload": payload, "status": "queued", "attempts": 0})
        pipe.expire(key, JOB_TTL_S)
        self._group.add({"job_id": job_id}, pipe)
        pipe.execute()
        return self._group.waiting()  # 0: a free worker (of any replica) took it already

    def begin(self, job_id: str) -> JobRecord | None:
        key = self._job(job_id)
        fields = {text_from_redis(k): text_from_redis(v) for k, v in self._redis.hgetall(key).items()}
        if "payload" not in fields or fields.get("status") in SETTLED:
            return None  # expired, or settled already (its message came back after a crash before the ack)
        pipe = self._redis.pipeline()
        pipe.hincrby(key, "attempts", 1)
        pipe.hset(key, mapping={"status": "running", "owner": self.replica})
        pipe.expire(key, JOB_TTL_S)
        pipe.lrange(self._steps(job_id), 0, -1)
        number, _, _, records = pipe.execute()
        marks = {k[2:]: v for k, v in fields.items() if k.startswith("m:")}
        kept = tuple(text_from_redis(r) for r in records)
        return JobRecord(job_id, fields.get("kind", ""), fields["payload"], int(number), marks, kept)

    def abandon(self, job_id: str) -> JobRecord | None:
        return None  # a job left on Redis is taken over by another replica, never answered from here

    def settle(self, job_id: str, attempt: int, status: str, error: str = "") -> None:
        self._settle(keys=[self._job(job_id), self._steps(job_id)], args=[attempt, status, error, JOB_TTL_S])

    def keep_step(self, job_id: str, attempt: int, record: str) -> None:
        pipe = self._redis.pipeline()
        pipe.rpush(self._steps(job_id), record)
        pipe.expire(self._steps(job_id), JOB_TTL_S)
        pipe.execute()

    def mark(self, job_id: str, name: str, value: str) -> None:
        if value:
            self._redis.hset(self._job(job_id), f"m:{name}", value)
        else:
            self._redis.hdel(self._job(job_id), f"m:{name}")

    def current(self, job_id: str, attempt: int) -> bool:
        attempts = self._redis.hget(self._job(job_id), "attempts")
        return attempts is not None and text_from_redis(attempts) == str(attempt)

    def status(self, job_id: str) -> tuple[str, str]:
        fields = self._redis.hmget(self._job(job_id), "status", "error")
        status, error = (text_from_redis(v) if v else "" for v in fields)
        return (status or "unknown"), error

    def wait(self, job_id: str, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while True:
            status, _ = self.status(job_id)
            if status in SETTLED or time.monotonic() >= deadline:
                return status
            time.sleep(POLL_S)

    def steps(self, job_id: str) -> list[str]:
        return [text_from_redis(r) for r in self._redis.lrange(self._steps(job_id), 0, -1)]

    def hold(self, key: str) -> bool:
        return bool(self._redis.set(self._hold(key), self.replica, nx=True, ex=HOLD_TTL_S))

    def release(self, key: str) -> None:
        self._redis.delete(self._hold(key))

    def waiting(self) -> int:
        return self._group.waiting()

    def capacity(self) -> Workers:
        """Every live replica's workers; this replica's own when the register does not answer or is empty."""
        try:
            workers = self._capacity.workers()
        except Exception as exc:
            log.info("reading the replicas' capacity failed: %s", exc)
            workers = Workers(0, 0)
        own = max(self._options.workers, 0)
        return workers if workers.total else Workers(own, max(own - self.active, 0))

    def start(self, handle: Callable[[str], None]) -> None:
        if self._pool is not None:
            return

        def run(message: Message) -> None:
            handle(message.fields.get("job_id", ""))

        self._pool = StreamWorkers(
            self._group,
            self.replica,
            name=self._options.name,
            workers=self._options.workers,
            handle=run,
            capacity=self._capacity,
        )
        self._pool.start()

    def close(self, drain_s: float) -> Leftovers:
        """Stop reading; running jobs get drain_s. What waits never left the stream; a job still running at the
        deadline stays pending there and another replica takes it over once this heartbeat has stopped."""
        self._closing = True
        left = [m.fields.get("job_id", "") for m in self._pool.close(drain_s)] if self._pool is not None else []
        if left:
            log.warning(
                "stopping with %d %s jobs running; another replica takes them over: %s",
                len(left),
                self._options.name,
                ",".join(left),
            )
        return Leftovers()

    def _job(self, job_id: str) -> str:
        return f"{self._prefix}:job:{job_id}"

    def _steps(self, job_id: str) -> str:
        return f"{self._prefix}:job:{job_id}:steps"

    def _hold(self, key: str) -> str:
        return f"{self._prefix}:hold:{hashlib.sha1(key.encode()).hexdigest()}"
