"""The replicas' worker register on a real redis-server, and the one worker pool both job streams run on."""

from __future__ import annotations

import threading

import redis

from bot.durable.capacity import Capacity, Workers
from bot.durable.group import ConsumerGroup, Message
from bot.durable.pool import StreamWorkers
from tests.slack.conftest import wait_until

STREAM = "opsbot:test-jobs"


def _capacity(redis_url: str, replica: str, ttl_s: float = 60.0) -> Capacity:
    return Capacity(redis.Redis.from_url(redis_url), STREAM, replica, ttl_s=ttl_s)


def test_the_register_sums_every_live_replicas_workers_and_free_ones(redis_url: str) -> None:
    one, other = _capacity(redis_url, "host-1"), _capacity(redis_url, "host-2")
    one.register(workers=4, busy=4)
    other.register(workers=2, busy=0)
    assert one.workers() == Workers(total=6, idle=2)
    other.leave()  # a replica that stops leaves at once
    assert one.workers() == Workers(total=4, idle=0)


def test_a_replica_that_died_no_longer_counts_and_its_entry_is_swept(redis_url: str) -> None:
    _capacity(redis_url, "dead-1", ttl_s=-1).register(workers=8, busy=0)  # its entry has expired already
    live = _capacity(redis_url, "host-2")
    live.register(workers=2, busy=1)
    assert live.workers() == Workers(total=2, idle=1)
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    assert client.hkeys(f"{STREAM}:capacity") == ["host-2"]


def test_the_pool_runs_each_message_once_acks_it_and_registers_its_busy_workers(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    group = ConsumerGroup(client, STREAM, claim_idle_s=0.3)
    gate, seen = threading.Event(), []

    def handle(message: Message) -> None:
        seen.append(message.fields["n"])
        gate.wait(10)

    capacity = Capacity(client, STREAM, "host-1", ttl_s=5)
    pool = StreamWorkers(group, "host-1", name="test", workers=2, handle=handle, capacity=capacity)
    pool.start()
    try:
        for n in range(3):
            group.add({"n": str(n)})
        wait_until(lambda: pool.active == 2, what="both workers busy")
        # the register hears of a taken job one Redis round trip after the worker took it
        wait_until(lambda: capacity.workers() == Workers(total=2, idle=0), what="both registered busy")
        assert group.waiting() == 1
        gate.set()
        wait_until(lambda: sorted(seen) == ["0", "1", "2"] and client.xlen(STREAM) == 0, what="all three acked")
        wait_until(lambda: capacity.workers() == Workers(total=2, idle=2), what="the workers free again")
    finally:
        gate.set()
        left = pool.close(2.0)
    assert left == [] and capacity.workers() == Workers(0, 0)  # a closed pool leaves the register


def test_a_message_whose_handler_raised_stays_pending_and_is_run_again(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    group = ConsumerGroup(client, STREAM, claim_idle_s=0.2)
    calls: list[str] = []

    def handle(message: Message) -> None:
        calls.append(message.message_id)
        if len(calls) == 1:
            raise ConnectionError("redis went away for a moment")

    pool = StreamWorkers(group, "host-1", name="test", workers=1, handle=handle)
    pool.start()
    try:
        group.add({"n": "0"})
        wait_until(lambda: len(calls) == 2 and client.xlen(STREAM) == 0, timeout_s=20, what="the second run")
    finally:
        pool.close(1.0)
    assert calls[0] == calls[1]  # the same message, claimed again after its idle time
