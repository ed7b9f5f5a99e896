"""query_logs: counts by level, a count histogram, signatures counted over the whole window, then the newest lines,
from any LogSource; or every service's lines of one trace.

The sources live in tools/logs/sqlite.py (SQLite FTS5, the embedded default), tools/logs/elastic.py
(Elasticsearch) and tools/logs/loki.py; the first two are re-exported here. The tool reads a window through
tools/logs/counting/window.py into a LogSummary (tools/logs/summary.py) and renders the model's text from it
(tools/logs/render.py).
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

from tools.base import ToolError, ToolResult, ToolSpec, tool
from tools.choices import CachedNames, choice_or_error
from tools.logs.counting.window import Reading, read_window
from tools.logs.elastic import ElasticsearchLogs
from tools.logs.model import LEVELS, LogFields, LogQuery, LogSource, level_from_text, search_text_from_query
from tools.logs.render import render_logs
from tools.logs.shape.cluster import cluster_signatures, signature_key
from tools.logs.shape.prepared import PreparedLogs
from tools.logs.sqlite import SqliteLogs
from tools.logs.summary import trim_stack
from tools.timerange import Clock, TimeWindow, instant_from_text, utc_now, window_from_args

__all__ = [
    "ElasticsearchLogs",
    "LogFields",
    "LogSource",
    "LogTools",
    "SqliteLogs",
    "cluster_signatures",
    "signature_key",
    "trim_stack",
]

MAX_WHOLE_LINES = 5
_LEVEL_WORD = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,15}$")
_FIELD = re.compile(r"^\s*([A-Za-z_@][\w.@-]{0,63})\s*[=:]\s*(.+?)\s*$")
_TRACE = re.compile(r"^[\w.:-]{4,128}$")


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
        message_key: str = "",
        onset_tolerance_s: float = 300.0,
    ) -> None:
        # Lines come back redacted and with their structured line read: tools/logs/shape/prepared.py.
        self.source: LogSource = PreparedLogs(source, redact, message_key)
        self.default_limit = default_limit
        self.max_limit = max_limit
        self.clock = clock
        self.tolerance = timedelta(seconds=onset_tolerance_s)
        self._services = CachedNames(source.services, services_ttl_s)

    def specs(self) -> list[ToolSpec]:
        """The query_logs tool."""
        minutes = f"{self.tolerance.total_seconds() / 60:g}"
        text = _QUERY_LOGS_DOC.format(
            maximum=f"{self.max_limit:,}", levels="|".join(LEVELS), whole=MAX_WHOLE_LINES, tolerance=minutes
        )
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
        namespace: str = "",
        where: str = "",
        trace_id: str = "",
        full: int = 0,
    ) -> ToolResult:
        """Run query_logs (the description shown to the model is _QUERY_LOGS_DOC)."""
        now = self.clock()
        window = window_from_args(range, start, end, now)
        log_query = self._log_query(service, query, level, window, limit)
        log_query = _scoped(log_query, namespace, where, trace_id)
        if not 0 <= full <= MAX_WHOLE_LINES:
            raise ToolError(f"full {full} is out of range; ask for 0 to {MAX_WHOLE_LINES} whole lines.")
        moment = instant_from_text(onset, now) if onset.strip() else None
        summary = read_window(self.source, log_query, Reading(moment, full, self.tolerance))
        return ToolResult("ok" if summary.total else "no_data", render_logs(summary), summary)

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


def _scoped(query: LogQuery, namespace: str, where: str, trace_id: str) -> LogQuery:
    """The query narrowed to a namespace, field values and a trace (a trace is followed across every service)."""
    trace = trace_id.strip()
    if trace and not _TRACE.match(trace):
        raise ToolError(f"trace_id {trace_id!r} is not a trace id (4-128 letters, digits, '-', '_', '.', ':').")
    fields = tuple(_field_from_text(part) for part in re.split(r"[,;]", where) if part.strip())
    service = None if trace else query.service
    return replace(query, service=service, namespace=namespace.strip(), trace_id=trace, where=fields)


def _field_from_text(text: str) -> tuple[str, str]:
    match = _FIELD.match(text)
    if match is None:
        raise ToolError(
            f'where {text.strip()!r} is not field=value; write e.g. where="pod=order-7f9c-x2k4q, status=503".'
        )
    return match.group(1), match.group(2).strip("\"'")


_QUERY_LOGS_DOC = """\
Search one service's application logs in a time window, or follow one request through every service.
Use it once you know WHEN something changed, to see WHAT failed, since when and how often; with trace_id, every \
service's lines of one request.
Legal values:
- service: as the logs name it; "*" = all
- query: words that must all appear, "quoted phrases", prefix*, a OR b (one OR joins every term), up to 24 terms; \
empty = all
- level: {levels} or another level the counts show (HTTP, AUDIT), comma-separated; empty = all
- range: <n>s|m|h|d ending at end (or now), or ISO "start/end"
- start, end: ISO 8601 UTC instead of range, to the second (2026-11-28T15:00:05Z); empty end = now
- limit: 1-{maximum} newest lines
- onset: ISO time in the window (when the metric changed): adds the signatures, any level, that began after it \
(or up to {tolerance} min before) and are absent from the hour before
- namespace: a Kubernetes namespace; empty = all
- where: field=value pairs, comma-separated, on the documents' fields (pod, zone, version) or a structured \
(JSON, logfmt) line's (status=503)
- trace_id: a trace id: every service's lines that carry it (trace field or message), oldest first
- full: 0-{whole}: that many newest matching lines, whole (every field, no cut)
Returns: counts by level; matches per bucket with the change in errors; top ERROR then WARN signatures (count, \
first/last seen, one example, the numbers that vary); with onset, the new ones in the order they began; the newest \
lines up to limit, repeats folded."""


def _levels_from_text(text: str) -> tuple[str, ...]:
    """Known levels by any alias and case; any other level-like word as written (HTTP, RETRY, CONFIG): a level the
    data holds can always be filtered on."""
    levels = []
    for part in re.split(r"[,|\s]+", text.strip()):
        if not part:
            continue
        level = level_from_text(part)
        if level is None and not _LEVEL_WORD.match(part):
            raise ToolError(
                f"unknown level {part!r}; use one or more of {', '.join(LEVELS)}, or a level the counts show."
            )
        levels.append(level or part.upper())
    return tuple(dict.fromkeys(levels))
