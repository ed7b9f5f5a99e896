"""One Web API budget per method, shared by every run; a 429 pauses its method for Retry-After."""

from __future__ import annotations

from slack_sdk.errors import SlackApiError

from bot.slack.delivery.budget import CallBudget, retry_after_s, watch_rate_limits
from bot.slack.intake.listeners import build_web_client
from tests.fakes.clock import FakeClock
from tests.fakes.slack import BOT_TOKEN, FakeSlackAPI


def test_a_method_gets_its_burst_then_its_rate() -> None:
    clock = FakeClock()
    budget = CallBudget({"chat.update": 60}, clock=clock)
    assert [budget.try_take("chat.update") for _ in range(11)] == [True] * 10 + [False]  # ~10 s of calls of burst
    clock.now += 1.0
    assert budget.try_take("chat.update") and not budget.try_take("chat.update")  # then 1 per second
    assert all(budget.try_take("chat.postMessage") for _ in range(100))  # a method it does not know: no limit


def test_a_per_channel_bucket_limits_one_channel_only() -> None:
    budget = CallBudget({}, per_channel_per_minute={"chat.postMessage": 60}, clock=FakeClock())
    assert sum(budget.try_take("chat.postMessage", "C1") for _ in range(30)) == 10
    assert budget.try_take("chat.postMessage", "C2")


def test_a_429_pauses_the_method_for_retry_after(fake_slack: FakeSlackAPI) -> None:
    clock = FakeClock()
    budget = CallBudget({"chat.update": 600}, clock=clock)
    client = watch_rate_limits(build_web_client(BOT_TOKEN, fake_slack.base_url), budget)
    fake_slack.fail("chat.update", error="ratelimited", status=429, retry_after=1)
    client.chat_update(channel="C1", ts="1.0", text="x")  # 429, then the client's own retry after 1 s succeeds
    assert [c.status for c in fake_slack.calls if c.method == "chat.update"] == [429, 200]
    assert not budget.try_take("chat.update")  # every run now holds back
    clock.now += 1.5
    assert budget.try_take("chat.update")


def test_retry_after_reads_slack_sdk_header_lists() -> None:
    assert retry_after_s({"Retry-After": ["7"]}) == 7.0
    assert retry_after_s({"retry-after": "3"}) == 3.0
    assert retry_after_s({}) == 1.0


def test_the_stand_in_answers_429_once_a_method_is_over_its_tier(fake_slack: FakeSlackAPI) -> None:
    fake_slack.enforce_limits({"reactions.add": 2})
    client = build_web_client(BOT_TOKEN, fake_slack.base_url, rate_limit_retries=0)
    for _ in range(2):
        client.reactions_add(channel="C1", timestamp="1.0", name="eyes")
    try:
        client.reactions_add(channel="C1", timestamp="1.0", name="eyes")
    except SlackApiError as exc:
        assert exc.response.status_code == 429
        assert int(exc.response.headers["Retry-After"][0]) > 0
    else:
        raise AssertionError("the third call should have been rate limited")
