"""Dedupe and thread memory on a real redis-server, shared by two 'replicas' (two clients, two objects)."""

from __future__ import annotations

import threading

import redis

from bot.engine.types import StopReason, Totals, Trace
from bot.slack.jobs.redisstate import RedisDedupe, RedisThreadMemory
from tests import toolresults
from tests.toolresults import series


def a_trace(n: int) -> Trace:
    step = toolresults.step(1, "query_metrics", series())  # change: 15:05 212 ms -> 1,180 ms (x5.6)
    return Trace(
        trace_id=str(n),
        question=f"question {n}",
        protocol="native",
        steps=(step,),
        answer="pool size",
        complete=True,
        stop_reason=StopReason.FINISH,
        totals=Totals(),
    )


def test_a_retry_seen_by_another_replica_is_a_duplicate(redis_url: str) -> None:
    one = RedisDedupe(redis.Redis.from_url(url := redis_url), ttl_s=60)
    other = RedisDedupe(redis.Redis.from_url(url), ttl_s=60)
    assert one.ttl_s >= 600  # clamped like the in-memory dedupe: Slack retries for about 5 minutes
    assert one.first_seen(["event:Ev1", "msg:abc"])
    assert not other.first_seen(["event:Ev1"])  # the retry, on the other replica
    assert not other.first_seen(["event:Ev2", "msg:abc"])  # same message, another envelope
    assert other.first_seen(["event:Ev3", "msg:def"])
    ttl = redis.Redis.from_url(url).ttl("opsbot:dedupe:event:Ev1")
    assert 590 < ttl <= 600


def test_concurrent_deliveries_on_two_replicas_give_exactly_one_first(redis_url: str) -> None:
    replicas = [RedisDedupe(redis.Redis.from_url(redis_url)) for _ in range(2)]
    firsts: list[bool] = []
    lock = threading.Lock()

    def deliver(n: int) -> None:
        seen = replicas[n % 2].first_seen(["event:EvSame", f"envelope:{n}"])
        with lock:
            firsts.append(seen)

    threads = [threading.Thread(target=deliver, args=(n,)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert firsts.count(True) == 1


def test_a_follow_up_reaches_the_thread_memory_on_any_replica(redis_url: str) -> None:
    one = RedisThreadMemory(redis.Redis.from_url(redis_url), max_turns=2)
    other = RedisThreadMemory(redis.Redis.from_url(redis_url), max_turns=2)
    for n in range(3):
        (one if n % 2 else other).remember("C1", "1.0", a_trace(n))
    turns = one.recall("C1", "1.0")
    assert [t.split(" → ")[0] for t in turns] == ["Q: question 1", "Q: question 2"]
    assert all("change: 15:05" in t for t in turns)
    assert other.recall("C1", "1.0") == turns
    assert other.recall("C9", "9.9") == ()


def test_two_deployments_with_other_prefixes_do_not_share_state(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    assert RedisDedupe(client, prefix="prod").first_seen(["event:Ev1"])
    assert RedisDedupe(client, prefix="staging").first_seen(["event:Ev1"])
