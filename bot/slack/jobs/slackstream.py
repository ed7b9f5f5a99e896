"""Slack diagnoses on a Redis stream shared by every replica (with OPSBOT_REDIS__URL; memory stays the default).

Each accepted diagnosis is a message on `<prefix>:slack-jobs` (a sibling of the API's `<prefix>:jobs`, with the
same consumer-group mechanics and the same worker pool: bot/durable/group.py, bot/durable/pool.py). What is
needed to answer in its thread lives in a hash next to it: the Job (channel, thread ts, user, the asking
message), its "queued" notice (which becomes the progress message), the progress message's ts once known, the
current attempt's trace id, and how many times it was delivered.

- A worker reads a job only when it is free, so queued jobs stay in the stream: on SIGTERM they are simply
  left there for the other replicas (no "restarting" notice while another replica is up).
- While a job runs, the heartbeat re-claims it and refreshes the ownership of its progress message.
- When a replica dies, another claims the job after `claim_idle_s` and re-runs it in the same thread; past
  `max_attempts` deliveries it is finished there as "interrupted: re-run?".
- Which replica owns a progress message is a key per message (`<prefix>:slack-owner:<channel>:<ts>` = replica
  id, TTL refreshed by the heartbeat): only the owner appends to a chat stream or edits the message. A replica
  that takes a job over becomes the owner of the old message (so a replica that was only paused stops writing
  to it) and continues in a new message of its own.
- The "one run per (thread, question)" guard is a key too, so a repeat that lands on another replica is refused.
- Each attempt is a trace of its own (its steps are stored as they complete, bot/slack/jobs/steplog.py); its status
  (running, done, interrupted) is kept under the API's job key, so `GET /api/traces/<id>` answers on any replica.
- Every replica registers how many workers it has and how many are busy (bot/durable/capacity.py), so a queue
  position counts the idle workers of the other replicas too.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from bot.durable.capacity import Capacity, Workers
from bot.durable.group import ConsumerGroup, Message, replica_id, text_from_redis
from bot.durable.pool import StreamWorkers
from bot.engine.types import Intent, Question, new_trace_id
from bot.slack.jobs.state import Job

log = logging.getLogger(__name__)

JOB_TTL_S = 86_400
INFLIGHT_TTL_S = 3_600  # a run that never released its guard (its replica died) frees it after this

# Refresh the TTL only while the key still names us: a replica that lost a message never takes it back.
_REFRESH_IF_OWNER = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('EXPIRE', KEYS[1], ARGV[2]) end
return 0
"""


@dataclass(frozen=True)
class Delivery:
    """One delivery of a durable Slack job to this replica's worker."""

    job_id: str
    job: Job
    attempt: int  # 1 the first time; more when a replica died running it
    notice_ts: str  # the "queued" notice posted when it was accepted, if any
    progress_ts: str  # the progress message an earlier attempt wrote to, if any
    trace_id: str = ""  # this attempt's trace (its steps are stored as they complete)
    earlier_trace_id: str = ""  # the attempt before, when its replica died running it


class SlackJobStream:
    """The stream, the job hashes and the ownership keys; `client` is a ready `redis.Redis`."""

    def __init__(
        self,
        client: Any,
        *,
        prefix: str = "opsbot",
        workers: int = 4,
        queue_size: int = 64,
        claim_idle_s: float = 30.0,
        max_attempts: int = 2,
    ) -> None:
        self._redis, self._prefix = client, prefix
        self._group = ConsumerGroup(client, f"{prefix}:slack-jobs", claim_idle_s=claim_idle_s)
        self._workers, self._queue_size, self.max_attempts = max(workers, 1), queue_size, max_attempts
        self._owner_ttl_s = max(int(claim_idle_s * 3), 3)
        self.replica = replica_id()
        self._refresh = client.register_script(_REFRESH_IF_OWNER)
        self._capacity = Capacity(client, self._group.stream, self.replica, ttl_s=self._owner_ttl_s)
        self._owned: dict[str, str] = {}  # job id -> owner key of its progress message (this process)
        self._lock = threading.Lock()
        self._run: Callable[[Delivery], None] = lambda delivery: None
        self._pool = StreamWorkers(
            self._group,
            self.replica,
            name="opsbot-worker",
            workers=self._workers,
            handle=self._handle,
            on_beat=self._refresh_owned,
            capacity=self._capacity,
        )

    @property
    def active(self) -> int:
        return self._pool.active

    def capacity(self) -> Workers:
        """The workers of every replica and how many are free (this replica's own when Redis does not say)."""
        try:
            workers = self._capacity.workers()
        except Exception as exc:
            log.info("reading the replicas' capacity failed: %s", exc)
            workers = Workers(0, 0)
        return workers if workers.total else Workers(self._workers, max(self._workers - self.active, 0))

    def waiting(self) -> int:
        """Jobs no replica has started; -1 while Redis does not answer (for /readyz and the queue gauge)."""
        try:
            return self._group.waiting()
        except Exception:
            return -1

    def put(self, job: Job) -> tuple[str, int] | None:
        """Queue a job: its id and 1-based place among the waiting (0 when already taken), or None when full."""
        if self._pool.closing or self._group.waiting() >= self._queue_size:
            return None
        job_id = hashlib.sha1(f"{self.replica}:{time.time_ns()}:{job.thread_ts}".encode()).hexdigest()[:16]
        pipe = self._redis.pipeline()
        pipe.hset(self._job_key(job_id), mapping={"job": json_from_job(job), "attempts": 0})
        pipe.expire(self._job_key(job_id), JOB_TTL_S)
        self._group.add({"job_id": job_id}, pipe)
        pipe.execute()
        return job_id, self._group.waiting()  # 0: a free worker (of any replica) took it already

    def set_notice(self, job_id: str, ts: str) -> None:
        """The job's "queued" notice: whichever replica runs the job turns it into the progress message."""
        if ts:
            self._redis.hset(self._job_key(job_id), "notice_ts", ts)

    def claim_inflight(self, key: str) -> bool:
        return bool(self._redis.set(self._inflight_key(key), self.replica, nx=True, ex=INFLIGHT_TTL_S))

    def release_inflight(self, key: str) -> None:
        self._redis.delete(self._inflight_key(key))

    def take_message(self, job_id: str, channel: str, ts: str) -> None:
        """This replica now owns the progress message `ts` (written to the job, refreshed by the heartbeat)."""
        key = self._owner_key(channel, ts)
        pipe = self._redis.pipeline()
        pipe.set(key, self.replica, ex=self._owner_ttl_s)
        pipe.hset(self._job_key(job_id), "progress_ts", ts)
        pipe.execute()
        with self._lock:
            self._owned[job_id] = key

    def owns_message(self, channel: str, ts: str) -> bool:
        """True unless another replica took the message over (a Redis hiccup counts as ours: keep answering)."""
        try:
            owner = self._redis.get(self._owner_key(channel, ts))
        except Exception:
            return True
        return owner is None or text_from_redis(owner) == self.replica

    def set_status(self, trace_id: str, status: str) -> None:
        """The run's status where `GET /api/traces/<id>` and `opsbot traces` look (the API's job keys)."""
        key = self._status_key(trace_id)
        pipe = self._redis.pipeline()
        pipe.hset(key, mapping={"status": status, "owner": self.replica})
        pipe.expire(key, JOB_TTL_S)
        pipe.execute()

    def start(self, run: Callable[[Delivery], None]) -> None:
        """Start the workers and the heartbeat (idempotent)."""
        self._run = run
        self._pool.start()

    def close(self, drain_s: float) -> list[str]:
        """Stop reading; running jobs get drain_s. Queued ones never left the stream; one still running at the
        deadline stays pending and another replica claims it once the heartbeat has stopped. Returns their ids."""
        left = [m.fields.get("job_id", "") for m in self._pool.close(drain_s)]
        if left:
            log.warning("stopping with %d Slack diagnoses running; another replica re-runs them", len(left))
        return left

    def _handle(self, message: Message) -> None:
        job_id = message.fields.get("job_id", "")
        key = self._job_key(job_id)
        raw, notice_ts, progress_ts, earlier = self._redis.hmget(key, "job", "notice_ts", "progress_ts", "trace_id")
        if raw is None:  # expired: nothing left to answer with
            return
        trace_id = new_trace_id()  # each attempt is a trace of its own; the job keeps the latest one's id
        pipe = self._redis.pipeline()
        pipe.hincrby(key, "attempts", 1)
        pipe.hset(key, mapping={"owner": self.replica, "trace_id": trace_id})  # who runs it (operators, tests)
        pipe.hset(self._status_key(trace_id), mapping={"status": "running", "owner": self.replica})
        pipe.expire(self._status_key(trace_id), JOB_TTL_S)
        attempt = int(pipe.execute()[0])
        try:
            run = Delivery(
                job_id,
                job_from_json(raw),
                attempt,
                text_from_redis(notice_ts or ""),
                text_from_redis(progress_ts or ""),
                trace_id,
                text_from_redis(earlier or ""),
            )
            self._run(run)
            self.set_status(trace_id, "done")
        except Exception:
            log.exception("slack job %s failed", job_id)
        finally:
            with self._lock:
                self._owned.pop(job_id, None)
        self._redis.delete(key)

    def _refresh_owned(self) -> None:
        with self._lock:
            owned = list(self._owned.values())
        for key in owned:
            self._refresh(keys=[key], args=[self.replica, self._owner_ttl_s])

    def _job_key(self, job_id: str) -> str:
        return f"{self._prefix}:slack-job:{job_id}"

    def _owner_key(self, channel: str, ts: str) -> str:
        return f"{self._prefix}:slack-owner:{channel}:{ts}"

    def _status_key(self, trace_id: str) -> str:
        return f"{self._prefix}:job:{trace_id}"

    def _inflight_key(self, key: str) -> str:
        return f"{self._prefix}:slack-inflight:{hashlib.sha1(key.encode()).hexdigest()}"


def json_from_job(job: Job) -> str:
    return json.dumps(asdict(job))


def job_from_json(raw: str | bytes) -> Job:
    data = json.loads(raw)
    q = data["question"]
    intent = Intent(**q["intent"]) if q.get("intent") else None
    question = Question(
        text=str(q["text"]),
        user=str(q.get("user", "")),
        channel=str(q.get("channel", "")),
        thread_ts=str(q.get("thread_ts", "")),
        source=str(q.get("source", "slack")),
        history=tuple(q.get("history", ())),
        intent=intent,
    )
    return Job(
        question,
        data["channel"],
        data["thread_ts"],
        react_ts=data.get("react_ts", ""),
        user=data.get("user", ""),
        team=data.get("team", ""),
        read_thread=bool(data.get("read_thread")),
    )
