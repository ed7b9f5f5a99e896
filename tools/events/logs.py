"""Operational events in the logs: DDL, manual database sessions, job starts, failovers, campaign launches.

One search over the log source (every service, every level) for the patterns' words, then each line is
classified by the patterns' regexes; repeats of one event (the same kind, service and message) fold into the
first, with a count.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from tools.analysis.events import DEFAULT_PATTERNS, EventPattern, OpsEvent, actor_of, kind_of
from tools.logs.model import LogEntry, LogQuery, LogSource, SearchTerm, SearchText
from tools.logs.shape.structured import read_structured

MAX_LINES = 300  # the newest lines that match the words; a window holds few events, many repeats of them
_VARYING = re.compile(r"\b(0x[0-9a-f]+|[0-9a-f]{8,}|\d+)\b", re.IGNORECASE)  # ids and numbers differ per repeat


class LogEvents:
    """The events in one log source, by patterns (tools/analysis/events.DEFAULT_PATTERNS unless configured)."""

    def __init__(self, source: LogSource, patterns: Sequence[EventPattern] = DEFAULT_PATTERNS) -> None:
        self.source, self.patterns = source, tuple(patterns)

    def events(self, services: Sequence[str], start: datetime, end: datetime) -> list[OpsEvent]:
        """The events of `services` (every service when empty) between start and end, oldest first."""
        words = dict.fromkeys(w for p in self.patterns for w in p.words)
        text = SearchText(tuple(SearchTerm(w) for w in words), any_of=True)
        wanted = set(services)
        result = self.source.search(LogQuery(None, start, end, text, levels=(), limit=MAX_LINES))
        found: dict[tuple[str, str, str], OpsEvent] = {}
        for entry in sorted(result.entries, key=lambda e: e.timestamp):
            if wanted and entry.service not in wanted:
                continue
            event = self._event(entry)
            if event is None:
                continue
            key = (event.kind, event.service, _VARYING.sub("#", entry.message))
            first = found.get(key)
            found[key] = event if first is None else OpsEvent(**{**first.__dict__, "count": first.count + 1})
        return sorted(found.values(), key=lambda e: e.at)

    def _event(self, stored: LogEntry) -> OpsEvent | None:
        entry = read_structured(stored)  # a JSON or logfmt line: its message, and its fields (the actor)
        matched = kind_of(entry.message, self.patterns)
        if matched is None:
            return None
        kind, phrase = matched
        what = " ".join(entry.message.split())[:160]
        actor = actor_of(entry.message, entry.fields)
        return OpsEvent(entry.timestamp, kind, entry.service, what, actor, "logs", phrase=" ".join(phrase.split()))
