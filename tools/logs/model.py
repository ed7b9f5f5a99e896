"""What a log search asks for and gets back, the LogSource seam, and the safe search-term language.

The model writes plain search text. It is parsed here into terms (words, "quoted phrases", `word*`
prefixes, optionally joined by OR); each backend renders the terms in its own syntax with everything
quoted or escaped, so no input can become a Lucene or FTS5 syntax error or an injected operator.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
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
MAX_TERMS = 12
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


@dataclass(frozen=True)
class LogResult:
    counts_by_level: Mapping[str, int]  # ignoring the level filter, so the model sees the whole mix
    total: int  # lines matching every filter
    entries: tuple[LogEntry, ...]  # newest first, at most `limit`
    cluster_total: int  # lines at the cluster levels
    cluster_entries: tuple[LogEntry, ...]  # newest first, at most `cluster_sample`
    counts_by_error_type: Mapping[str, int] = field(default_factory=dict)  # the biggest, ignoring the level filter
    notes: tuple[str, ...] = ()  # what the source could not check as asked (a configured field it does not have)


class LogSource(Protocol):
    """A read-only log backend."""

    def search(self, query: LogQuery) -> LogResult:
        """Counts, the newest matching lines, and a sample of lines at the cluster levels."""
        ...

    def services(self) -> list[str]:
        """Every service that has logs."""
        ...

    def describe(self) -> str:
        """Where the logs come from, for error messages."""
        ...


def search_text_from_query(text: str) -> SearchText:
    """Parse model text into at most MAX_TERMS safe terms. Operators other than OR are ignored."""
    terms: list[SearchTerm] = []
    any_of = False
    for match in _TOKEN.finditer(text):
        phrase, word = match.group(1), match.group(2)
        operator = _EDGE_JUNK.sub("", word) if word else ""
        if operator == "OR" or word == "||":
            any_of = True
            continue
        if operator in ("AND", "NOT") or word == "&&":
            continue
        term = _term_from_token(phrase if phrase is not None else word, is_phrase=phrase is not None)
        if term is not None and term not in terms:
            terms.append(term)
    return SearchText(tuple(terms[:MAX_TERMS]), any_of and len(terms) > 1)


def _term_from_token(token: str, *, is_phrase: bool) -> SearchTerm | None:
    prefix = not is_phrase and token.endswith("*")
    cleaned = _EDGE_JUNK.sub("", token).strip()
    if not any(ch.isalnum() for ch in cleaned):
        return None
    if prefix:  # a prefix is one plain word; anything else would be an operator in some backend
        cleaned = re.sub(r"[^\w]", "", cleaned)
    return SearchTerm(" ".join(cleaned.split()), prefix)


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
