"""A time in a question is read in the zone it names, else in the team's: "since 06:19 CET" is 05:19 UTC, and the
playbook never says "You said 06:19; the change starts at 05:19 UTC" to a user who was right."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot import wiring
from bot.engine.types import Question
from bot.playbook.moments import moment_from_question
from bot.playbook.onset import time_note
from bot.playbook.zones import zone_from_name
from tests.eval.harness import sandbox_settings

NOW = datetime(2026, 11, 29, 16, 0, 30, tzinfo=UTC)  # a Sunday afternoon, UTC; Berlin is UTC+1


def utc(day: int, hour: int, minute: int) -> datetime:
    return datetime(2026, 11, day, hour, minute, tzinfo=UTC)


@pytest.mark.parametrize(
    ("question", "moment"),
    [
        ("p99 jumped since 06:19 CET", utc(29, 5, 19)),
        ("errors since 06:19 cest?", utc(29, 6, 19)),  # lower case: not read as a zone, so the team's (UTC)
        ("errors since 06:19 CEST", utc(29, 4, 19)),
        ("slow since 3pm PST", utc(28, 23, 0)),  # 15:00 PST today is still to come at 08:00 PST: yesterday's
        ("since 15:05 UTC+8", utc(29, 7, 5)),
        ("since 06:19Z", utc(29, 6, 19)),
        ("since 15:05 (UTC)", utc(29, 15, 5)),
        ("since 15:05 Europe/Berlin", utc(29, 14, 5)),
        ("北京时间15:05开始报错", utc(29, 7, 5)),
        ("北京時間下午3點開始", utc(29, 7, 0)),
        ("seit 15:05 ist order langsam", utc(29, 15, 5)),  # German "ist", not India's IST
    ],
)
def test_a_zone_the_question_names_is_honoured(question: str, moment: datetime) -> None:
    assert moment_from_question(question, NOW) == moment


def test_a_time_without_a_zone_is_the_teams_and_so_are_its_days() -> None:
    berlin = zone_from_name("Europe/Berlin")
    late = datetime(2026, 11, 29, 23, 30, tzinfo=UTC)  # already the 30th in Berlin
    assert moment_from_question("since 06:19", NOW, berlin) == utc(29, 5, 19)
    assert moment_from_question("yesterday 23:45", late, berlin) == utc(29, 22, 45)
    assert moment_from_question("this morning", NOW, berlin) == utc(29, 8, 0)
    assert moment_from_question("since 06:19 PST", NOW, berlin) == utc(29, 14, 19)  # the question's zone wins


def test_the_note_about_the_users_time_uses_the_zone_they_meant() -> None:
    said = moment_from_question("since 06:19 CET", NOW)
    assert time_note(said, ("p99_latency", utc(29, 5, 19))) == ""  # the user was right
    assert time_note(said, ("p99_latency", utc(29, 7, 30))) == (
        "You said 06:19 CET (05:19 UTC); the p99 latency change starts at 07:30 UTC."
    )
    assert time_note(moment_from_question("since 06:19", NOW), ("p99_latency", utc(29, 7, 30))) == (
        "You said 06:19; the p99 latency change starts at 07:30 UTC."
    )


def test_the_playbook_reads_a_cet_time_right_and_answers_in_the_teams_zone(sandbox: Any, tmp_path: Path) -> None:
    """The sandbox's incident, asked about in CET by a team in Berlin: no false correction, times in Berlin's zone."""
    at_cet = sandbox.incident_at.astimezone(zone_from_name("CET"))
    day = "yesterday" if at_cet.date() < sandbox.now.astimezone(zone_from_name("CET")).date() else "today"
    question = Question(f"why did order's p99 latency jump {day} around {at_cet:%H:%M} CET?")
    settings = sandbox_settings(sandbox, tmp_path, timezone="Europe/Berlin")
    tools = wiring.build_toolbox(settings, clock=lambda: sandbox.now)
    trace = wiring.build_responder(settings, tools=tools, clock=lambda: sandbox.now)(question, None)

    assert trace.protocol == "playbook" and "You said" not in trace.answer, trace.answer
    local = (sandbox.incident_at + timedelta(minutes=2)).astimezone(zone_from_name("Europe/Berlin"))
    assert f" {local.tzname()} (" in trace.answer and " UTC)" in trace.answer, trace.answer
