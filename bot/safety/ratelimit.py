"""Per-user sliding windows of diagnosis runs: in process memory, or in Redis so replicas share one budget.

Why a small Lua script over a sorted set rather than the `limits` library: it keeps exactly the in-memory
semantics (a refused attempt takes no slot; the refusal says how long to wait), it is one round trip with the
Redis server's own clock (replicas' clocks may differ), and it costs no dependency.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

WINDOW_S = 60.0


class RateWindow(Protocol):
    def take(self, user: str, limit: int) -> float | None:
        """Take one slot of `user`'s window: None when taken, else the seconds until one frees up."""
        ...


class MemoryWindow:
    """One deque of run times per user, in this process. Thread-safe."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._recent: dict[str, deque[float]] = {}

    def take(self, user: str, limit: int) -> float | None:
        now = self._clock()
        with self._lock:
            recent = self._recent.setdefault(user, deque())
            while recent and now - recent[0] >= WINDOW_S:
                recent.popleft()
            if len(recent) >= limit:
                return WINDOW_S - (now - recent[0])
            recent.append(now)
            self._forget_idle(now)
            return None

    def _forget_idle(self, now: float) -> None:
        # Keep memory bounded by active users: drop users whose whole window has expired.
        if len(self._recent) > 1_000:
            idle = [u for u, q in self._recent.items() if not q or now - q[-1] >= WINDOW_S]
            for user in idle:
                del self._recent[user]


# KEYS[1] the user's zset; ARGV: limit, window_ms, a unique member. Returns 0 when taken, else ms to wait.
_TAKE = """
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window_ms = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_ms - window_ms)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return math.max(1, window_ms - (now_ms - tonumber(oldest[2])))
end
redis.call('ZADD', KEYS[1], now_ms, ARGV[3])
redis.call('PEXPIRE', KEYS[1], window_ms)
return 0
"""


class RedisWindow:
    """The same window in a Redis sorted set per user, checked and taken atomically by one script."""

    def __init__(self, client: Any, *, prefix: str = "opsbot") -> None:
        self._prefix = f"{prefix}:rate:"
        self._script = client.register_script(_TAKE)

    def take(self, user: str, limit: int) -> float | None:
        wait_ms = int(self._script(keys=[self._prefix + user], args=[limit, int(WINDOW_S * 1000), uuid.uuid4().hex]))
        return None if wait_ms == 0 else wait_ms / 1000
