"""One Redis stream with one consumer group: the mechanics under the job runner's Redis backend.

The job runner (bot/durable/runner.py, bot/durable/redisjobs.py) keeps one stream per queue (Slack's, the API's) and
a hash per job; what is here is only the group:

- `next_message`: a message whose consumer went quiet for `claim_idle_s` (its replica died) first, through
  XAUTOCLAIM, else a new one (XREADGROUP, blocking up to a second). A worker asks only when it is free, so what
  a replica has not started stays in the stream for the others.
- `keep_alive`: the heartbeat. XCLAIM JUSTID of our running messages resets their idle time, so another replica
  never claims a job that is still running.
- `ack`: XACK + XDEL once a job is finished (or finished as interrupted).
- `reap_idle_consumers`: consumers pile up in the group across restarts (every replica names its own, with its
  pid). A consumer that has owned nothing pending for `idle_s` is removed with XGROUP DELCONSUMER; the check
  of its pending list and the delete are one Lua script, so an entry it claims in between is never lost (a
  live consumer that is removed is simply recreated by its next read).
"""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

# Delete the consumer only when it owns no pending entry at this very moment (atomic with the delete).
_DELETE_IF_IDLE = """
local pending = redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2])
if #pending > 0 then return -1 end
return redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
"""


def replica_id() -> str:
    """This process among the replicas: host name and pid (a restarted pod gets a new one)."""
    return f"{socket.gethostname()}-{os.getpid()}"


@dataclass(frozen=True)
class Message:
    message_id: str
    fields: dict[str, str]


class ConsumerGroup:
    """The group "workers" on `stream`; `client` is a ready `redis.Redis` (bytes or decoded replies)."""

    def __init__(self, client: Any, stream: str, *, claim_idle_s: float, group: str = "workers") -> None:
        self._redis, self.stream, self.group = client, stream, group
        self.claim_idle_ms = int(claim_idle_s * 1000)
        self._delete_if_idle = client.register_script(_DELETE_IF_IDLE)
        try:
            client.xgroup_create(stream, group, id="0", mkstream=True)
        except Exception as exc:  # BUSYGROUP: another replica created it first
            if "BUSYGROUP" not in str(exc):
                raise

    def add(self, fields: dict[str, str], pipe: Any | None = None) -> None:
        (pipe if pipe is not None else self._redis).xadd(self.stream, fields)

    def waiting(self) -> int:
        """Messages in the stream that no worker has picked up yet."""
        pending = self._redis.xpending(self.stream, self.group)
        return max(int(self._redis.xlen(self.stream)) - int(pending.get("pending", 0)), 0)

    def next_message(self, consumer: str, block_ms: int = 1000) -> Message | None:
        """A message whose worker died (idle past claim_idle_s) first, else a new one (blocking up to block_ms)."""
        _, claimed, *_ = self._redis.xautoclaim(
            self.stream, self.group, consumer, self.claim_idle_ms, start_id="0-0", count=1
        )
        if not claimed:
            read = self._redis.xreadgroup(self.group, consumer, {self.stream: ">"}, count=1, block=block_ms)
            claimed = read[0][1] if read else []
        for message_id, fields in claimed:
            if fields:  # a deleted entry's id can come back without fields
                decoded = {text_from_redis(k): text_from_redis(v) for k, v in fields.items()}
                return Message(text_from_redis(message_id), decoded)
            self._redis.xack(self.stream, self.group, message_id)
        return None

    def keep_alive(self, consumer: str, message_ids: list[str]) -> None:
        """Reset the idle time of our running messages (the heartbeat; they move to `consumer`)."""
        if message_ids:
            self._redis.xclaim(self.stream, self.group, consumer, 0, message_ids, justid=True)

    def ack(self, message_id: str) -> None:
        pipe = self._redis.pipeline()
        pipe.xack(self.stream, self.group, message_id)
        pipe.xdel(self.stream, message_id)
        pipe.execute()

    def consumers(self) -> list[dict[str, Any]]:
        """XINFO CONSUMERS, with names as text: name, pending, idle (ms)."""
        return [{**c, "name": text_from_redis(c["name"])} for c in self._redis.xinfo_consumers(self.stream, self.group)]

    def reap_idle_consumers(self, idle_s: float, keep_prefix: str = "") -> list[str]:
        """Remove consumers that own nothing pending and were idle for idle_s (a dead replica's, once its
        entries were claimed); consumers whose name starts with `keep_prefix` (this replica's) stay."""
        removed = []
        for consumer in self.consumers():
            name = consumer["name"]
            if keep_prefix and name.startswith(keep_prefix):
                continue
            if int(consumer.get("pending", 0)) or int(consumer.get("idle", 0)) < idle_s * 1000:
                continue
            if int(self._delete_if_idle(keys=[self.stream], args=[self.group, name])) >= 0:
                removed.append(name)
        if removed:
            log.info("removed %d idle consumers from %s: %s", len(removed), self.stream, ",".join(removed))
        return removed


def text_from_redis(value: Any) -> str:
    """A reply value as text (redis-py returns bytes unless the client decodes)."""
    return value.decode() if isinstance(value, bytes) else str(value)
