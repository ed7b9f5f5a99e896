"""Slack diagnoses on a Redis stream shared by every replica (with OPSBOT_REDIS__URL; memory stays the default).

Each accepted diagnosis is a message on `<prefix>:slack-jobs` (a sibling of the API's `<prefix>:jobs`, with the
same consumer-group mechanics: bot/durable/group.py). What is needed to answer in its thread lives in a hash
next to it: the Job (channel, thread ts, user, the asking message), its "queued" notice (which becomes the
progress message), the progress message's ts once known, and how many times it was delivered.

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

from bot.durable.group import ConsumerGroup, replica_id, text_from_redis
from bot.engine.types import Intent, Question
from bot.slack.state import Job

log = logging.getLogger(__name__)

JOB_TTL_S = 86_400
INFLIGHT_TTL_S = 3_600  # a run that never released its guard (its replica died) frees it after this
REAP_EVERY = 30  # heartbeats between two sweeps for the consumers of replicas gone for good
REAP_AFTER_CLAIMS = 10

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


class SlackJobStream:
    """The stream, the job hashes and the ownership keys; `client` is a ready `redis.Redis`."""

    def __init__(self, client: Any, *, prefix: str = "opsbot", workers: int = 4, queue_size: int = 64,
                 claim_idle_s: float = 30.0, max_attempts: int = 2) -> None:  # fmt: skip
        self._redis, self._prefix = client, prefix
        self._group = ConsumerGroup(client, f"{prefix}:slack-jobs", claim_idle_s=claim_idle_s)
        self._workers, self._queue_size, self.max_attempts = max(workers, 1), queue_size, max_attempts
        self._owner_ttl_s = max(int(claim_idle_s * 3), 3)
        self.replica = replica_id()
        self._refresh = client.register_script(_REFRESH_IF_OWNER)
        self._closing, self._stopped = threading.Event(), threading.Event()
        self._running: dict[str, str] = {}  # message id -> job id (this process)
        self._owned: dict[str, str] = {}  # job id -> owner key of its progress message (this process)
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    @property
    def active(self) -> int:
        with self._lock:
            return len(self._running)

    def waiting(self) -> int:
        """Jobs no replica has started; -1 while Redis does not answer (for /readyz and the queue gauge)."""
        try:
            return self._group.waiting()
        except Exception:
            return -1

    def put(self, job: Job) -> tuple[str, int] | None:
        """Queue a job: its id and 1-based place among the waiting (0 when already taken), or None when full."""
        if self._closing.is_set() or self._group.waiting() >= self._queue_size:
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

    def start(self, run: Callable[[Delivery], None]) -> None:
        """Start the workers and the heartbeat (idempotent)."""
        if self._threads:
            return
        self._threads = [threading.Thread(target=self._work, args=(run, f"{self.replica}-slack-{n}"),
                                          name=f"opsbot-worker-{n}", daemon=True) for n in range(self._workers)]
        self._threads.append(threading.Thread(target=self._heartbeat, name="slack-heartbeat", daemon=True))
        for thread in self._threads:
            thread.start()

    def close(self, drain_s: float) -> list[str]:
        """Stop reading; running jobs get drain_s. Queued ones never left the stream; one still running at the
        deadline stays pending and another replica claims it once the heartbeat has stopped. Returns their ids."""
        self._closing.set()
        deadline = time.monotonic() + drain_s
        for thread in self._threads[:-1]:
            thread.join(max(deadline - time.monotonic(), 0.0))
        self._stopped.set()
        with self._lock:
            left = list(self._running.values())
        if left:
            log.warning("stopping with %d Slack diagnoses running; another replica re-runs them", len(left))
        return left

    def _work(self, run: Callable[[Delivery], None], consumer: str) -> None:
        while not self._closing.is_set():
            try:
                message = self._group.next_message(consumer)
                if message is not None:
                    self._handle(run, message.message_id, message.fields.get("job_id", ""))
            except Exception:  # Redis away for a moment: log, back off, go on (the job stays pending)
                log.exception("slack job worker %s failed; retrying in 1 s", consumer)
                time.sleep(1.0)

    def _handle(self, run: Callable[[Delivery], None], message_id: str, job_id: str) -> None:
        key = self._job_key(job_id)
        raw, notice_ts, progress_ts = self._redis.hmget(key, "job", "notice_ts", "progress_ts")
        if raw is None:  # expired: nothing left to answer with
            self._group.ack(message_id)
            return
        pipe = self._redis.pipeline()
        pipe.hincrby(key, "attempts", 1)
        pipe.hset(key, "owner", self.replica)  # which replica runs it (for operators and tests)
        attempt = int(pipe.execute()[0])
        with self._lock:
            self._running[message_id] = job_id
        try:
            notice, progress = text_from_redis(notice_ts or ""), text_from_redis(progress_ts or "")
            run(Delivery(job_id, job_from_json(raw), attempt, notice, progress))
        except Exception:
            log.exception("slack job %s failed", job_id)
        finally:
            with self._lock:
                self._running.pop(message_id, None)
                self._owned.pop(job_id, None)
        self._group.ack(message_id)
        self._redis.delete(key)

    def _heartbeat(self) -> None:
        beats = 0
        while not self._stopped.wait(self._group.claim_idle_ms / 3000):
            with self._lock:
                running, owned = list(self._running), list(self._owned.values())
            try:
                self._group.keep_alive(f"{self.replica}-hb", running)
                for key in owned:
                    self._refresh(keys=[key], args=[self.replica, self._owner_ttl_s])
                if beats % REAP_EVERY == 0:
                    self._group.reap_idle_consumers(REAP_AFTER_CLAIMS * self._group.claim_idle_ms / 1000,
                                                    keep_prefix=self.replica)  # fmt: skip
            except Exception:
                log.exception("slack job heartbeat failed")
            beats += 1

    def _job_key(self, job_id: str) -> str:
        return f"{self._prefix}:slack-job:{job_id}"

    def _owner_key(self, channel: str, ts: str) -> str:
        return f"{self._prefix}:slack-owner:{channel}:{ts}"

    def _inflight_key(self, key: str) -> str:
        return f"{self._prefix}:slack-inflight:{hashlib.sha1(key.encode()).hexdigest()}"


def json_from_job(job: Job) -> str:
    return json.dumps(asdict(job))


def job_from_json(raw: str | bytes) -> Job:
    data = json.loads(raw)
    q = data["question"]
    intent = Intent(**q["intent"]) if q.get("intent") else None
    question = Question(text=str(q["text"]), user=str(q.get("user", "")), channel=str(q.get("channel", "")),
                        thread_ts=str(q.get("thread_ts", "")), source=str(q.get("source", "slack")),
                        history=tuple(q.get("history", ())), intent=intent)  # fmt: skip
    return Job(question, data["channel"], data["thread_ts"], react_ts=data.get("react_ts", ""),
               user=data.get("user", ""), team=data.get("team", ""), read_thread=bool(data.get("read_thread")))

