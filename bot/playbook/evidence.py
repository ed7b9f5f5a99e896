"""Reading evidence out of tool observations: change points, spikes, listed services, log signatures, times.

The playbook knows the tools only through their text (the same text the model sees), so these readers are
lenient: they look for the stable line forms the tools promise (`change: 15:05 212 ms -> 1,180 ms (x5.6)`,
`spike: 15:26 94 ms -> peak 2,455 ms at 15:30 (x26.1), back to ~93 ms by 16:04`, `1. 256x <signature>`)
and ignore everything else. Deploys and diffs are read in bot/playbook/diffs.py.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from bot.playbook.moments import moment_from_question as moment_from_question  # read here by the playbook
from tools.timerange import CLOCK_PATTERN


@dataclass(frozen=True)
class ChangePoint:
    """One detected level shift in a metric series."""

    at: datetime
    before: str  # as printed by the tool, with its unit ("212 ms")
    after: str
    ratio: float  # after / before; inf when before is 0
    factor: str = ""  # the factor as the tool printed it ("x5.6"); empty when it printed none
    spike: bool = False  # a peak that came and went (before = the median, after = the max), not a level shift
    cause: str = ""  # of a stop (after = NO_SAMPLES): what its line says stopped ("the service", "unknown"; "" unsaid)

    @property
    def strength(self) -> float:
        """How big the shift is, whichever direction: |log(ratio)|."""
        if self.ratio < 0:
            return 0.0
        # a fall to nothing (or a series that stopped) is as big as a rise from nothing
        return 50.0 if math.isinf(self.ratio) or self.ratio == 0 else abs(math.log(self.ratio))


@dataclass(frozen=True)
class LogSignature:
    count: int
    text: str  # the clustered template ("... timed out after <n>ms")
    example: str = ""  # one concrete message of the cluster, as logged

    @property
    def quoted(self) -> str:
        """The concrete example when there is one (it can be checked against the logs), else the template."""
        return self.example or self.text


_NUM = r"[-+]?\d[\d,]*(?:\.\d+)?"
_VALUE = rf"{_NUM}(?:\s*[a-zA-Z%/]+)?"
_WHEN = r"(?:(?:\d{4}-)?\d{2}-\d{2}[T ])?\d{1,2}:\d{2}(?::\d{2})?Z?"
_CHANGE_RX = re.compile(
    rf"^\s*change:\s*(?:(?P<from_when>{_WHEN})\s+)?(?P<before>{_VALUE})\s*(?:->|→)\s*"
    rf"(?:(?P<to_when>{_WHEN})\s+)?(?P<after>{_VALUE})(?:.*?[x×](?P<ratio>{_NUM}))?",
    re.MULTILINE,
)
ISO_TIME_RX = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?")
_LISTED_RX = re.compile(r"^\s*(?P<name>[\w.\-]+)\s*(?:->.*)?$")  # a header or footer line has spaces in it
# "   example: 15:36:59 ERROR order <host> <logger>: <message> trace=<id>" (12-01 15:36:59 when the window spans days)
_EXAMPLE_RX = re.compile(rf"^\s+example:\s+{CLOCK_PATTERN}\s+[A-Z]+\s+\S+\s+[^:]*?:\s(?P<message>.+)$")
_SIGNATURE_RX = re.compile(r"^\s*\d+[.)]\s+(?P<count>\d[\d,]*)\s*(?:x|×)\s+(?P<text>\S.*)$")


def number_from_text(text: str) -> float | None:
    """The first number in a printed value ("1,180 ms" -> 1180.0)."""
    match = re.search(_NUM, text)
    return float(match.group().replace(",", "")) if match else None


def moment_from_text(text: str, now: datetime) -> datetime | None:
    """An ISO time, or a bare HH:MM taken as its latest occurrence at or before `now` (tools print UTC)."""
    iso = ISO_TIME_RX.search(text)
    if iso:
        raw = iso.group().replace(" ", "T").replace("Z", "+00:00")
        moment = datetime.fromisoformat(raw)
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    clock = re.search(r"(?:\b(\d{2})-(\d{2})[T ])?\b(\d{1,2}):(\d{2})\b", text)
    if not clock:
        return None
    month, day, hour, minute = (int(g) if g else None for g in clock.groups())
    moment = now.replace(hour=hour or 0, minute=minute or 0, second=0, microsecond=0)
    if month and day:
        moment = moment.replace(month=month, day=day)
        return moment if moment <= now + timedelta(days=1) else moment.replace(year=now.year - 1)
    return moment if moment <= now else moment - timedelta(days=1)


def change_points_from_text(observation: str, now: datetime) -> list[ChangePoint]:
    """Every `change:` line of a query_metrics observation, oldest first."""
    points = []
    for match in _CHANGE_RX.finditer(observation):
        when = match.group("to_when") or match.group("from_when") or ""
        at = moment_from_text(when, now) if when else None
        if at is None:
            continue
        before, after = number_from_text(match.group("before")), number_from_text(match.group("after"))
        ratio = float(match.group("ratio").replace(",", "")) if match.group("ratio") else _ratio(before, after)
        if before is not None and after is not None and after < before and ratio > 1:
            ratio = 1 / ratio  # "(x5.6)" printed for a drop still means a drop
        factor = f"x{match.group('ratio')}" if match.group("ratio") else ""
        points.append(ChangePoint(at, match.group("before").strip(), match.group("after").strip(), ratio, factor))
    return sorted(points, key=lambda p: p.at)


_SPIKE_RX = re.compile(
    rf"^\s*spike:\s*(?P<when>{_WHEN})\s+(?P<before>{_VALUE})\s*(?:->|→)\s*peak\s+(?P<peak>{_VALUE})\s+at\s+"
    rf"(?P<peak_when>{_WHEN})(?:\s*\([x×](?P<ratio>{_NUM})\))?",
    re.MULTILINE,
)


NO_SAMPLES = "no samples"  # what a ChangePoint read from a `stopped:` line went to
GAP = (
    "collection gap"  # a `stopped:` line's `cause:` when the collection stopped (tools/metrics/collection.py prints it)
)
_STOP_RX = re.compile(
    rf"^\s*stopped:\s*no samples after (?P<when>{_WHEN})\s*\(last (?P<before>{_VALUE})\)"
    r"(?P<rest>.*)$",
    re.MULTILINE,
)
_GAP_RX = re.compile(
    rf";\s*cause:\s*{re.escape(GAP)}\b.*?other services: (?:all (?P<all>\d+)|(?P<some>\d+) of "
    rf"(?P<of>\d+)) others'(?:.*?its last sample (?P<last>{_WHEN}))?"
)

_CAUSE_RX = re.compile(r";\s*cause:\s*(the service|unknown)\b")


@dataclass(frozen=True)
class Gap:
    """A series that stopped when the collection did (`cause: collection gap`): not a change of the service."""

    at: datetime  # the last raw sample before the gap (the series' own last point when not printed)
    services: str  # whose series ended with it: "every service", or "4 of 5 services"


def stops_from_text(observation: str, now: datetime) -> list[ChangePoint]:
    """A `stopped:` line (the series had samples, then none to the window's end) as a ChangePoint to NO_SAMPLES
    with ratio 0: the biggest change a series can show, never "no change". A gap in collection is no change of
    the service (see gaps_from_text); a stop of unknown cause still counts, so it is never dropped unchecked."""
    stops = []
    for match in _STOP_RX.finditer(observation):
        at = moment_from_text(match.group("when"), now)
        cause = _CAUSE_RX.search(match.group("rest"))
        if at is not None and not _GAP_RX.search(match.group("rest")):
            before = match.group("before").strip()
            stops.append(ChangePoint(at, before, NO_SAMPLES, 0.0, cause=cause[1] if cause else ""))
    return stops


def gaps_from_text(observation: str, now: datetime) -> list[Gap]:
    """The `stopped:` lines whose cause is a gap in collection, with whose series ended with them."""
    gaps = []
    for match in _STOP_RX.finditer(observation):
        gap = _GAP_RX.search(match.group("rest"))
        at = moment_from_text((gap and gap.group("last")) or match.group("when"), now)
        if at is not None and gap:
            every, some, of = gap.group("all"), gap.group("some"), gap.group("of")
            gaps.append(Gap(at, "every service" if every else f"{int(some) + 1} of {int(of) + 1} services"))
    return gaps


def spikes_from_text(observation: str, now: datetime) -> list[ChangePoint]:
    """Every `spike:` line (a peak that came and went) as a ChangePoint with spike=True: at = when it started,
    before = the level it rose from, after = the peak; oldest first."""
    spikes = []
    for match in _SPIKE_RX.finditer(observation):
        at = moment_from_text(match.group("when"), now)
        if at is None:
            continue
        before, peak = number_from_text(match.group("before")), number_from_text(match.group("peak"))
        ratio = float(match.group("ratio").replace(",", "")) if match.group("ratio") else _ratio(before, peak)
        factor = f"x{match.group('ratio')}" if match.group("ratio") else ""
        spikes.append(ChangePoint(at, match.group("before").strip(), match.group("peak").strip(), ratio, factor, True))
    return sorted(spikes, key=lambda p: p.at)


def spike_from_text(observation: str, now: datetime) -> ChangePoint | None:
    """The biggest spike of a query_metrics observation (see spikes_from_text), or None."""
    spikes = spikes_from_text(observation, now)
    return max(spikes, key=lambda p: p.strength) if spikes else None


def _ratio(before: float | None, after: float | None) -> float:
    if before is None or after is None:
        return 1.0
    if before == 0:
        return math.inf if after > 0 else 1.0
    return after / before


def listed_services_from_text(observation: str) -> list[str]:
    """The services a list_services observation names, one a line ("order -> payment, order-db")."""
    found = (_LISTED_RX.match(line) for line in observation.splitlines())
    return [match.group("name") for match in found if match]


def service_from_text(text: str, services: Iterable[str]) -> str | None:
    """The known service the text names, preferring the longest match ("order-db" over "order").

    Word edges are ASCII ones: "order服务" and "看下payment的p99" name order and payment, since Chinese
    characters sit right next to a name with no space."""
    lowered = text.lower()
    for name in sorted(set(services), key=len, reverse=True):
        if re.search(rf"(?<![a-z0-9_-]){re.escape(name.lower())}(?:e?s)?(?![a-z0-9_-])", lowered):  # "payments"
            return name
    return None


def signatures_from_text(observation: str, level: str = "ERROR") -> list[LogSignature]:
    """The clustered signatures of a query_logs observation (`1. 1,234x <template>  first .. last ..`) at `level`:
    by default its `top ERROR/FATAL signatures` section only (not the WARN or `new since` sections); with
    level="WARN", its `top WARN signatures` section."""
    names = "WARN" if level.upper().startswith("WARN") else "ERROR|FATAL"
    return _section_signatures(observation, re.compile(rf"^top \S*({names})\S* signatures", re.IGNORECASE))


def new_signatures_from_text(observation: str) -> list[LogSignature]:
    """The signatures query_logs(onset=...) found after the onset and not before it, at any level."""
    return _section_signatures(observation, re.compile(r"^new signatures \(", re.IGNORECASE))


def _section_signatures(observation: str, header: re.Pattern[str]) -> list[LogSignature]:
    """Signature lines (and each one's example) under the headers `header` matches; any other unindented line
    that is not a signature ends a section."""
    found: list[LogSignature] = []
    in_section = False
    for line in observation.splitlines():
        if header.match(line):
            in_section = True
        elif in_section and (match := _SIGNATURE_RX.match(line)):
            text = re.sub(r"\s{2,}first \S.*$", "", match.group("text")).strip()
            found.append(LogSignature(int(match.group("count").replace(",", "")), text))
        elif in_section and found and not found[-1].example and (example := _EXAMPLE_RX.match(line)):
            message = re.sub(r" trace=\S+$", "", example.group("message")).strip()
            found[-1] = LogSignature(found[-1].count, found[-1].text, message[:200])
        elif not line.strip() or not line[:1].isspace():
            in_section = False
    return sorted(found, key=lambda s: -s.count)


def log_lines_from_text(observation: str) -> list[str]:
    """The listed log lines of a query_logs observation (`newest N of M matching lines:`), oldest first."""
    lines = observation.splitlines()
    start = next((i for i, line in enumerate(lines) if re.match(r"^newest [\d,]+ of", line)), None)
    if start is None:
        return []
    listed = [line.strip() for line in lines[start + 1 :] if re.match(r"^\s*\d{1,2}:\d{2}", line)]
    return listed[::-1]
