"""query_logs: counts by level, clustered error signatures, then the newest lines, from any LogSource.

The sources live in tools/logs/sqlite.py (SQLite FTS5, the embedded default), tools/logs/elastic.py
(Elasticsearch) and tools/logs/loki.py; the first two are re-exported here. The tool builds a LogSummary
(tools/logs/summary.py) and renders the model's text from it (tools/logs/render.py).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
from collections.abc import Callable
from typing import Any

from tools.base import ToolError, ToolResult, ToolSpec, tool
from tools.choices import CachedNames, choice_or_error
from tools.logs.contrast import onset_contrast, warn_block
from tools.logs.elastic import ElasticsearchLogs
from tools.logs.model import (
    LEVELS,
    LogEntry,
    LogFields,
    LogQuery,
    LogResult,
    LogSource,
    describe_terms,
    level_from_text,
    search_text_from_query,
)
from tools.logs.render import render_logs
from tools.logs.sqlite import SqliteLogs
from tools.logs.summary import (
    LogSummary,
    OnsetContrast,
    SignatureBlock,
    cluster_signatures,
    newest_lines,
    signature_block,
    signature_of,
    trim_stack,
)
from tools.timerange import Clock, TimeWindow, instant_from_text, utc_now, window_from_args

__all__ = [
    "ElasticsearchLogs",
    "LogFields",
    "LogSource",
    "LogTools",
    "SqliteLogs",
    "cluster_signatures",
    "log_summary",
    "signature_of",
    "trim_stack",
]


class LogTools:
    """The query_logs tool over one LogSource."""

    def __init__(
        self,
        source: LogSource,
        *,
        default_limit: int = 100,
        max_limit: int = 1_000,
        services_ttl_s: float = 60.0,
        clock: Clock = utc_now,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        # Secrets go BEFORE signatures are built: a template's <n> would break a key's shape for any later redactor.
        self.source: LogSource = RedactedLogs(source, redact) if redact is not None else source
        self.default_limit = default_limit
        self.max_limit = max_limit
        self.clock = clock
        self._services = CachedNames(source.services, services_ttl_s)

    def specs(self) -> list[ToolSpec]:
        """The query_logs tool."""
        text = _QUERY_LOGS_DOC.format(maximum=f"{self.max_limit:,}", levels="|".join(LEVELS))
        return [tool(self._query_logs_with_configured_limit(), description=text)]

    def _query_logs_with_configured_limit(self) -> Callable[..., ToolResult | str]:
        """query_logs whose schema shows the configured default limit (the method's own default is 100)."""
        method = self.query_logs

        def query_logs(*args: Any, **kwargs: Any) -> ToolResult | str:
            return method(*args, **kwargs)

        functools.update_wrapper(query_logs, method)
        signature = inspect.signature(method)
        params = [
            p.replace(default=self.default_limit) if p.name == "limit" else p for p in signature.parameters.values()
        ]
        query_logs.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        return query_logs

    def query_logs(
        self,
        service: str,
        query: str = "",
        level: str = "",
        range: str = "1h",
        start: str = "",
        end: str = "",
        limit: int = 100,
        onset: str = "",
    ) -> ToolResult:
        """Run query_logs (the description shown to the model is _QUERY_LOGS_DOC)."""
        now = self.clock()
        log_query = self._log_query(service, query, level, window_from_args(range, start, end, now), limit)
        result = self.source.search(log_query)
        warnings = warn_block(self.source, log_query)
        contrast = onset_contrast(self.source, log_query, instant_from_text(onset, now)) if onset.strip() else None
        summary = log_summary(log_query, result, warnings, contrast)
        return ToolResult("ok" if result.total else "no_data", render_logs(summary), summary)

    def _log_query(self, service: str, query: str, level: str, window: TimeWindow, limit: int) -> LogQuery:
        if limit < 1 or limit > self.max_limit:
            raise ToolError(
                f"limit {limit:,} is out of range; ask for 1 to {self.max_limit:,} lines "
                "(narrow with level or query rather than asking for more)."
            )
        name = None if service.strip() in ("*", "") else self._known_service(service)
        levels = _levels_from_text(level)
        cluster = tuple(lv for lv in levels if lv in ("ERROR", "FATAL")) or levels or ("ERROR", "FATAL")
        text = search_text_from_query(query)
        return LogQuery(name, window.start, window.end, text, levels, limit, cluster)

    def _known_service(self, service: str) -> str:
        return choice_or_error(service, self._services.get(), "service", self.source.describe())


_QUERY_LOGS_DOC = """\
Search one service's application logs in a time window.
Use it once query_metrics showed WHEN something changed, to see WHAT failed and how often.
Legal values:
- service: as the logs name it; "*" = all
- query: words that must all appear, "quoted phrases", prefix*, a OR b; empty = all
- level: {levels}, comma-separated; empty = all
- range: <n>m|h|d ending at end (or now), or ISO "start/end"
- start, end: ISO 8601 UTC instead of range (2026-11-28T15:00Z); empty end = now
- limit: 1-{maximum} newest lines
- onset: ISO time in the window (when the metric changed): adds the signatures, any level, new after it
Returns: counts by level (and by error type where the logs have one); top ERROR then WARN signatures \
(count, first/last seen, one example, trimmed stack); with onset, the new ones; the newest lines up to limit, \
and how many matched."""


def redacted_result(result: LogResult, redact: Callable[[str], str]) -> LogResult:
    """The search result with every text field of every entry redacted (message, stack, logger, host)."""
    seen: dict[str, str] = {}  # a burst repeats its lines (a stack trace hundreds of times): each once per search

    def once(text: str) -> str:
        return seen[text] if text in seen else seen.setdefault(text, redact(text))

    def clean(entry: LogEntry) -> LogEntry:
        return dataclasses.replace(
            entry,
            message=once(entry.message),
            stack_trace=once(entry.stack_trace),
            logger=once(entry.logger),
            host=once(entry.host),
            error_type=once(entry.error_type),
        )

    return dataclasses.replace(
        result,
        entries=tuple(clean(e) for e in result.entries),
        cluster_entries=tuple(clean(e) for e in result.cluster_entries),
    )


class RedactedLogs:
    """A LogSource whose entries come back redacted, so every signature (ERROR, WARN, new since an onset) is built
    from redacted text."""

    def __init__(self, source: LogSource, redact: Callable[[str], str]) -> None:
        self._source, self._redact = source, redact

    def search(self, query: LogQuery) -> LogResult:
        return redacted_result(self._source.search(query), self._redact)

    def services(self) -> list[str]:
        return self._source.services()

    def describe(self) -> str:
        return self._source.describe()


def log_summary(
    query: LogQuery,
    result: LogResult,
    warnings: SignatureBlock | None = None,
    contrast: OnsetContrast | None = None,
) -> LogSummary:
    """What one search found: counts, the signatures at the cluster levels, the newest lines (repeats folded)."""
    clusters = result.cluster_entries
    return LogSummary(
        query.service,
        TimeWindow(query.start, query.end),
        describe_terms(query.text) if query.text.terms else "",
        query.levels,
        result.total,
        dict(result.counts_by_level),
        query.cluster_levels,
        signature_block(query.cluster_levels, clusters, result.cluster_total) if clusters else None,
        warnings,
        contrast,
        newest_lines(result.entries),
        dict(result.counts_by_error_type),
        result.notes,
    )


def _levels_from_text(text: str) -> tuple[str, ...]:
    levels = []
    for part in re.split(r"[,|\s]+", text.strip()):
        if not part:
            continue
        level = level_from_text(part)
        if level is None:
            raise ToolError(f"unknown level {part!r}; use one or more of {', '.join(LEVELS)}, or leave it empty.")
        levels.append(level)
    return tuple(dict.fromkeys(levels))
