from __future__ import annotations

import threading

from bot.safety.access import AccessPolicy
from tests.fakes.clock import FakeClock


def test_channel_outside_the_allowlist_is_refused_with_a_reason() -> None:
    policy = AccessPolicy(["C-INC", " C-OPS "])
    assert policy.admit("U1", "C-OPS") is None
    reason = policy.admit("U1", "C-RANDOM")
    assert reason is not None and "not enabled in this channel" in reason


def test_empty_allowlist_allows_every_channel_and_no_channel_is_not_a_conversation() -> None:
    assert AccessPolicy().admit("U1", "C-ANY") is None
    assert AccessPolicy(["C-INC"]).admit("api:token", "") is None


def test_rate_limit_is_a_per_user_sliding_window() -> None:
    clock = FakeClock()
    policy = AccessPolicy(rate_limit_per_minute=2, clock=clock)
    assert policy.admit("U1", "C") is None
    clock.now += 30
    assert policy.admit("U1", "C") is None
    reason = policy.admit("U1", "C")
    assert reason is not None and reason.startswith("rate limit") and "30 s" in reason
    assert policy.admit("U2", "C") is None  # another user has their own window
    clock.now += 30.5  # the first run left the window
    assert policy.admit("U1", "C") is None
    assert policy.admit("U1", "C") is not None


def test_a_refused_channel_costs_no_rate_slot() -> None:
    policy = AccessPolicy(["C-OK"], rate_limit_per_minute=1, clock=FakeClock())
    assert policy.admit("U1", "C-NO") is not None
    assert policy.admit("U1", "C-OK") is None


def test_concurrent_admits_never_exceed_the_limit() -> None:
    policy = AccessPolicy(rate_limit_per_minute=5, clock=FakeClock())
    results: list[str | None] = []
    lock = threading.Lock()

    def hammer() -> None:
        for _ in range(10):
            outcome = policy.admit("U1", "C")
            with lock:
                results.append(outcome)

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count(None) == 5
