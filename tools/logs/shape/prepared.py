"""A LogSource whose lines come back as the tool reads them: secrets redacted, then structured lines read.

Secrets go BEFORE signatures are built (a template's slot would break a key's shape for any later redactor), and
a structured (JSON, logfmt) line is read before it is grouped, so every signature (ERROR, WARN, new since an onset)
and every line shown is built from the redacted message field. The backend's own aggregations see the stored
lines; only the lines handed back pass through here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from tools.logs.model import Frame, KeyCounts, LogEntry, LogQuery, LogResult, LogSource, Prepare, Probe
from tools.logs.shape.structured import read_structured


class PreparedLogs:
    """`source` with every entry it returns redacted (when `redact` is given) and its structured line read."""

    def __init__(self, source: LogSource, redact: Callable[[str], str] | None = None, message_key: str = "") -> None:
        self._source, self._redact, self._message_key = source, redact, message_key

    def search(self, query: LogQuery) -> LogResult:
        result = self._source.search(query)
        prepare = self._preparer()
        return dataclasses.replace(
            result,
            entries=tuple(prepare(e) for e in result.entries),
            cluster_entries=tuple(prepare(e) for e in result.cluster_entries),
            cluster_oldest=tuple(prepare(e) for e in result.cluster_oldest),
        )

    def histogram(self, query: LogQuery, frame: Frame) -> dict[str, tuple[int, ...]]:
        return self._source.histogram(query, frame)

    def count_keys(
        self, query: LogQuery, probes: Sequence[Probe], frame: Frame, prepare: Prepare | None = None
    ) -> KeyCounts:
        # A backend that computes keys (SQLite) computes them on the lines as prepared here: else a secret that
        # redaction turns into words would give the same lines two keys, and count them twice.
        prepare = prepare or self._preparer()
        counts = self._source.count_keys(query, probes, frame, prepare)
        return dataclasses.replace(counts, found={k: prepare(e) for k, e in counts.found.items()})

    def services(self) -> list[str]:
        return self._source.services()

    def describe(self) -> str:
        return self._source.describe()

    def _preparer(self) -> Callable[[LogEntry], LogEntry]:
        """Redact, then read the structured line; each distinct text redacted once per call (a burst repeats a stack
        trace hundreds of times)."""
        redact = self._redact
        seen: dict[str, str] = {}

        def once(text: str) -> str:
            if redact is None or not text:
                return text
            return seen[text] if text in seen else seen.setdefault(text, redact(text))

        def prepare(entry: LogEntry) -> LogEntry:
            clean = dataclasses.replace(
                entry,
                message=once(entry.message),
                stack_trace=once(entry.stack_trace),
                logger=once(entry.logger),
                host=once(entry.host),
                error_type=once(entry.error_type),
                fields=tuple((k, once(v)) for k, v in entry.fields),
            )
            return read_structured(clean, self._message_key)

        return prepare
