"""Time zones as teams and questions name them, and times shown in the team's zone with UTC beside them.

A zone is named by an IANA name (`Europe/Berlin`, any case), UTC/GMT/Z, a fixed offset (`UTC+8`, `GMT-05:00`,
`+0530`), a common abbreviation (CET, CEST, PST, PDT, EST, JST, IST ...) or a Chinese name (北京时间). An
abbreviation is the fixed offset it stands for, in winter and in summer alike: "06:19 CET" is 05:19 UTC even in July.
CST is China's in a team whose zone is UTC+8, else US Central; IST is India's.

The tools and the playbook speak UTC. An answer leaves in the team's zone: `localise_text` turns each UTC stamp in it
("15:02 UTC", "2026-11-28 15:02 UTC", "2026-11-28T15:02:00Z") into "16:02 CET (15:02 UTC)", and leaves a stamp that
already carries its UTC twin alone. A leaf: it imports nothing from the project.
"""

from __future__ import annotations

import difflib
import functools
import re
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

_ABBREVIATIONS = {  # hours east of UTC
    "UTC": 0.0, "GMT": 0.0, "Z": 0.0, "WET": 0.0, "WEST": 1.0, "BST": 1.0, "CET": 1.0, "CEST": 2.0, "MET": 1.0,
    "MEST": 2.0, "EET": 2.0, "EEST": 3.0, "MSK": 3.0, "IST": 5.5, "PKT": 5.0, "ICT": 7.0, "WIB": 7.0, "HKT": 8.0,
    "SGT": 8.0, "AWST": 8.0, "JST": 9.0, "KST": 9.0, "AEST": 10.0, "AEDT": 11.0, "NZST": 12.0, "NZDT": 13.0,
    "HST": -10.0, "AKST": -9.0, "AKDT": -8.0, "PST": -8.0, "PDT": -7.0, "MST": -7.0, "MDT": -6.0, "CDT": -5.0,
    "EST": -5.0, "EDT": -4.0, "BRT": -3.0, "ART": -3.0,
}  # fmt: skip
ABBREVIATIONS = frozenset([*_ABBREVIATIONS, "CST"])
_NAMED = {"北京时间": "Asia/Shanghai", "北京時間": "Asia/Shanghai", "东八区": "UTC+8", "東八區": "UTC+8"}
_OFFSET = re.compile(r"^(?:UTC|GMT)?\s*([+-])\s*(\d{1,2})(?::?(\d{2}))?$", re.IGNORECASE)
CHINA = 8.0
US_CENTRAL = -6.0
# A UTC stamp in text: an optional date, a clock, then Z or " UTC" (a date and time alone are UTC too: the tools'
# ISO form). Already localised stamps ("16:02 CET (15:02 UTC)") are matched first, and kept.
_LOCALISED = r"\d\d:\d\d [A-Za-z][\w+:\-]{0,8} \(\d\d:\d\d UTC\)"
_RANGE = r"(?P<from>\d\d:\d\d) ?(?:→|-|–|to) ?(?P<to>\d\d:\d\d) UTC\b"
_STAMP = r"(?:(?P<date>\d{4}-\d\d-\d\d|\d\d-\d\d)[ T])?(?P<clock>\d\d:\d\d)(?::\d\d)?(?P<utc>Z\b| UTC\b)"
_UTC_TEXT = re.compile(rf"(?P<done>{_LOCALISED})|(?<![\d:\-]){_RANGE}|(?<![\d:\-]){_STAMP}")


def is_utc(zone: tzinfo) -> bool:
    """Whether the zone is UTC all year (then nothing needs converting)."""
    return all(zone.utcoffset(datetime(2026, month, 1)) == timedelta(0) for month in (1, 7))


def zone_from_name(name: str, team: tzinfo = UTC) -> tzinfo:
    """The zone a name means; ValueError with a "did you mean" for a name that is none. `team` settles CST."""
    text = name.strip()
    if text in _NAMED:
        return zone_from_name(_NAMED[text])
    upper = text.upper()
    if upper in ("UTC", "GMT", "Z", "ETC/UTC"):
        return UTC
    if upper == "CST":
        return fixed_zone(CHINA if _hours_east(team) == CHINA else US_CENTRAL, "CST")
    if upper in _ABBREVIATIONS:
        return fixed_zone(_ABBREVIATIONS[upper], upper)
    offset = _OFFSET.match(text)
    if offset and int(offset.group(2)) <= 14:
        sign = -1 if offset.group(1) == "-" else 1
        return fixed_zone(sign * (int(offset.group(2)) + int(offset.group(3) or 0) / 60))
    return _iana(text)


def fixed_zone(hours: float, label: str = "") -> tzinfo:
    """A fixed offset, labelled `UTC+8`, `UTC-05:30` or by its abbreviation."""
    if not label:
        whole, minutes = int(abs(hours)), round(abs(hours) % 1 * 60)
        label = f"UTC{'-' if hours < 0 else '+'}{whole}" + (f":{minutes:02d}" if minutes else "")
    return timezone(timedelta(hours=hours), label)


def local_with_utc(moment: datetime, zone: tzinfo, day: str = "") -> str:
    """`16:02 CET (15:02 UTC)`, or `15:02 UTC` for a UTC team; `day` ("%Y-%m-%d ", "%m-%d ") leads with the date."""
    utc = moment.astimezone(UTC)
    if is_utc(zone):
        return f"{utc:{day}%H:%M} UTC"
    local = moment.astimezone(zone)
    return f"{local:{day}%H:%M} {local.tzname()} ({utc:%H:%M} UTC)"


def localise_text(text: str, zone: tzinfo, today: datetime | None = None) -> str:
    """Every UTC stamp in `text` in the team's zone with UTC beside it; unchanged for a UTC team. A clock without a
    date is taken on `today`'s date (UTC), for the offset in force that day."""
    if is_utc(zone):
        return text
    day = (today or datetime.now(UTC)).astimezone(UTC)

    def local(match: re.Match[str]) -> str:
        if match.group("done"):
            return match.group(0)
        if match.group("from"):
            start, end = (_at(day, None, match.group(g)) for g in ("from", "to"))
            a, b = start.astimezone(zone), end.astimezone(zone)
            return f"{a:%H:%M} → {b:%H:%M} {b.tzname()} ({start:%H:%M} → {end:%H:%M} UTC)"
        date = match.group("date") or ""
        moment = _at(day, date, match.group("clock"))
        return local_with_utc(moment, zone, {10: "%Y-%m-%d ", 5: "%m-%d "}.get(len(date), ""))

    return _UTC_TEXT.sub(local, text)


def _at(day: datetime, date: str | None, clock: str) -> datetime:
    hour, minute = (int(p) for p in clock.split(":"))
    full = f"{day.year}-{date}" if date and len(date) == 5 else date
    base = datetime.fromisoformat(full).replace(tzinfo=UTC) if full else day
    return base.replace(hour=hour, minute=minute, second=0, microsecond=0)


def _hours_east(zone: tzinfo) -> float:
    offset = zone.utcoffset(datetime(2026, 1, 1))
    return offset.total_seconds() / 3600 if offset is not None else 0.0


def _iana(name: str) -> tzinfo:
    if "/" in name and ".." not in name:  # the usual spelling: no scan of the zone database
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            pass
    names = _iana_names()
    exact = names.get(name.casefold())
    if exact is not None:
        return ZoneInfo(exact)
    close = difflib.get_close_matches(name.casefold(), list(names), n=1, cutoff=0.75)
    hint = f" (did you mean {names[close[0]]!r}?)" if close else ""
    raise ValueError(f"{name!r} is not a time zone{hint}; use an IANA name like Europe/Berlin, UTC+8 or CET")


@functools.cache
def _iana_names() -> dict[str, str]:
    try:
        return {n.casefold(): n for n in available_timezones()}
    except (ZoneInfoNotFoundError, OSError):  # no zone database: only offsets and abbreviations work
        return {}
