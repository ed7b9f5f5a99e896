"""query_logs: counts by level, clustered error signatures, then the newest lines, from any LogSource.

The sources live in tools/logs/sqlite.py (SQLite FTS5, the embedded default) and tools/logs/elastic.py
(Elasticsearch); both are re-exported here.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tools.base import ToolError, ToolResult, ToolSpec, tool
from tools.choices import CachedNames, choice_or_error
from tools.logs.contrast import onset_lines, warn_lines
from tools.logs.elastic import ElasticsearchLogs, LogFields
from tools.logs.model import (
    LEVELS,
    LogEntry,
    LogQuery,
    LogResult,
    LogSource,
    describe_terms,
    level_from_text,
    search_text_from_query,
)
from tools.logs.sqlite import SqliteLogs
from tools.timerange import Clock, TimeWindow, instant_from_text, utc_now, window_from_args

__all__ = ["ElasticsearchLogs", "LogFields", "LogSource", "LogTools", "SqliteLogs", "signature_of"]

TOP_SIGNATURES = 5
STACK_FRAMES = 3
MAX_LINE_CHARS = 240
_NORMALISERS = (
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I), "<uuid>"),
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?\b"), "<ip>"),
    (re.compile(r"\b0x[0-9a-f]+\b|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b", re.I), "<hex>"),
    (re.compile(r"\d+(?:\.\d+)?"), "<n>"),
)


@dataclass(frozen=True)
class Signature:
    template: str
    count: int
    first: LogEntry
    last: LogEntry


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
    ) -> ToolResult | str:
        """Run query_logs (the description shown to the model is _QUERY_LOGS_DOC)."""
        now = self.clock()
        log_query = self._log_query(service, query, level, window_from_args(range, start, end, now), limit)
        result = self.source.search(log_query)
        clock = _seconds_clock(log_query)
        block = functools.partial(_signature_block, clock=clock)
        extra = warn_lines(self.source, log_query, block)
        if onset.strip():
            moment = instant_from_text(onset, now)
            extra += onset_lines(self.source, log_query, moment, clock, signature_of, block)
        text = render_logs(log_query, result, extra)
        return text if result.total else ToolResult("no_data", text)

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
Returns: counts by level; top ERROR then WARN signatures (count, first/last seen, one example, trimmed stack); \
with onset, the new ones; the newest lines up to limit, and how many matched."""


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


def render_logs(query: LogQuery, result: LogResult, extra: Sequence[str] = ()) -> str:
    """The observation: counts by level, top signatures, `extra` (WARN, new since an onset), newest lines."""
    window = TimeWindow(query.start, query.end)
    searched = f", query {describe_terms(query.text)}" if query.text.terms else ""
    levels = f", level {','.join(query.levels)}" if query.levels else ""
    lines = [f"logs of {query.service or 'every service'}, {window.describe()}{searched}{levels}"]
    counts = " · ".join(f"{lv} {n:,}" for lv, n in sorted(result.counts_by_level.items(), key=_level_order))
    lines.append(f"matched {result.total:,} lines · by level: {counts or 'none'}")
    clock = _seconds_clock(query)
    lines += _signature_lines(query, result, clock)
    lines += extra
    shown = len(result.entries)
    if shown:
        lines.append(f"newest {shown:,} of {result.total:,} matching lines (repeats folded):")
        lines += _newest_lines(result.entries, clock, every_service=query.service is None)
    return "\n".join(lines)


def _newest_lines(entries: Sequence[LogEntry], clock: str, *, every_service: bool) -> list[str]:
    """One line per entry, except that a run of lines with the same signature is folded into one note."""
    out: list[str] = []
    run: list[LogEntry] = []
    for entry in [*entries, None]:
        if entry is not None and run and signature_of(entry) == signature_of(run[0]):
            run.append(entry)
            continue
        if len(run) > 1:
            out.append(f"  … {len(run) - 1} more like this, back to {run[-1].timestamp:{clock}}")
        if entry is not None:
            # Trace ids are long and rarely useful line by line; the signature examples keep theirs.
            out.append(_entry_line(entry, clock, service=every_service, trace=False))
            run = [entry]
    return out


def _signature_lines(query: LogQuery, result: LogResult, clock: str) -> list[str]:
    label = "/".join(query.cluster_levels)
    if not result.cluster_entries:
        return [f"no {label} lines in this window."]
    return _signature_block(f"top {label} signatures", result.cluster_entries, result.cluster_total, clock=clock)


def _signature_block(title: str, entries: Sequence[LogEntry], total: int, *, clock: str) -> list[str]:
    """`<title> (5 of 12, all):` then per signature its count, first/last seen, one example and its stack."""
    signatures = cluster_signatures(entries)
    scope = f"from the newest {len(entries):,} of {total:,}" if len(entries) < total else "all"
    lines = [f"{title} ({min(TOP_SIGNATURES, len(signatures))} of {len(signatures)}, {scope}):"]
    for rank, sig in enumerate(signatures[:TOP_SIGNATURES], 1):
        seen = f"first {sig.first.timestamp:{clock}} last {sig.last.timestamp:{clock}}"
        lines.append(f"{rank}. {sig.count:,}x {sig.template}  {seen}")
        lines.append(f"   example: {_entry_line(sig.last, clock)}")
        lines += [f"     {frame}" for frame in trim_stack(sig.last.stack_trace)]
    return lines


def _seconds_clock(query: LogQuery) -> str:
    return TimeWindow(query.start, query.end).clock_format.replace("%H:%M", "%H:%M:%S")


def cluster_signatures(entries: Sequence[LogEntry]) -> list[Signature]:
    """Group lines by their normalised message (+ exception type); biggest group first."""
    groups: dict[str, list[LogEntry]] = {}
    for entry in entries:
        groups.setdefault(signature_of(entry), []).append(entry)
    signatures = [
        Signature(key, len(group), min(group, key=_when), max(group, key=_when)) for key, group in groups.items()
    ]
    return sorted(signatures, key=lambda s: (-s.count, s.template))


def signature_of(entry: LogEntry) -> str:
    """The message's first line with numbers, ids, uuids, hex and IPs replaced, plus the exception type."""
    text = (entry.message.splitlines() or [""])[0]
    for pattern, token in _NORMALISERS:
        text = pattern.sub(token, text)
    text = " ".join(text.split())[:160]
    exception = entry.stack_trace.split(":", 1)[0].split("\n", 1)[0].strip() if entry.stack_trace else ""
    return f"{text} [{exception}]" if exception and exception not in text else text


def trim_stack(stack: str) -> list[str]:
    """The exception line, the first frames and every `Caused by:` line; then `… N more lines`."""
    lines = [line.rstrip() for line in stack.strip().splitlines() if line.strip()]
    if not lines:
        return []
    kept = lines[: 1 + STACK_FRAMES] + [line for line in lines[1 + STACK_FRAMES :] if "Caused by" in line][:3]
    more = len(lines) - len(kept)
    return [line.strip() for line in kept] + ([f"… {more} more lines"] if more else [])


def _entry_line(entry: LogEntry, clock: str, *, service: bool = True, trace: bool = True) -> str:
    """One log line, compact: logger abbreviated the logback way, the service only when it varies."""
    message = " ".join(entry.message.split())
    if len(message) > MAX_LINE_CHARS:
        message = message[: MAX_LINE_CHARS - 1] + "…"
    who = [entry.service] if service else []
    where = " ".join(p for p in (*who, entry.host, _short_logger(entry.logger)) if p)
    trace_id = f" trace={entry.trace_id}" if trace and entry.trace_id else ""
    return f"{entry.timestamp:{clock}} {entry.level} {where}: {message}{trace_id}"


def _short_logger(logger: str) -> str:
    """`com.zaxxer.hikari.pool.HikariPool` -> `c.z.h.p.HikariPool`."""
    parts = logger.split(".")
    return ".".join([p[:1] for p in parts[:-1]] + parts[-1:]) if len(parts) > 2 else logger


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


def _level_order(item: tuple[str, int]) -> int:
    return LEVELS.index(item[0]) if item[0] in LEVELS else len(LEVELS)


def _when(entry: LogEntry) -> float:
    return entry.timestamp.timestamp()
