"""The text query_logs shows the model, rendered from a LogSummary (tools/logs/summary.py).

`logs of order, <window>` · `matched N lines · by level: ERROR 256 · WARN 12` · `by error type: <type> 256` (when
the index has an error type field) · `top ERROR/FATAL signatures
(5 of 12, all):` with per signature `1. 256x <template>  first HH:MM:SS last HH:MM:SS`, one example line and its
trimmed stack · the same for WARN · `new since HH:MM ...` with an onset · `newest N of M matching lines (repeats
folded):` and the lines.
"""

from __future__ import annotations

from tools.logs.model import LEVELS, LogEntry
from tools.logs.summary import LogLine, LogSummary, OnsetContrast, Signature, SignatureBlock, shown_entry
from tools.timerange import TimeWindow


def render_logs(summary: LogSummary) -> str:
    """The observation: counts by level, top signatures, WARN and new-since-onset signatures, newest lines."""
    searched = f", query {summary.terms}" if summary.terms else ""
    levels = f", level {','.join(summary.levels)}" if summary.levels else ""
    lines = [f"logs of {summary.service or 'every service'}, {summary.window.describe()}{searched}{levels}"]
    lines.append(counts_line(summary))
    if summary.counts_by_error_type:
        lines.append(error_types_line(summary))
    lines += [f"not checked: {note}" for note in summary.notes]
    clock = seconds_clock(summary.window)
    if summary.signatures is None:
        lines.append(no_lines_line(summary))
    else:
        lines += block_lines(_title(summary.signatures), summary.signatures, clock)
    if summary.warnings is not None:
        lines += block_lines(_title(summary.warnings), summary.warnings, clock)
    if summary.onset is not None:
        lines += _onset_lines(summary.onset, clock)
    if summary.newest:
        lines.append(f"newest {summary.shown:,} of {summary.total:,} matching lines (repeats folded):")
        lines += [text for line in summary.newest for text in _newest(line, clock, summary.service is None)]
    return "\n".join(lines)


def counts_line(summary: LogSummary) -> str:
    """`matched 300 lines · by level: ERROR 256 · WARN 44`."""
    counts = " · ".join(f"{lv} {n:,}" for lv, n in sorted(summary.counts_by_level.items(), key=_level_order))
    return f"matched {summary.total:,} lines · by level: {counts or 'none'}"


def error_types_line(summary: LogSummary) -> str:
    """`by error type: java.sql.SQLTransientConnectionException 206 · java.net.SocketTimeoutException 3`."""
    ranked = sorted(summary.counts_by_error_type.items(), key=lambda item: (-item[1], item[0]))
    return "by error type: " + " · ".join(f"{name} {n:,}" for name, n in ranked)


def block_lines(title: str, block: SignatureBlock, clock: str) -> list[str]:
    """`<title> (5 of 12, all):` then per signature its count, first/last seen, one example and its stack."""
    scope = "all" if block.whole else f"from the newest {block.sampled:,} of {block.total:,}"
    lines = [f"{title} ({len(block.top)} of {block.distinct}, {scope}):"]
    for rank, sig in enumerate(block.top, 1):
        lines += [signature_line(rank, sig, clock), example_line(sig, clock), *(f"     {f}" for f in sig.stack)]
    return lines


def signature_line(rank: int, sig: Signature, clock: str) -> str:
    """`1. 256x <template>  first 15:05:04 last 16:04:57`."""
    return f"{rank}. {signature_text(sig, clock)}"


def signature_text(sig: Signature, clock: str) -> str:
    """A signature as its line shows it, without its rank: `256x <template>  first 15:05:04 last 16:04:57`."""
    return f"{sig.count:,}x {sig.template}  first {sig.first_at:{clock}} last {sig.last_at:{clock}}"


def example_line(sig: Signature, clock: str) -> str:
    """`   example: <the signature's newest line>` (indented under its signature)."""
    return f"   example: {entry_line(sig.example, clock)}"


def no_lines_line(summary: LogSummary) -> str:
    """`no ERROR/FATAL lines in this window.`: what the text says when no line is at the levels it clusters."""
    return f"no {'/'.join(summary.cluster_levels)} lines in this window."


def entry_line(entry: LogEntry, clock: str, *, service: bool = True, trace: bool = True) -> str:
    """One log line, compact: logger abbreviated the logback way, the service only when it varies."""
    message = shown_entry(entry).message
    who = [entry.service] if service else []
    where = " ".join(p for p in (*who, entry.host, _short_logger(entry.logger)) if p)
    trace_id = f" trace={entry.trace_id}" if trace and entry.trace_id else ""
    return f"{entry.timestamp:{clock}} {entry.level} {where}: {message}{trace_id}"


def seconds_clock(window: TimeWindow) -> str:
    """strftime for a log line's time in the window: HH:MM:SS (with the date when the window crosses midnight)."""
    return window.clock_format.replace("%H:%M", "%H:%M:%S")


def _title(block: SignatureBlock) -> str:
    return f"top {'/'.join(block.levels)} signatures"


def _onset_lines(contrast: OnsetContrast, clock: str) -> list[str]:
    span = f"the {contrast.before_sampled:,} newest lines before it, {contrast.after_sampled:,} after"
    if contrast.new is None:
        return [f"new since {contrast.onset:{clock}}: no signature after it is absent before it (from {span})."]
    header = f"new since {contrast.onset:{clock}}, at any level, absent before it (from {span}):\nnew signatures"
    return block_lines(header, contrast.new, clock)


def _newest(line: LogLine, clock: str, every_service: bool) -> list[str]:
    # Trace ids are long and rarely useful line by line; the signature examples keep theirs.
    shown = [entry_line(line.entry, clock, service=every_service, trace=False)]
    if line.more and line.back_to is not None:
        shown.append(f"  … {line.more} more like this, back to {line.back_to:{clock}}")
    return shown


def _short_logger(logger: str) -> str:
    """`com.zaxxer.hikari.pool.HikariPool` -> `c.z.h.p.HikariPool`."""
    parts = logger.split(".")
    return ".".join([p[:1] for p in parts[:-1]] + parts[-1:]) if len(parts) > 2 else logger


def _level_order(item: tuple[str, int]) -> int:
    return LEVELS.index(item[0]) if item[0] in LEVELS else len(LEVELS)
