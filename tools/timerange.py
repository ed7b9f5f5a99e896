"""Time windows as the model writes them: `range="6h"`, an ISO interval `start/end`, or explicit start/end.

Every tool reads its window through `window_from_args`, so the rules and error messages are the same
everywhere. Naive timestamps are taken as UTC, because that is what the observations print.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from tools.base import ToolError

Clock = Callable[[], datetime]

_DURATION = re.compile(r"^\s*(\d{1,5})\s*([smhdw])\s*$", re.IGNORECASE)
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
MAX_WINDOW = timedelta(days=90)
MAX_CLOCK_SKEW = timedelta(minutes=5)  # a window may end this far past our now (the backend's clock may run ahead)
MAX_FUTURE_CLAMP = timedelta(days=1)  # an end later than now (but within this) is cut to now; later ones are refused
CLOCK_PATTERN = r"(?:\d\d-\d\d )?\d\d:\d\d(?::\d\d)?"  # a time as TimeWindow.clock_format prints it, seconds optional
_EPOCH_SECONDS_MAX = 10**11  # epoch seconds reach this in the year 5138; larger numbers are ms, µs or ns
RANGE_HELP = 'use "30m", "1h", "6h", "24h", "7d" or an ISO interval like "2026-11-28T14:00Z/2026-11-28T16:00Z"'


def utc_now() -> datetime:
    """The current time in UTC (the default clock of every tool)."""
    return datetime.now(UTC)


@dataclass(frozen=True)
class TimeWindow:
    start: datetime
    end: datetime

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds()

    @property
    def clock_format(self) -> str:
        """strftime for times inside the window: the date is added when the window crosses midnight (a log line
        adds `:%S`). CLOCK_PATTERN reads back every form this prints."""
        return "%H:%M" if self.start.date() == self.end.date() else "%m-%d %H:%M"

    def describe(self) -> str:
        """`2026-11-28 14:00 → 16:00 UTC (2h)`: short, unambiguous, always UTC."""
        same_day = self.start.date() == self.end.date()
        end = self.end.strftime("%H:%M" if same_day else "%Y-%m-%d %H:%M")
        return f"{self.start:%Y-%m-%d %H:%M} → {end} UTC ({rough_duration(self.seconds)})"


def duration_from_text(text: str) -> timedelta:
    """`90m`, `6h`, `7d` -> timedelta; ToolError naming the legal forms otherwise."""
    match = _DURATION.match(text)
    if not match or int(match.group(1)) == 0:
        raise ToolError(f"invalid range {text!r}; {RANGE_HELP}.")
    return timedelta(seconds=int(match.group(1)) * _UNIT_S[match.group(2).lower()])


def duration_to_text(seconds: float) -> str:
    """The largest whole unit: 7200 -> `2h`, 5400 -> `90m`."""
    for unit in ("w", "d", "h", "m"):
        if seconds >= _UNIT_S[unit] and seconds % _UNIT_S[unit] == 0:
            return f"{int(seconds // _UNIT_S[unit])}{unit}"
    return f"{int(seconds)}s"


def rough_duration(seconds: float) -> str:
    """A window's length as people say it: 21660 s -> `6h`, 90 min -> `90m`, 7 days and 15 min -> `7d`."""
    if seconds >= 2 * 86_400:
        return f"{round(seconds / 86_400, 1):g}d"
    if seconds >= 2 * 3600:
        return f"{round(seconds / 3600, 1):g}h"
    return f"{round(seconds / 60):g}m"


def instant_from_text(text: str, now: datetime) -> datetime:
    """ISO 8601 (`2026-11-28T14:00Z`, offsets allowed) or `now`/`now-2h` -> an aware UTC datetime."""
    value = text.strip()
    if value.lower() == "now":
        return now
    if value.lower().startswith("now-"):
        return now - duration_from_text(value[4:])
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ToolError(f"invalid time {text!r}; use ISO 8601 UTC like 2026-11-28T14:00Z, or now-2h.") from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def moment_from_value(value: object) -> datetime:
    """A document's timestamp as an aware UTC datetime: ISO 8601 (naive is UTC), or epoch s, ms, µs or ns."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
        while abs(seconds) > _EPOCH_SECONDS_MAX:  # ms, µs and ns since the epoch, by their magnitude
            seconds /= 1000
        return datetime.fromtimestamp(seconds, tz=UTC)
    text = str(value).strip()
    if text.isdigit():
        return moment_from_value(int(text))
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"not a timestamp: {text[:40]!r}") from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def window_from_args(range_: str, start: str, end: str, now: datetime) -> TimeWindow:
    """The window a tool call asks for.

    `range` may be a duration ending at `end` (or now), or an ISO interval `start/end`. An explicit
    `start` wins over the duration; `end` defaults to now. An end in the future is cut to now when it is less
    than a day ahead (a window centred on a recent incident), and refused beyond that.
    """
    if "/" in range_:
        first, _, second = range_.partition("/")
        start, end = start or first, end or second
    end_at = instant_from_text(end, now) if end.strip() else now
    start_at = instant_from_text(start, now) if start.strip() else end_at - duration_from_text(range_ or "1h")
    if end_at > now + MAX_FUTURE_CLAMP:
        raise ToolError(
            f"the window ends at {iso_z(end_at)}, in the future (now is {iso_z(now)}); "
            "no data exists yet, so end it at now or earlier (leave end empty for now)."
        )
    if end_at > now + MAX_CLOCK_SKEW:  # a window centred on a recent incident: no backend sees the future part
        end_at = now
    if start_at >= end_at:
        raise ToolError(f"the window is empty: start {iso_z(start_at)} is not before end {iso_z(end_at)}.")
    if end_at - start_at > MAX_WINDOW:
        raise ToolError(f"the window is longer than {MAX_WINDOW.days} days; ask for a shorter range.")
    return TimeWindow(start_at, end_at)


def iso_z(moment: datetime) -> str:
    """`2026-11-28T15:05:00Z`: the one timestamp form the tools print and send to backends."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
