"""Time zones as teams and questions name them, and UTC stamps shown in the team's zone with UTC beside them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.playbook.zones import is_utc, local_with_utc, localise_text, zone_from_name

DAY = datetime(2026, 11, 28, 16, 0, tzinfo=UTC)  # winter: Berlin is UTC+1
SUMMER = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)  # summer: Berlin is UTC+2


@pytest.mark.parametrize(
    ("name", "hours_east"),
    [
        ("UTC", 0),
        ("z", 0),
        ("CET", 1),
        ("CEST", 2),
        ("PST", -8),
        ("PDT", -7),
        ("UTC+8", 8),
        ("GMT-05:00", -5),
        ("+0530", 5.5),
        ("北京时间", 8),
        ("europe/berlin", 1),
        ("America/Los_Angeles", -8),
    ],
)
def test_zone_names_people_write(name: str, hours_east: float) -> None:
    assert zone_from_name(name).utcoffset(datetime(2026, 1, 15)) == timedelta(hours=hours_east)


def test_an_abbreviation_is_its_fixed_offset_all_year_and_cst_follows_the_team() -> None:
    assert zone_from_name("CET").utcoffset(datetime(2026, 7, 1)) == timedelta(hours=1)
    assert zone_from_name("Europe/Berlin").utcoffset(datetime(2026, 7, 1)) == timedelta(hours=2)
    assert zone_from_name("CST").utcoffset(None) == timedelta(hours=-6)
    assert zone_from_name("CST", zone_from_name("Asia/Shanghai")).utcoffset(None) == timedelta(hours=8)


def test_a_name_that_is_no_zone_says_what_it_may_have_meant() -> None:
    with pytest.raises(ValueError, match=r"'Europ/Berlin' is not a time zone \(did you mean 'Europe/Berlin'\?\)"):
        zone_from_name("Europ/Berlin")


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("deployed at 15:02 UTC.", "deployed at 16:02 CET (15:02 UTC)."),
        ("at 2026-11-28T15:02:00Z", "at 2026-11-28 16:02 CET (15:02 UTC)"),
        ("window 2026-11-28 13:00 → 17:00 UTC", "window 2026-11-28 14:00 → 18:00 CET (13:00 → 17:00 UTC)"),
        ("back to about 11-27 23:30 UTC", "back to about 11-28 00:30 CET (23:30 UTC)"),
        ("p99 1,180 ms at 15:05", "p99 1,180 ms at 15:05"),  # no zone said: not a UTC stamp to convert
        ("v2.8.1 rolled out", "v2.8.1 rolled out"),
    ],
)
def test_utc_stamps_in_an_answer_are_shown_in_the_team_zone_with_utc_beside(text: str, shown: str) -> None:
    assert localise_text(text, zone_from_name("Europe/Berlin"), DAY) == shown


def test_localising_twice_changes_nothing_more_and_a_utc_team_sees_utc() -> None:
    berlin = zone_from_name("Europe/Berlin")
    once = localise_text("You said 06:19 CET (05:19 UTC); the change starts at 07:30 UTC.", berlin, DAY)
    assert once == "You said 06:19 CET (05:19 UTC); the change starts at 08:30 CET (07:30 UTC)."
    assert localise_text(once, berlin, DAY) == once
    assert localise_text("at 15:02 UTC", UTC, DAY) == "at 15:02 UTC" and is_utc(zone_from_name("GMT"))


def test_summer_time_follows_the_team_zone_on_the_day_of_the_stamp() -> None:
    berlin = zone_from_name("Europe/Berlin")
    assert localise_text("at 2026-07-01 10:00 UTC", berlin, DAY) == "at 2026-07-01 12:00 CEST (10:00 UTC)"
    assert local_with_utc(SUMMER, zone_from_name("Asia/Shanghai")) == "20:00 CST (12:00 UTC)"
