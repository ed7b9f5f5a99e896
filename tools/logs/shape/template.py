"""The shape of a log message: the words that stay, the slots that vary, and the key that groups lines.

A slot is a token that carries a digit (an id, a count, a duration, a pod, a zone, a version), a uuid, an IP with
its port, a timestamp, or a long hex or base64 run. Every slot is the same `<*>` in the key, whatever its shape, so
`quote 8f3a9c2e1b` and `quote 12345` are one message and never split the count. What the slots held is kept beside
the key: a group of lines shows a slot that never varies as its value (`eu-west-1b`, `v2.8.1`, `HikariPool-1`), and
a varying one by its shape (`<n>ms`, `<uuid>`) with its numbers (tools/logs/shape/cluster.py).

Numbers that qualify a failure stay words: a limit, a size, a maximum, a threshold, a status or HTTP code, an exit
code (`limit 2Gi`, `HTTP 429`, `pool size 4`, `max_connections=600`). Those tell failures apart, so
`HTTP 429` and `HTTP 503` are two signatures.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

SLOT = "<*>"
MAX_KEY_CHARS = 300
_TOKENS = re.compile(
    r"(?P<stamp>\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?:Z|[+-]\d\d:?\d\d)?|\b\d\d:\d\d:\d\d(?:[.,]\d+)?\b)"
    r"|(?P<uuid>\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b)"
    r"|(?P<ip>\b\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?\b)"
    r"|(?P<token>[A-Za-z0-9_](?:[\w.\-]*[A-Za-z0-9_])?)"
)
_NUMBER = re.compile(r"^(?P<value>[+-]?\d+(?:\.\d+)?)(?P<unit>[A-Za-zµ%]{0,3})$")
_LONG_HEX = re.compile(r"^(?:0x)?[0-9a-fA-F]{12,}$")
_QUALIFIER = re.compile(
    r"(limit|max|threshold|quota|capacity|size|status|code|maximum|minimum|^min$|^http[s]?$|^exit$|^errno$"
    r"|^sqlstate$|^signal$|^port$|^retries$|^replicas$)",
    re.IGNORECASE,
)
_STATUS_CONTEXT = re.compile(r"(http|status|code|->|=>|returned|responded|response|answered|got)\W*$", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_DIGIT = re.compile(r"\d")


@dataclass(frozen=True)
class MessageShape:
    """A message cut into its words and slots: `parts` alternate literal text and slots (None), `values` are the
    slots' texts in order, `labels` the word before each slot (`waiting` for `waiting=152`)."""

    key: str
    parts: tuple[str | None, ...]
    values: tuple[str, ...]
    labels: tuple[str, ...]

    def phrases(self) -> tuple[str, ...]:
        """The runs of words between the slots, each as plain words (punctuation dropped): what a backend can
        match to count a signature's lines (`connection is not available request timed out after`)."""
        runs = (" ".join(re.findall(r"[A-Za-z0-9_]+", part)) for part in self.parts if part is not None)
        return tuple(run for run in runs if re.search(r"[A-Za-z]{2}", run))


def message_shape(text: str) -> MessageShape:
    """The first line of `text`, cut into words and slots; its key has `<*>` for every slot."""
    first = (text.strip().splitlines() or [""])[0]
    parts: list[str | None] = []
    values: list[str] = []
    labels: list[str] = []
    literal: list[str] = []
    position = 0
    for match in _TOKENS.finditer(first):
        literal.append(first[position : match.start()])
        position = match.end()
        token = match.group(0)
        is_word = match.lastgroup == "token"
        if is_word and _DIGIT.search(token) is None and not _word_is_slot(token):
            literal.append(token)  # the common case, decided without the text before it
            continue
        before = "".join(literal)
        if is_word and _DIGIT.search(token) is not None and _qualified(token, before):
            literal.append(token)
            continue
        parts.append(before)
        parts.append(None)
        values.append(token)
        labels.append(_label(before))
        literal = []
    literal.append(first[position:])
    parts.append("".join(literal))
    key = " ".join("".join(SLOT if p is None else p for p in parts).split())[:MAX_KEY_CHARS]
    return MessageShape(key, tuple(parts), tuple(values), tuple(labels))


@functools.lru_cache(maxsize=65_536)
def _word_is_slot(token: str) -> bool:
    """A token without a digit is a slot only as a long hex run or a random-looking id (cached: words repeat)."""
    return bool(_LONG_HEX.match(token)) or _looks_random(token)


def _looks_random(token: str) -> bool:
    """A long run of letters in both cases with no vowel pattern a word has (a base64 id, a session token)."""
    return len(token) >= 20 and any(c.islower() for c in token) and sum(c.isupper() for c in token) >= 4


def _qualified(token: str, before: str) -> bool:
    """A number that qualifies a failure: after a limit, size, maximum ... word, or a status after HTTP or ->."""
    number = _NUMBER.match(token)
    if number is None:
        return False
    value = number.group("value")
    if re.fullmatch(r"[1-5]\d\d", value) and _STATUS_CONTEXT.search(before[-16:]):
        return True
    return any(_QUALIFIER.search(word) for word in _WORD.findall(before[-40:])[-2:])


def _label(before: str) -> str:
    words = _WORD.findall(before[-40:])
    return words[-1].rstrip(".") if words else ""


def number_of(value: str) -> tuple[float, str] | None:
    """`30000ms` -> (30000.0, "ms"), `152` -> (152.0, ""); None for anything that is not a number with a unit."""
    found = _NUMBER.match(value)
    if found is None:
        return None
    return float(found.group("value")), found.group("unit")


def slot_shape(values: list[str]) -> str:
    """How a varying slot is shown: `<n>`, `<n>ms`, `<uuid>`, `<ip>`, `<time>`, `<hex>`, or `<id>` for a mix."""
    numbers = [number_of(v) for v in values]
    if all(n is not None for n in numbers):
        units = {n[1] for n in numbers if n is not None}
        return f"<n>{units.pop()}" if len(units) == 1 else "<n>"
    kinds = {_kind(v) for v in values}
    return f"<{kinds.pop()}>" if len(kinds) == 1 else "<id>"


def _kind(value: str) -> str:
    match = _TOKENS.fullmatch(value)
    if match is not None and match.lastgroup in ("stamp", "uuid", "ip"):
        return {"stamp": "time", "uuid": "uuid", "ip": "ip"}[match.lastgroup]
    return "hex" if _LONG_HEX.match(value) or re.fullmatch(r"[0-9a-f]{8,}", value) else "id"
