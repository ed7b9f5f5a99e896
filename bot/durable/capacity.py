"""How many workers the replicas of one stream have, and how many of them are free, shared in Redis.

A queue position computed from one replica's own workers overstates the wait: an idle worker of another replica
takes the job within a second. So each replica registers its worker count and how many of them are busy, under
`<stream>:capacity` (a hash, replica -> "workers busy"), with its expiry in `<stream>:capacity-until` (a sorted
set, replica -> unix time). A replica that stops leaves at once; one that dies drops out when its entry expires
(`ttl_s`, a few heartbeats) and is swept by the next registration.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from bot.durable.group import text_from_redis


@dataclass(frozen=True)
class Workers:
    """The workers of every live replica, and how many of them are free now."""

    total: int
    idle: int


class Capacity:
    """One replica's entry in the register of `stream`; `client` is a ready `redis.Redis`."""

    def __init__(self, client: Any, stream: str, replica: str, *, ttl_s: float) -> None:
        self._redis, self._replica, self._ttl_s = client, replica, ttl_s
        self._hash, self._until = f"{stream}:capacity", f"{stream}:capacity-until"

    def register(self, workers: int, busy: int) -> None:
        now = time.time()
        pipe = self._redis.pipeline()
        pipe.hset(self._hash, self._replica, f"{workers} {busy}")
        pipe.zadd(self._until, {self._replica: now + self._ttl_s})
        pipe.zrangebyscore(self._until, "-inf", now)
        expired = pipe.execute()[-1]
        if expired:  # replicas that died: sweep their entries
            pipe = self._redis.pipeline()
            pipe.hdel(self._hash, *expired)
            pipe.zrem(self._until, *expired)
            pipe.execute()

    def leave(self) -> None:
        pipe = self._redis.pipeline()
        pipe.hdel(self._hash, self._replica)
        pipe.zrem(self._until, self._replica)
        pipe.execute()

    def workers(self) -> Workers:
        """The cluster's workers now (entries past their expiry do not count)."""
        live = [text_from_redis(r) for r in self._redis.zrangebyscore(self._until, time.time(), "+inf")]
        if not live:
            return Workers(0, 0)
        total = idle = 0
        for entry in self._redis.hmget(self._hash, live):
            if entry is None:
                continue
            workers, busy = (int(n) for n in text_from_redis(entry).split())
            total, idle = total + workers, idle + max(workers - busy, 0)
        return Workers(total, idle)
