"""What a log search asks for and gets back, the LogSource seam, and the safe search-term language.

The model writes plain search text. It is parsed here into terms (words, "quoted phrases", `word*`
prefixes, optionally joined by OR); each backend renders the terms in its own syntax with everything
quoted or escaped, so no input can become a Lucene or FTS5 syntax error or an injected operator.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

LEVELS = ("FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE")
# Other names loggers give the same levels (syslog, java.util.logging, .NET, Go's zap and logrus), in upper case.
LEVEL_ALIASES = {
    "WARNING": "WARN",
    "ERR": "ERROR",
    "SEVERE": "ERROR",
    "CRITICAL": "FATAL",
    "CRIT": "FATAL",
    "EMERG": "FATAL",
    "EMERGENCY": "FATAL",
    "ALERT": "FATAL",
    "PANIC": "FATAL",
    "DPANIC": "FATAL",
    "INFORMATION": "INFO",
    "NOTICE": "INFO",
    "DBG": "DEBUG",
    "FINE": "DEBUG",
    "TRC": "TRACE",
    "FINEST": "TRACE",
    "VERBOSE": "TRACE",
}
_SEVERITY_NUMBERED = re.compile(r"^([A-Z]+)[2-4]$")  # OpenTelemetry's short names: ERROR2, INFO4 ...
MAX_TERMS = 24  # every backend takes this many terms in one query; more are dropped and the search says which
_TOKEN = re.compile(r'"([^"]*)"?|(\S+)')
_EDGE_JUNK = re.compile(r"^[^\w]+|[^\w]+$")


@dataclass(frozen=True)
class SearchTerm:
    text: str
    prefix: bool = False  # `timeout*`


@dataclass(frozen=True)
class SearchText:
    terms: tuple[SearchTerm, ...] = ()
    any_of: bool = False  # terms joined by OR instead of AND
    changes: tuple[str, ...] = ()  # what the search did not run as written (terms dropped, operators ignored)


@dataclass(frozen=True)
class LogQuery:
    service: str | None  # None = every service
    start: datetime
    end: datetime
    text: SearchText = field(default_factory=SearchText)
    levels: tuple[str, ...] = ()  # empty = every level
    limit: int = 100
    cluster_levels: tuple[str, ...] = ("ERROR", "FATAL")
    cluster_sample: int = 500
    namespace: str = ""  # "" = every namespace
    trace_id: str = ""  # lines that carry this trace id, in the trace field or in the message
    where: tuple[tuple[str, str], ...] = ()  # field = value, each required (a structured line's or the document's)
    oldest_sample: int = 0  # also read this many of the oldest lines at the cluster levels


@dataclass(frozen=True)
class LogEntry:
    timestamp: datetime
    service: str
    level: str
    message: str
    logger: str = ""
    host: str = ""
    trace_id: str = ""
    stack_trace: str = ""
    error_type: str = ""  # ECS error.type, OpenTelemetry exception.type: the exception's class
    namespace: str = ""  # the Kubernetes namespace, where the logs carry one
    fields: tuple[tuple[str, str], ...] = ()  # the document's other fields and a structured line's, as text
    line: str = ""  # the whole line as stored, when `message` was read out of a structured (JSON, logfmt) line


@dataclass(frozen=True)
class LogFields:
    """Where a log document keeps each field (a dotted name reads a nested object, ECS `log.level`); the defaults
    are plain JSON logs' names, ECS and OpenTelemetry names come from the configuration (or `opsbot init`)."""

    timestamp: str = "@timestamp"
    service: str = "service"
    level: str = "level"
    message: str = "message"
    stack_trace: str = "stack_trace"
    trace_id: str = "trace_id"
    logger: str = "logger"
    host: str = "host"
    error_type: str = "error.type"
    namespace: str = "namespace"  # a document field, or in Loki a stream label of that name
    line_message: str = ""  # the message key inside a structured (JSON, logfmt) line; "" = message, msg, event ...


@dataclass(frozen=True)
class LogResult:
    counts_by_level: Mapping[str, int]  # ignoring the level filter, so the model sees the whole mix
    total: int  # lines matching every filter
    entries: tuple[LogEntry, ...]  # newest first, at most `limit`
    cluster_total: int  # lines at the cluster levels
    cluster_entries: tuple[LogEntry, ...]  # newest first, at most `cluster_sample`
    counts_by_error_type: Mapping[str, int] = field(default_factory=dict)  # the biggest, ignoring the level filter
    notes: tuple[str, ...] = ()  # what the source could not check as asked (a configured field it does not have)
    cluster_oldest: tuple[LogEntry, ...] = ()  # oldest first, at most `oldest_sample`


@dataclass(frozen=True)
class Frame:
    """Buckets over a window: `count` buckets of `step_s` seconds from `start` (the last may end past the window)."""

    start: datetime
    step_s: int
    count: int

    def index(self, moment: datetime) -> int:
        """The bucket a moment falls in, clamped to the frame."""
        return max(0, min(self.count - 1, int((moment - self.start).total_seconds() // self.step_s)))


@dataclass(frozen=True)
class Probe:
    """A signature a backend is asked to count: its key (what SQLite's grouping computes exactly) and the runs of
    words between its slots (what Elasticsearch and Loki can match: every run must appear, in order of words)."""

    key: str
    phrases: tuple[str, ...]


@dataclass(frozen=True)
class KeyCount:
    """One signature's lines over the whole window."""

    count: int
    first_at: datetime
    last_at: datetime
    buckets: tuple[int, ...]  # per bucket of the frame


@dataclass(frozen=True)
class KeyCounts:
    """What a backend counted for signatures: per key, and whether it matched keys exactly (SQLite computes each
    line's key) or by the words of each probe (which may also match lines of another shape with the same words).
    `found` are signatures the backend found itself beyond the probes, with their newest line."""

    by_key: Mapping[str, KeyCount]
    exact: bool
    found: Mapping[str, LogEntry] = field(default_factory=dict)
    distinct: int | None = None  # how many signatures the whole window holds, when the backend knows


Prepare = Callable[[LogEntry], LogEntry]


class LogSource(Protocol):
    """A read-only log backend."""

    def search(self, query: LogQuery) -> LogResult:
        """Counts, the newest matching lines, and a sample of lines at the cluster levels."""
        ...

    def histogram(self, query: LogQuery, frame: Frame) -> dict[str, tuple[int, ...]]:
        """Lines per bucket of `frame` by level (every level: the level filter is not applied), from the backend's
        own aggregation over the whole window."""
        ...

    def count_keys(
        self, query: LogQuery, probes: Sequence[Probe], frame: Frame, prepare: Prepare | None = None
    ) -> KeyCounts:
        """Count, first and last seen, and lines per bucket of each probe's lines at the query's cluster levels,
        over the whole window. A backend that computes keys itself computes them on `prepare(line)`: the line as
        the tool reads it (redacted, its structured line read), so its keys are the tool's."""
        ...

    def services(self) -> list[str]:
        """Every service that has logs."""
        ...

    def describe(self) -> str:
        """Where the logs come from, for error messages."""
        ...


def search_text_from_query(text: str) -> SearchText:
    """Parse model text into at most MAX_TERMS safe terms. Operators other than OR are ignored, and the result
    says so, as it says which terms beyond MAX_TERMS were dropped: a search is complete or names what it left out."""
    terms: list[SearchTerm] = []
    operators: Counter[str] = Counter()
    for match in _TOKEN.finditer(text):
        phrase, word = match.group(1), match.group(2)
        operator = _EDGE_JUNK.sub("", word) if word else ""
        if operator in ("OR", "AND", "NOT") or word in ("||", "&&"):
            operators[{"||": "OR", "&&": "AND"}.get(word, operator)] += 1
            continue
        if word and word.startswith("-") and len(word) > 1:
            operators["NOT"] += 1
        for term in _terms_from_token(phrase if phrase is not None else word, is_phrase=phrase is not None):
            if term not in terms:
                terms.append(term)
    any_of = operators["OR"] > 0 and len(terms) > 1
    changes = _operator_notes(operators, any_of, len(terms))
    if len(terms) > MAX_TERMS:
        dropped = " ".join(_term_text(t) for t in terms[MAX_TERMS:])
        changes.append(f"searched the first {MAX_TERMS} of {len(terms)} terms; dropped: {dropped}")
    return SearchText(tuple(terms[:MAX_TERMS]), any_of, tuple(changes))


def _operator_notes(operators: Counter[str], any_of: bool, terms: int) -> list[str]:
    notes = []
    if operators["NOT"]:
        notes.append("NOT and -word are not supported: the negated words were searched as words")
    if any_of and (operators["AND"] or operators["OR"] < terms - 1):
        notes.append("one OR joins every term (no grouping): lines with any one term match")
    return notes


def _term_text(term: SearchTerm) -> str:
    return f"{term.text}*" if term.prefix else (f'"{term.text}"' if " " in term.text else term.text)


def _terms_from_token(token: str, *, is_phrase: bool) -> list[SearchTerm]:
    prefix = not is_phrase and token.endswith("*")
    cleaned = _EDGE_JUNK.sub("", token).strip()
    if not any(ch.isalnum() for ch in cleaned):
        return []
    if prefix:  # a prefix is one plain word (else an operator in some backend): `backup-verify*` is backup, verify*
        words = re.findall(r"\w+", cleaned)
        return [SearchTerm(word, False) for word in words[:-1]] + [SearchTerm(words[-1], True)]
    return [SearchTerm(" ".join(cleaned.split()), False)]


def level_from_text(text: str) -> str | None:
    """`warning` -> `WARN`, `Error` -> `ERROR`, OpenTelemetry's `ERROR2` -> `ERROR`; None for an unknown level."""
    upper = text.strip().upper()
    numbered = _SEVERITY_NUMBERED.match(upper)
    if numbered and numbered.group(1) in LEVELS:
        return numbered.group(1)
    upper = LEVEL_ALIASES.get(upper, upper)
    return upper if upper in LEVELS else None


def level_names(level: str) -> tuple[str, ...]:
    """Every upper-case name a logger may write for `level`: `ERROR` -> ERROR, ERR, SEVERE, ERROR2 .. ERROR4."""
    aliases = [alias for alias, canonical in LEVEL_ALIASES.items() if canonical == level]
    return (level, *aliases, *(f"{level}{n}" for n in (2, 3, 4)))


def level_spellings(level: str) -> tuple[str, ...]:
    """The names of `level` in the three cases loggers write them (ERROR, error, Error), for exact-match stores."""
    return tuple(dict.fromkeys(form for name in level_names(level) for form in (name, name.lower(), name.title())))


def describe_terms(text: SearchText) -> str:
    """The parsed search, as the observation repeats it (so the model sees what was really searched)."""
    joiner = " OR " if text.any_of else " "
    return joiner.join(f'"{t.text}"' if not t.prefix else f"{t.text}*" for t in text.terms)
