"""The consumer group on a real redis-server: dead replicas' consumers are removed, never their pending work."""

from __future__ import annotations

import time

import redis

from bot.durable.group import ConsumerGroup


def _group(redis_url: str, claim_idle_s: float = 0.2) -> ConsumerGroup:
    return ConsumerGroup(redis.Redis.from_url(redis_url), "opsbot:test-jobs", claim_idle_s=claim_idle_s)


def _names(group: ConsumerGroup) -> set[str]:
    return {c["name"] for c in group.consumers()}


def test_consumers_of_restarted_replicas_are_removed_once_their_pending_jobs_were_claimed(redis_url: str) -> None:
    group = _group(redis_url)
    for n in range(3):
        group.add({"job_id": str(n)})
    # Three replicas that came and went: each read a job and died without acking it.
    dead = [group.next_message(f"host-{pid}-0", block_ms=10) for pid in (101, 102, 103)]
    assert all(m is not None for m in dead) and _names(group) == {"host-101-0", "host-102-0", "host-103-0"}
    time.sleep(0.3)  # past claim_idle_s: the jobs of the dead consumers may be claimed
    assert group.reap_idle_consumers(0.2) == []  # each still owns a pending job: none may go yet
    survivor = [group.next_message("host-200-0", block_ms=10) for _ in range(3)]
    assert sorted(m.fields["job_id"] for m in survivor if m) == ["0", "1", "2"]
    time.sleep(0.3)
    removed = group.reap_idle_consumers(0.2, keep_prefix="host-200")
    assert sorted(removed) == ["host-101-0", "host-102-0", "host-103-0"]
    assert _names(group) == {"host-200-0"}
    pending = group.consumers()[0]["pending"]
    assert pending == 3  # the claimed jobs are still pending with the survivor, not lost with the dead


def test_a_consumer_that_still_owns_a_pending_job_is_never_removed(redis_url: str) -> None:
    group = _group(redis_url)
    group.add({"job_id": "a"})
    assert group.next_message("host-1-0", block_ms=10) is not None
    time.sleep(0.3)
    assert group.reap_idle_consumers(0.0) == []
    assert _names(group) == {"host-1-0"}
    assert int(group.consumers()[0]["pending"]) == 1


def test_a_removed_idle_consumer_of_a_live_replica_is_recreated_by_its_next_read(redis_url: str) -> None:
    group = _group(redis_url)
    group.add({"job_id": "a"})
    done = group.next_message("host-1-0", block_ms=10)
    assert done is not None
    group.ack(done.message_id)  # owns nothing any more
    time.sleep(0.3)
    assert group.reap_idle_consumers(0.2) == ["host-1-0"]
    group.add({"job_id": "b"})
    message = group.next_message("host-1-0", block_ms=10)
    assert message is not None and message.fields == {"job_id": "b"}
    assert _names(group) == {"host-1-0"}
