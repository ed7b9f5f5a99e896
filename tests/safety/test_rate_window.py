"""The per-user rate limit on a real redis-server: one budget for every replica."""

from __future__ import annotations

import threading

import redis

from bot.safety.access import AccessPolicy
from bot.safety.ratelimit import RedisWindow


def test_replicas_share_one_rate_budget_per_user(redis_url: str) -> None:
    one = AccessPolicy(rate_limit_per_minute=2, window=RedisWindow(redis.Redis.from_url(redis_url)))
    other = AccessPolicy(rate_limit_per_minute=2, window=RedisWindow(redis.Redis.from_url(redis_url)))
    assert one.admit("U1", "C") is None
    assert other.admit("U1", "C") is None
    reason = one.admit("U1", "C")
    assert reason is not None and reason.startswith("rate limit") and "Try again in" in reason
    wait_s = int(reason.rsplit("in ", 1)[1].split(" ")[0])
    assert 1 <= wait_s <= 60
    assert other.admit("U2", "C") is None  # another user has a window of their own


def test_a_refused_attempt_takes_no_slot(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    policy = AccessPolicy(rate_limit_per_minute=1, window=RedisWindow(client))
    assert policy.admit("U1", "C") is None
    for _ in range(3):
        assert policy.admit("U1", "C") is not None
    assert client.zcard("opsbot:rate:U1") == 1
    assert 0 < client.pttl("opsbot:rate:U1") <= 60_000  # the window's key expires with it


def test_concurrent_admits_on_two_replicas_never_exceed_the_limit(redis_url: str) -> None:
    policies = [
        AccessPolicy(rate_limit_per_minute=5, window=RedisWindow(redis.Redis.from_url(redis_url))) for _ in range(2)
    ]
    results: list[str | None] = []
    lock = threading.Lock()

    def admit(n: int) -> None:
        outcome = policies[n % 2].admit("U1", "C")
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=admit, args=(n,)) for n in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results.count(None) == 5
