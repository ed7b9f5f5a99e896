"""When the user says it started, read from the question in English or Chinese.

Relative times ("45 minutes ago", "an hour ago", "半小时前", "三个小时前", "一个半小时前"), a clock with an
optional day ("yesterday 15:05", "昨天15:05", "today at 3pm", "下午3点半") and a part of the day alone
("this morning", "今天早上", "昨晚"). A part of the day reads as its middle (morning 09:00, afternoon 15:00,
evening 20:00): the playbook looks two hours either side of it. A day alone ("yesterday") is too vague
to centre a window on and reads as None, like a question that names no time.

A time is read in the zone the question names right after it ("06:19 CET", "3pm PST", "15:05 UTC+8", "06:19Z",
"15:05 Europe/Berlin", or 北京时间 anywhere), else in the team's zone (OPSBOT_TIMEZONE, UTC by default); "today" and
"yesterday" are that zone's days. The moment comes back aware, in that zone: it compares and subtracts like any
other, and prints as the user wrote it (convert to UTC to print it in the tools' terms).
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta, tzinfo

from bot.engine.types import Question
from bot.playbook.zones import ABBREVIATIONS, is_utc, zone_from_name

_WORD_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "ten": 10,
    "fifteen": 15,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "forty-five": 45,
    "half an": 0.5,
}
_CN_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_CN_NUMBER = "[零一二两三四五六七八九十]+"
_EN_AGO_RX = re.compile(
    rf"\b(?P<n>\d{{1,3}}(?:\.\d+)?|{'|'.join(sorted(_WORD_NUMBERS, key=len, reverse=True))})\s*"
    r"(?P<unit>min(?:ute)?s?|h(?:ou)?rs?|hours?)(?P<half>\s+and\s+a\s+half)?\s+ago\b",
    re.IGNORECASE,
)
# "for the past half hour", "in the last ~25 min", "over the last hour": the symptom's own span, which outranks a time
# of day the question gives for something else ("a migration ran this morning"). Only spans up to a few hours: "the
# last 24 hours" is a range to look over, not a start.
_EN_FOR_RX = re.compile(
    r"\b(?:for|in|over|during|since)\s+the\s+(?:past|last)\s+(?:~\s*|about\s+|around\s+)?"
    rf"(?P<n>\d{{1,3}}(?:\.\d+)?|{'|'.join(sorted(_WORD_NUMBERS, key=len, reverse=True))}|half\s+an|half)?\s*"
    r"(?P<unit>min(?:ute)?s?|h(?:ou)?rs?|hours?)\b",
    re.IGNORECASE,
)
FOR_THE_LAST_MAX = timedelta(hours=3)
_CN_AGO_RX = re.compile(
    rf"(?P<n>\d{{1,3}}(?:\.\d+)?|{_CN_NUMBER})?\s*个?(?P<half>半)?个?\s*(?P<unit>小时|钟头|分钟|分)\s*(?:之|以)?前"
)
_CLOCK_RX = re.compile(r"(?<![\d:])(?P<h>\d{1,2}):(?P<m>\d{2})(?![\d:])(?:\s*(?P<ampm>am|pm)\b)?", re.IGNORECASE)
_AMPM_RX = re.compile(r"(?<![\d:])(?P<h>\d{1,2})\s*(?P<ampm>am|pm)\b", re.IGNORECASE)
_CN_CLOCK_RX = re.compile(
    rf"(?P<h>\d{{1,2}}|{_CN_NUMBER})\s*[点點](?:\s*(?P<half>半)|\s*(?P<m>\d{{1,2}}|{_CN_NUMBER})\s*分?)?"
)
# the Traditional forms of the characters these patterns use (半小時前, 兩個鐘頭前, 3點半, 夜裡, 淩晨)
_SIMPLIFIED = str.maketrans("時鐘頭個點兩裡淩間", "时钟头个点两里凌间")
# A zone written right after a clock: Z, UTC/GMT with an offset, an offset, an abbreviation, an IANA name.
_ZONED_CLOCK = re.compile(
    r"(?<![\d:])\d{1,2}(?::\d{2})?(?:\s*[ap]\.?m\.?)?\s*\(?(?P<zone>"
    r"(?:UTC|GMT)\s*[+-]\s*\d{1,2}(?::?\d{2})?|[+-]\d{2}:?\d{2}|[A-Z][A-Za-z_]+/[A-Za-z_]+(?:/[A-Za-z_]+)?|[A-Z]{1,5})"
    r"(?![\w/])",
    re.IGNORECASE,
)
_ZONE_WORDS = ("北京时间", "东八区")
_DAYS = (
    ("前天", 2),
    ("昨", 1),
    ("yesterday", 1),
    ("last night", 1),
    ("今", 0),
    ("today", 0),
    ("this morning", 0),
    ("this afternoon", 0),
    ("this evening", 0),
    ("tonight", 0),
)
_PARTS = (  # (words, the hour a vague mention reads as); checked in order, the first found wins
    (("凌晨",), 3),
    (("早上", "早晨", "今早", "上午", "this morning", "in the morning"), 9),
    (("中午", "noon", "lunchtime"), 12),
    (("下午", "this afternoon", "in the afternoon", "afternoon"), 15),
    (("晚上", "傍晚", "今晚", "昨晚", "夜里", "tonight", "this evening", "last night", "in the evening"), 20),
)


def moment_from_question(text: str, now: datetime, zone: tzinfo = UTC) -> datetime | None:
    """When the user says it started: "yesterday 15:05", "06:19 CET", "1.5 hours ago", "三个小时前"; None if unsaid.
    `zone` is the team's, for a time the question gives without one."""
    text = text.translate(_SIMPLIFIED)
    asked = zone_in_question(text, zone) or zone
    now = now.astimezone(asked)
    ago = _ago(text)
    if ago is not None:
        return (now - ago).replace(second=0, microsecond=0)
    lowered = text.lower()
    part = next((hour for words, hour in _PARTS if any(_says(lowered, w) for w in words)), None)
    clock = _clock(lowered, part)
    if clock is None and part is None:
        return None
    hour, minute = clock if clock is not None else (part or 0, 0)
    moment = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    day = next((offset for word, offset in _DAYS if word in lowered), None)
    if day:
        return moment - timedelta(days=day)
    return moment if moment <= now or day == 0 else moment - timedelta(days=1)


def _says(lowered: str, word: str) -> bool:
    """Whether the text says the word: a whole word for a Latin one ("noon" is not in "afternoon")."""
    if not word.isascii():
        return word in lowered
    return re.search(rf"(?<![a-z]){re.escape(word)}(?![a-z])", lowered) is not None


def time_hint(text: str, now: datetime, zone: tzinfo = UTC) -> str:
    """For a model that reads the question itself: the team's zone and the question's time in UTC, the tools'
    terms ("" when the team is on UTC and the question names no other zone)."""
    moment = moment_from_question(text, now, zone)
    said_in = moment.tzinfo if moment is not None else None
    if is_utc(zone) and (said_in is None or is_utc(said_in)):
        return ""
    team = "" if is_utc(zone) else f"the team's time zone is {zone} ({now.astimezone(zone):%Z, UTC%z}); "
    said = f"; the question's time is {moment.astimezone(UTC):%Y-%m-%dT%H:%MZ}" if moment is not None else ""
    return f"Times: {team}the tools take and print UTC{said}."


def with_time_hint(question: Question, now: datetime, zone: tzinfo = UTC) -> Question:
    """The question with time_hint's line beside its thread memory, when there is something to say."""
    hint = time_hint(question.text, now, zone)
    return replace(question, history=(*question.history, hint)) if hint else question


def zone_in_question(text: str, team: tzinfo = UTC) -> tzinfo | None:
    """The zone the question names for its time ("06:19 CET", "北京时间 15点"), or None."""
    simplified = text.translate(_SIMPLIFIED)
    word = next((w for w in _ZONE_WORDS if w in simplified), None)
    if word is not None:
        return zone_from_name(word)
    for match in _ZONED_CLOCK.finditer(simplified):
        token = match.group("zone")
        if "/" not in token and not any(c.isdigit() for c in token) and not _is_zone_word(token):
            continue  # "15:05 and": a word after a clock is a zone only when it is one's abbreviation
        try:
            return zone_from_name(token, team)
        except ValueError:
            continue
    return None


def _is_zone_word(token: str) -> bool:
    """UTC and GMT in any case; Z and the other abbreviations in capitals only ("seit 15:05 ist" is German, not
    India's IST)."""
    return token.upper() in ("UTC", "GMT") or (token.isupper() and token in ABBREVIATIONS)


def _ago(text: str) -> timedelta | None:
    english = _EN_AGO_RX.search(text)
    if english:
        word = english.group("n").lower()
        count = _WORD_NUMBERS[word] if word in _WORD_NUMBERS else float(word)
        count += 0.5 if english.group("half") else 0.0  # "an hour and a half ago"
        return count * (timedelta(hours=1) if english.group("unit").lower().startswith("h") else timedelta(minutes=1))
    span = _span(text)
    if span is not None:
        return span
    chinese = _CN_AGO_RX.search(text)
    if not chinese or not (chinese.group("n") or chinese.group("half")):
        return None
    count = _number(chinese.group("n")) if chinese.group("n") else 0.0
    count += 0.5 if chinese.group("half") else 0.0
    return count * (timedelta(hours=1) if chinese.group("unit") in ("小时", "钟头") else timedelta(minutes=1))


def _span(text: str) -> timedelta | None:
    """How long the symptom has lasted, from "for the past half hour" or "in the last ~25 min" (None past a few
    hours, or when unsaid)."""
    found = _EN_FOR_RX.search(text)
    if found is None:
        return None
    word = re.sub(r"\s+", " ", (found.group("n") or "1").lower())
    count = 0.5 if word in ("half", "half an") else _WORD_NUMBERS[word] if word in _WORD_NUMBERS else float(word)
    unit = timedelta(hours=1) if found.group("unit").lower().startswith("h") else timedelta(minutes=1)
    return count * unit if timedelta(0) < count * unit <= FOR_THE_LAST_MAX else None


def _clock(text: str, part: int | None) -> tuple[int, int] | None:
    """(hour, minute) of a clock in the text; "3pm" and "下午3点" are afternoon hours."""
    match = _CLOCK_RX.search(text) or _AMPM_RX.search(text)
    if match:
        hour, minute = int(match.group("h")), int(match.groupdict().get("m") or 0)
        pm = (match.group("ampm") or "").lower() == "pm"
    elif (chinese := _CN_CLOCK_RX.search(text)) and (chinese.group("h").isdigit() or _has_day_or_part(text, part)):
        hour = int(_number(chinese.group("h")))
        minute = 30 if chinese.group("half") else int(_number(chinese.group("m"))) if chinese.group("m") else 0
        pm = part is not None and part >= 15
    else:
        return None
    hour += 12 if pm and hour < 12 else 0
    return (hour, minute) if hour <= 23 and minute <= 59 else None


def _has_day_or_part(text: str, part: int | None) -> bool:
    """Whether "两点" can be a time: "慢了一点" (a little slower) is not, "昨天两点" is."""
    return part is not None or any(word in text for word, _ in _DAYS)


def _number(text: str) -> float:
    """Arabic or Chinese numerals up to 99: "3", "1.5", "三", "十五", "二十", "四十五"."""
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        return float(text)
    tens, _, ones = text.partition("十")
    if "十" not in text:
        return float(sum(_CN_DIGITS.get(c, 0) * 10**i for i, c in enumerate(reversed(text))))
    return float((_CN_DIGITS.get(tens, 1) if tens else 1) * 10 + (_CN_DIGITS.get(ones, 0) if ones else 0))
