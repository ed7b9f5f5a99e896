"""Dedupe and thread memory on Redis, so every replica sees the same: a Slack retry that lands on another
replica is still a duplicate, and a follow-up in a thread reaches its earlier turns wherever it lands.

Both implement the Protocols in bot/slack/jobs/state.py. The client is a ready `redis.Redis` (wiring builds it);
a key prefix keeps two deployments apart in one Redis.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from bot.engine.types import Trace
from bot.slack.jobs.state import MIN_DEDUPE_TTL_S, trace_to_memory

log = logging.getLogger(__name__)

# Every key or none: a retry carries some of the first delivery's keys, so "all new" must be checked atomically.
_FIRST_SEEN = """
for i, key in ipairs(KEYS) do
  if redis.call('EXISTS', key) == 1 then return 0 end
end
for i, key in ipairs(KEYS) do
  redis.call('SET', key, '1', 'EX', ARGV[1])
end
return 1
"""


class RedisDedupe:
    """first_seen() over SET EX keys, checked and set in one Lua script (atomic across replicas)."""

    def __init__(self, client: Any, *, prefix: str = "opsbot", ttl_s: float = 900.0) -> None:
        self._client = client
        self._prefix = f"{prefix}:dedupe:"
        self.ttl_s = max(ttl_s, MIN_DEDUPE_TTL_S)
        self._script = client.register_script(_FIRST_SEEN)

    def first_seen(self, keys: Sequence[str]) -> bool:
        if not keys:
            return True
        return bool(self._script(keys=[self._prefix + k for k in keys], args=[int(self.ttl_s)]))


class RedisThreadMemory:
    """The last `max_turns` turns of a thread in a capped Redis list that expires when the thread goes quiet."""

    def __init__(self, client: Any, *, prefix: str = "opsbot", max_turns: int = 4, ttl_s: int = 7 * 86_400) -> None:
        self._client = client
        self._prefix = f"{prefix}:thread:"
        self.max_turns = max_turns
        self.ttl_s = ttl_s

    def recall(self, channel: str, thread_ts: str) -> tuple[str, ...]:
        turns = self._client.lrange(self._key(channel, thread_ts), 0, -1)
        return tuple(t.decode() if isinstance(t, bytes) else str(t) for t in turns)

    def remember(self, channel: str, thread_ts: str, trace: Trace) -> None:
        key = self._key(channel, thread_ts)
        pipe = self._client.pipeline()
        pipe.rpush(key, trace_to_memory(trace))
        pipe.ltrim(key, -self.max_turns, -1)
        pipe.expire(key, self.ttl_s)
        pipe.execute()

    def _key(self, channel: str, thread_ts: str) -> str:
        return f"{self._prefix}{channel}:{thread_ts}"
