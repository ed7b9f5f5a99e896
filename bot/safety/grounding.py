"""The grounding check: numbers, versions and times in a final answer that no observation backs up.

Run on every diagnosis (not only in the eval): an invented "p99 was 42 ms" or "rolled out v9.9.9" is worse
than no number at all at 3 a.m. The rules, chosen to flag inventions without crying wolf:
- Numbers are compared by value, not spelling: "1,180 ms" = "1180ms", "2.4k" = "2,400". Units convert within
  one dimension ("1.2 s" is backed by "1,180 ms", since 1.18 s rounds to 1.2 s at the answer's precision;
  rounding down counts too). A number backed only with a different unit ("1180 s" vs "1180 ms") stays
  unverified.
- A bare number in the evidence backs the same value with any unit: tools often state the unit once in a
  header ("series (mean per 2h, ms): 14:00 205, ...") and the calculate tool returns bare numbers. A bare
  number in the answer makes no unit claim, so that value with any unit backs it.
- Whole numbers 0-10 without a unit are ignored: they are step counts, list positions and "3 pods" talk.
- Versions (v2.8.1, 1.4.0, also IP-like dotted literals) and dates must appear verbatim ("v" optional).
- Times of day match when trivially equal: 15:05 = 15:05:00 = 2026-11-28T15:05:00Z = 3:05 PM.
- Word boundaries are ASCII-only, so "升至1180ms" in a Chinese answer is read like "rose to 1180 ms".
- A ratio, difference, percent change, share or product of two backed numbers is backed when both are stated in
  the answer or stand on one line of an observation (bot/safety/derived.py); so is the time between two backed
  times of day the answer states; a number with no source still is not.
"""

from __future__ import annotations

import bisect
import dataclasses
import html
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from bot.engine.types import Trace
from bot.safety.derived import derived_from, elapsed_between, line_pairs, pairs_of, quantity

UNVERIFIED_PREFIX = "unverified: "
_OWN_LINE_PREFIXES = ("Partial answer: ", "Partial answer (")
_SMALL_COUNT = 10

_UNIT_TABLE: dict[str, tuple[str, float]] = {
    **dict.fromkeys(["ns"], ("time", 1e-6)),
    **dict.fromkeys(["us", "µs", "μs"], ("time", 1e-3)),
    **dict.fromkeys(["ms", "msec", "msecs", "millisecond", "milliseconds"], ("time", 1.0)),
    **dict.fromkeys(["s", "sec", "secs", "second", "seconds"], ("time", 1e3)),
    **dict.fromkeys(["m", "min", "mins", "minute", "minutes"], ("time", 6e4)),
    **dict.fromkeys(["h", "hr", "hrs", "hour", "hours"], ("time", 3.6e6)),
    **dict.fromkeys(["d", "day", "days"], ("time", 8.64e7)),
    # ops tools mostly mean binary multiples whatever they print, so KB and KiB compare as equal
    **dict.fromkeys(["bytes", "byte"], ("bytes", 1.0)),
    **dict.fromkeys(["kb", "kib"], ("bytes", 1024.0)),
    **dict.fromkeys(["mb", "mib"], ("bytes", 1024.0**2)),
    **dict.fromkeys(["gb", "gib"], ("bytes", 1024.0**3)),
    **dict.fromkeys(["tb", "tib"], ("bytes", 1024.0**4)),
    **dict.fromkeys(["rps", "qps", "req/s", "requests/s", "ops/s", "/s"], ("rate", 1.0)),
    **dict.fromkeys(["rpm", "req/min", "requests/min", "/min"], ("rate", 1 / 60)),
    **dict.fromkeys(["%", "percent"], ("percent", 1.0)),
    **dict.fromkeys(["x", "×", "times"], ("ratio", 1.0)),
}
_UNIT_ALTERNATION = "|".join(re.escape(u) for u in sorted(_UNIT_TABLE, key=len, reverse=True))

_VERSION = re.compile(
    r"(?<![\w.])(?:[vV](?P<short>\d+(?:\.\d+)*)|(?P<long>\d+(?:\.\d+){2,}))(?P<pre>-[A-Za-z]\w*(?:\.\w+)*)?(?![\w])(?!\.\d)",
    re.ASCII,
)
_SHORT_VERSION = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?!\w)(?!\.\d)", re.ASCII)  # "8.12", "2": a v-less version
_BARE = "bare:"
_DATE = re.compile(r"(?<!\d)\d{4}-\d{2}-\d{2}(?!\d)", re.ASCII)
_TIME = re.compile(r"(?<![\d:.])(\d{1,2}):(\d{2})(?::(\d{2}))?(?:\s*([AaPp])\.?[Mm]\b\.?)?(?!\d)(?!:\d)", re.ASCII)
_PREFIX_RATIO = re.compile(r"(?<![\w.])[x×]\s?(\d+(?:\.\d+)?)(?!\w)(?!\.\d)", re.ASCII)
_NUMBER = re.compile(
    r"(?<![\w.])(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?P<frac>\.\d+)?(?:(?P<k>[kK])(?![A-Za-z]))?"
    r"(?:\s?(?P<unit>" + _UNIT_ALTERNATION + r"))?(?![\w])(?!\.\d)",
    re.I | re.ASCII,
)


@dataclass(frozen=True)
class Claim:
    """One checkable fact in a text: a number with its unit, a literal (version, date), or a time of day."""

    text: str  # as written
    kind: Literal["number", "literal", "time"]
    key: str = ""  # literal or time, normalised
    value: float = 0.0
    unit: str = ""  # canonical unit key into _UNIT_TABLE, "" for a bare number
    decimals: int = 0


_Reader = Callable[[re.Match[str]], Claim | None]


def unverified_claims(answer: str, evidence: Sequence[str]) -> list[str]:
    """Numbers, versions and times in the answer that appear in no evidence text, as written, in order.

    The evidence is read shortest text first, and reading stops once every claim is backed: a grounded answer
    rarely needs the long observations read at all (the answer is the same whatever the order)."""
    claims = [c for c in claims_from_text(_model_text(answer)) if not _is_trivial(c)]
    open_claims = claims
    for text in sorted(evidence, key=len):
        if not open_claims:  # nothing (left) to back: the rest of the evidence need not be read
            break
        literals, numbers = _backing(text)
        open_claims = [c for c in open_claims if not _backed(c, literals, numbers)]
    if any(c.kind == "number" for c in open_claims):  # a ratio or a difference of backed numbers is backed too
        backed = [c for c in claims if c not in open_claims]
        open_claims = _not_derived(open_claims, backed, evidence)
    return list(dict.fromkeys(c.text for c in open_claims))


def _backed(claim: Claim, literals: set[str], numbers: _Numbers) -> bool:
    if claim.kind == "number":
        return numbers.back(claim)
    # "v8.12" is how an answer writes the "8.12 release" a question or a record names without the v
    return claim.key in literals or (claim.text[:1] in "vV" and _BARE + claim.key in literals)


def _not_derived(open_claims: list[Claim], backed: list[Claim], evidence: Sequence[str]) -> list[Claim]:
    """The open claims that are no simple derivation of two backed numbers, nor the time between two backed times
    of day (bot/safety/derived.py)."""
    own = pairs_of([quantity(c.value, c.unit, _UNIT_TABLE) for c in backed if c.kind == "number"])
    lines = line_pairs(evidence, _line_numbers, _UNIT_TABLE)
    times = [c.key for c in backed if c.kind == "time"]
    return [
        c
        for c in open_claims
        if c.kind != "number"
        or not (derived_from(c.value, c.unit, c.decimals, [*own, *lines], _UNIT_TABLE) or _elapsed(c, times))
    ]


def _elapsed(claim: Claim, times: list[str]) -> bool:
    dimension, factor = _UNIT_TABLE.get(claim.unit, ("", 1.0))
    return dimension == "time" and elapsed_between(claim.value * factor, factor, claim.decimals, times)


def _line_numbers(line: str) -> list[tuple[float, str]]:
    return [(c.value, c.unit) for c in claims_from_text(line) if c.kind == "number"]


def _backing(text: str) -> tuple[set[str], _Numbers]:
    """What one evidence text can back: its literals and times (keys, and each time's HH:MM), and its numbers.

    Read as `claims_from_text` reads (literals and times first, their spans blanked), but the numbers, most of an
    observation's claims, are taken in one pass as (value, unit) without building a Claim each."""
    found: list[tuple[int, Claim]] = []
    text = html.unescape(text)
    for pattern, reader in _LITERAL_READERS:
        text = _take(pattern, reader, text, found)
    literals: set[str] = {_BARE + bare for bare in _SHORT_VERSION.findall(text)}
    numbers = [_value_and_unit(match) for match in _NUMBER.finditer(text)]
    for _, claim in found:
        if claim.kind == "number":
            numbers.append((claim.value, claim.unit))
        else:
            literals.update((claim.key, claim.key[:5]) if claim.kind == "time" else (claim.key,))
    return literals, _Numbers(numbers)


def mark_unverified(trace: Trace) -> Trace:
    """Append "unverified: ..." to the answer (and a note) when it states facts no observation backs."""
    # a format-error step holds the model's own unreadable reply: it backs nothing
    evidence = [trace.question, *(step.observation for step in trace.steps if step.status != "format_error")]
    claims = unverified_claims(trace.answer, evidence)
    if not claims:
        return trace
    line = UNVERIFIED_PREFIX + ", ".join(claims)
    answer = f"{_without_unverified_line(trace.answer).rstrip()}\n\n{line}"
    return dataclasses.replace(trace, answer=answer, notes=(*trace.notes, line))


def claims_from_text(text: str) -> list[Claim]:
    """Every claim in text, in order of appearance. Literals and times are read first and blanked out."""
    text = html.unescape(text)  # "&#39;" is a quote, not the number 39
    found: list[tuple[int, Claim]] = []
    for pattern, reader in _LITERAL_READERS:
        text = _take(pattern, reader, text, found)
    _take(_NUMBER, _number, text, found)
    return [claim for _, claim in sorted(found, key=lambda pair: pair[0])]


def _take(pattern: re.Pattern[str], reader: _Reader, text: str, found: list[tuple[int, Claim]]) -> str:
    """Record the claims pattern finds and blank their spans so later patterns cannot re-read them."""

    def blank(match: re.Match[str]) -> str:
        claim = reader(match)
        if claim is not None:
            found.append((match.start(), claim))
        return " " * len(match[0])

    return pattern.sub(blank, text)


def _version(match: re.Match[str]) -> Claim:
    core = match["short"] or match["long"]
    return Claim(match[0], "literal", key=(core + (match["pre"] or "")).lower())


def _date(match: re.Match[str]) -> Claim:
    return Claim(match[0], "literal", key=match[0])


def _time(match: re.Match[str]) -> Claim | None:
    hour, minute, second, half = int(match[1]), int(match[2]), match[3], (match[4] or "").lower()
    if half:
        hour = hour % 12 + (12 if half == "p" else 0)
    key = f"{hour:02d}:{minute:02d}" + (f":{second}" if second and second != "00" else "")
    return None if hour > 23 or minute > 59 else Claim(match[0].strip(), "time", key=key)


def _ratio(match: re.Match[str]) -> Claim:
    return Claim(match[0], "number", value=float(match[1]), unit="x", decimals=_decimals(match[1]))


def _number(match: re.Match[str]) -> Claim:
    digits = match["int"].replace(",", "") + (match["frac"] or "")
    unit = (match["unit"] or "").lower()
    value, decimals = float(digits), _decimals(digits)
    if match["k"]:  # "2.4k" is 2,400 to the nearest hundred
        value, decimals = value * 1000, decimals - 3
    return Claim(match[0].strip(), "number", value=value, unit=unit, decimals=decimals)


def _value_and_unit(match: re.Match[str]) -> tuple[float, str]:
    """What an evidence number backs: its value (as `_number` reads it) and its unit; its precision does not count."""
    integer, fraction, k, unit = match.group("int", "frac", "k", "unit")
    value = float(integer.replace(",", "") + (fraction or ""))
    return (value * 1000 if k else value), (unit.lower() if unit else "")


def _decimals(digits: str) -> int:
    return len(digits.partition(".")[2])


_LITERAL_READERS: tuple[tuple[re.Pattern[str], _Reader], ...] = (
    (_VERSION, _version),
    (_DATE, _date),
    (_TIME, _time),
    (_PREFIX_RATIO, _ratio),
)


def _is_trivial(claim: Claim) -> bool:
    """Small whole numbers without a unit: step counts and ordinals, not findings."""
    return claim.kind == "number" and not claim.unit and claim.decimals == 0 and claim.value <= _SMALL_COUNT


class _Numbers:
    """Evidence numbers sorted for range lookups, so a long answer against long observations stays cheap."""

    def __init__(self, numbers: Iterable[tuple[float, str]]) -> None:
        values = set(numbers)  # (value, unit), each once
        self._raw = sorted({value for value, _ in values})  # as written, whatever the unit
        self._bare = sorted({value for value, unit in values if not unit})
        self._base: dict[str, list[float]] = {}  # dimension -> values in its base unit (ms, bytes, ...)
        for value, unit in values:
            if unit:
                dimension, factor = _UNIT_TABLE[unit]
                self._base.setdefault(dimension, []).append(value * factor)
        for base in self._base.values():
            base.sort()

    def back(self, claim: Claim) -> bool:
        """True when some evidence number equals the claim at the claim's precision and in a comparable unit."""
        if not claim.unit:
            return _any_equal(self._raw, claim, 1.0)  # a bare number in the answer makes no unit claim
        dimension, factor = _UNIT_TABLE[claim.unit]
        return _any_equal(self._bare, claim, 1.0) or _any_equal(self._base.get(dimension, []), claim, factor)


def _any_equal(values: list[float], claim: Claim, factor: float) -> bool:
    """Search the window rounding or truncation could map onto the claim; check each candidate exactly."""
    step = 10.0**-claim.decimals
    low = bisect.bisect_left(values, (claim.value - step) * factor)
    high = bisect.bisect_right(values, (claim.value + 2 * step) * factor)
    return any(_same_at_precision(claim.value, values[i] / factor, claim.decimals) for i in range(low, high))


def _same_at_precision(claimed: float, seen: float, decimals: int) -> bool:
    """Equal after rounding (or truncating) the evidence to the precision the answer was written with."""
    scale = 10.0**decimals
    rounded = round(seen, decimals)
    truncated = math.floor(seen * scale + 1e-9) / scale
    return any(math.isclose(claimed, v, rel_tol=1e-9, abs_tol=1e-9) for v in (rounded, truncated, seen))


def _model_text(answer: str) -> str:
    """The answer without opsbot's own lines: the "Partial answer: ... (33,120 tokens used of 32,000)" label,
    italic notes ("_The LLM was unavailable ..._") and a previous "unverified:" line. Their numbers are opsbot's."""
    lines = _without_unverified_line(answer).split("\n")
    return "\n".join(s for s in lines if not s.startswith(_OWN_LINE_PREFIXES) and not _is_italic_note(s.strip()))


def _is_italic_note(line: str) -> bool:
    """A whole line in _italics_: opsbot's own note (model names inside may hold underscores: gemma-3-q4_k_m)."""
    return len(line) > 2 and line.startswith("_") and line.endswith("_")


def _without_unverified_line(answer: str) -> str:
    """The answer without a previous "unverified:" line, so marking twice changes nothing."""
    return "\n".join(line for line in answer.split("\n") if not line.startswith(UNVERIFIED_PREFIX))
