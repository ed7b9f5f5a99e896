"""Time windows as the model writes them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tools.base import ToolError
from tools.timerange import duration_from_text, rough_duration, window_from_args

NOW = datetime(2026, 11, 28, 16, 0, tzinfo=UTC)


@pytest.mark.parametrize(("text", "minutes"), [("30m", 30), ("1h", 60), ("6H", 360), ("7d", 10_080), (" 2 h ", 120)])
def test_durations(text, minutes):
    assert duration_from_text(text) == timedelta(minutes=minutes)


def test_range_ends_now_by_default_and_at_end_when_given():
    assert window_from_args("6h", "", "", NOW).start == NOW - timedelta(hours=6)
    window = window_from_args("1h", "", "2026-11-28T15:00Z", NOW)
    assert (window.start, window.end) == (NOW - timedelta(hours=2), NOW - timedelta(hours=1))


def test_iso_interval_and_offsets_become_utc():
    window = window_from_args("2026-11-28T14:00+01:00/2026-11-28T15:30Z", "", "", NOW)
    assert window.start == datetime(2026, 11, 28, 13, 0, tzinfo=UTC) and window.end.hour == 15


def test_explicit_start_wins_over_range_and_now_minus_works():
    window = window_from_args("24h", "now-90m", "", NOW)
    assert window.start == NOW - timedelta(minutes=90) and window.end == NOW


@pytest.mark.parametrize(
    ("range_", "start", "end", "message"),
    [
        ("yesterday", "", "", "invalid range"),
        ("5y", "", "", "invalid range"),
        ("1h", "15:00 yesterday", "", "invalid time"),
        ("1h", "2026-11-28T17:00Z", "", "window is empty"),
        ("365d", "", "", "longer than 90 days"),
    ],
)
def test_bad_windows_explain_the_legal_forms(range_, start, end, message):
    with pytest.raises(ToolError, match=message):
        window_from_args(range_, start, end, NOW)


def test_described_lengths_are_rounded_as_people_say_them():
    assert rough_duration(6 * 3600 + 60) == "6h"
    assert rough_duration(90 * 60) == "90m"
    assert rough_duration(86_400) == "24h"
