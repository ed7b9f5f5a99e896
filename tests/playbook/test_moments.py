"""Times and services as users write them, in English and Chinese, next to CJK text (table tests)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.playbook.diagnosis import window_from_question
from bot.playbook.evidence import service_from_text
from bot.playbook.moments import moment_from_question

NOW = datetime(2026, 11, 29, 16, 0, 30, tzinfo=UTC)  # a Sunday afternoon, UTC


def at(day: int, hour: int, minute: int) -> datetime:
    return datetime(2026, 11, day, hour, minute, tzinfo=UTC)


@pytest.mark.parametrize(
    ("question", "moment"),
    [
        ("errors started 45 minutes ago", at(29, 15, 15)),
        ("p99 jumped an hour ago", at(29, 15, 0)),
        ("half an hour ago checkout got slow", at(29, 15, 30)),
        ("1.5 hours ago", at(29, 14, 30)),
        ("Why did p99 jump yesterday around 15:05?", at(28, 15, 5)),
        ("yesterday 15:05", at(28, 15, 5)),
        ("since 09:30", at(29, 9, 30)),
        ("since 17:30", at(28, 17, 30)),  # later than now today: yesterday's
        ("today at 3pm", at(29, 15, 0)),
        ("around 9am", at(29, 9, 0)),
        ("this morning the queue backed up", at(29, 9, 0)),
        ("last night", at(28, 20, 0)),
        # "noon" inside "afternoon" once read an afternoon as midday, and the window missed the incident
        ("getting 429s for a few hours yesterday afternoon", at(28, 15, 0)),
        ("since noon", at(29, 12, 0)),
        ("stopped showing up about an hour and a half ago, needed by 18:00", at(29, 14, 30)),
        ("三个小时前开始报错", at(29, 13, 0)),
        ("半小时前", at(29, 15, 30)),
        ("半个小时前支付变慢了", at(29, 15, 30)),
        ("一个半小时前", at(29, 14, 30)),
        ("十分钟前", at(29, 15, 50)),
        ("20分钟前", at(29, 15, 40)),
        ("两个钟头前", at(29, 14, 0)),
        ("昨天15:05 order 的 p99 突然升高", at(28, 15, 5)),
        ("昨天下午3点开始", at(28, 15, 0)),
        ("今天早上", at(29, 9, 0)),
        ("今天早上9点半", at(29, 9, 30)),
        ("下午两点", at(29, 14, 0)),
        ("昨晚", at(28, 20, 0)),
        ("前天中午", at(27, 12, 0)),
        # Traditional Chinese (Hong Kong, Taiwan): found as a new user, "從半小時前" was read as no time at all
        ("profile 從半小時前開始 timeout", at(29, 15, 30)),
        ("兩個鐘頭前", at(29, 14, 0)),
        ("三個小時前開始報錯", at(29, 13, 0)),
        ("昨天下午3點半開始", at(28, 15, 30)),
    ],
)
def test_question_times_in_english_and_chinese(question, moment):
    assert moment_from_question(question, NOW) == moment


@pytest.mark.parametrize(
    "question",
    [
        "is checkout healthy?",
        "order服务有一点慢",  # 一点 is "a little", not one o'clock
        "yesterday something broke",  # a day alone is too vague to centre a window on
        "十分严重",  # "very serious", not ten minutes
    ],
)
def test_questions_without_a_usable_time_give_none(question):
    assert moment_from_question(question, NOW) is None


@pytest.mark.parametrize(
    ("question", "service"),
    [
        ("order服务是不是挂了", "order"),
        ("看下payment的p99", "payment"),
        ("orders-db有慢查询吗", "orders-db"),
        ("payments are failing", "payment"),
        ("Why is the Order service slow?", "order"),
        ("reorder is a word", None),
        ("看下paymentgateway", None),
    ],
)
def test_services_named_next_to_cjk_text(question, service):
    assert service_from_text(question, ["order", "orders-db", "payment"]) == service


def test_a_time_later_today_than_now_never_makes_an_empty_window() -> None:
    early = datetime(2026, 11, 29, 3, 0, tzinfo=UTC)
    window = window_from_question("readings are missing and settlement needs them this afternoon by 18:00", early)
    assert window.range_arg == "24h" and window.end == early


def test_the_symptoms_own_span_outranks_a_time_of_day_said_for_something_else() -> None:
    now = datetime(2026, 11, 29, 23, 30, tzinfo=UTC)
    said = "500s for the past half hour or so. the database ran a migration this morning, could that be it?"
    assert moment_from_question(said, now) == now - timedelta(minutes=30)
    assert moment_from_question("timing out for the last ~25 min", now) == now - timedelta(minutes=25)
    assert moment_from_question("slow over the last hour", now) == now - timedelta(hours=1)
    assert moment_from_question("errors over the last 24 hours", now) is None  # a range to look over, not a start
