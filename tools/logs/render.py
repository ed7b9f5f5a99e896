"""The text query_logs shows the model, rendered from a LogSummary (tools/logs/summary.py).

In order, most telling first (a cut observation keeps its head): `logs of order, <window to the second>`, what the
search did not run as written, `matched N lines · by level: …` (saying when the counts are before the level filter),
a doubt about the timestamps, the count histogram and its `change:` line, the signatures new since an onset, the
top ERROR/FATAL then WARN signatures (numbered on through the blocks: `1. 256x <template>  first … last …`, an
example with the fields that carry numbers, its trimmed stack, the numbers that vary), the whole lines asked for,
then the newest lines (repeats folded with their numbers), or a trace's lines oldest first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tools.logs.model import LEVELS, LogEntry
from tools.logs.summary import (
    ERROR_LEVELS,
    LogHistogram,
    LogLine,
    LogSummary,
    OnsetContrast,
    Signature,
    SignatureBlock,
    SlotRange,
    TimestampDoubt,
    number_text,
    runs_text,
    shown_entry,
    step_text,
    telling_fields,
)
from tools.timerange import TimeWindow, rough_duration

if TYPE_CHECKING:
    from tools.analysis.changepoints import ChangePoint

MAX_SHOWN_FIELDS = 4


def render_logs(summary: LogSummary) -> str:
    """The observation."""
    clock = seconds_clock(summary.window)
    lines = [_header(summary)]
    lines += [f"search: {change}" for change in summary.search_changes]
    lines.append(counts_line(summary))
    lines += _absent_levels(summary)
    if summary.counts_by_service:
        lines.append(services_line(summary))
    if summary.counts_by_error_type:
        lines.append(error_types_line(summary))
    lines += [f"not checked: {note}" for note in summary.notes]
    if summary.timestamps is not None:
        lines.append(timestamps_line(summary.timestamps, clock))
    if summary.histogram is not None:
        lines += histogram_lines(summary.histogram, summary.levels, clock, doubted=summary.timestamps is not None)
    if summary.onset is not None:
        lines += _onset_lines(summary.onset, clock)
    if summary.signatures is None and not summary.trace_id:
        lines.append(no_lines_line(summary))
    elif summary.signatures is not None:
        lines += block_lines(_title(summary.signatures), summary.signatures, clock)
    if summary.warnings is not None:
        lines += block_lines(_title(summary.warnings), summary.warnings, clock)
    lines += _listing(summary, clock)
    return "\n".join(lines)


def window_text(window: TimeWindow) -> str:
    """`2026-11-28 12:17:00 → 12:17:10 UTC (10s)`: to the second, as given."""
    same_day = window.start.date() == window.end.date()
    end = window.end.strftime("%H:%M:%S" if same_day else "%Y-%m-%d %H:%M:%S")
    seconds = window.seconds
    length = f"{seconds:g}s" if seconds < 120 else rough_duration(seconds)
    return f"{window.start:%Y-%m-%d %H:%M:%S} → {end} UTC ({length})"


def counts_line(summary: LogSummary) -> str:
    """`matched 300 lines · by level: ERROR 256 · WARN 44`; with a level filter the counts by level are said to be
    from before it."""
    counts = " · ".join(f"{lv} {n:,}" for lv, n in sorted(summary.counts_by_level.items(), key=_level_order))
    scope = "by level, before the level filter" if summary.levels else "by level"
    return f"matched {summary.total:,} lines · {scope}: {counts or 'none'}"


def _absent_levels(summary: LogSummary) -> list[str]:
    absent = [lv for lv in summary.levels if lv not in summary.counts_by_level]
    if not absent or summary.total:
        return []
    held = ", ".join(lv for lv, _ in sorted(summary.counts_by_level.items(), key=_level_order)) or "none"
    return [f"no line in the window is at {', '.join(absent)} (they are at {held})."]


def services_line(summary: LogSummary) -> str:
    listed = sum(summary.counts_by_service.values())
    scope = "" if listed >= summary.total else f" (in the {listed:,} lines listed)"
    return "by service" + scope + ": " + " · ".join(f"{s} {n:,}" for s, n in summary.counts_by_service.items())


def error_types_line(summary: LogSummary) -> str:
    """`by error type: java.sql.SQLTransientConnectionException 206 · java.net.SocketTimeoutException 3`."""
    ranked = sorted(summary.counts_by_error_type.items(), key=lambda item: (-item[1], item[0]))
    return "by error type: " + " · ".join(f"{name} {n:,}" for name, n in ranked)


def timestamps_line(doubt: TimestampDoubt, clock: str) -> str:
    if doubt.spread_s < 1.0:
        where = f"all {doubt.lines:,} lines sit within {doubt.spread_s:.1f} s ({doubt.at:{clock}})"
    else:
        where = f"{doubt.same_stamp:,} of {doubt.sampled:,} lines read share one timestamp ({doubt.at:{clock}})"
    meaning = "they cannot place events, so first/last seen, the counts per bucket and any onset from them mean nothing"
    return f"timestamps: {where}: {meaning}."


def histogram_lines(histogram: LogHistogram, levels: Sequence[str], clock: str, *, doubted: bool) -> list[str]:
    """Lines per bucket, every level and at the error levels (or the filtered ones), and the change in errors."""
    step = step_text(histogram.step_s)
    rows = [("all levels", histogram.at_levels(tuple(histogram.by_level)))]
    wanted = tuple(levels) or ERROR_LEVELS
    picked = histogram.at_levels(wanted)
    if any(picked) and tuple(histogram.by_level) != wanted:
        rows.append(("/".join(wanted), picked))
    shown = "; ".join(f"{name}: {runs_text(counts)}" for name, counts in rows)
    lines = [f"lines per {step} from {histogram.start:{clock}}, {shown}"]
    if not doubted:
        lines += [_change_line(change, histogram.step_s, step, clock) for change in histogram.changes]
    return lines


def _change_line(change: ChangePoint, step_s: int, step: str, clock: str) -> str:
    rate = 60.0 / step_s
    before, after = number_text(change.before * rate), number_text(change.after * rate)
    return f"change: ERROR/FATAL lines per minute {before} -> {after} in the {step} from {change.at:{clock}}"


def block_lines(title: str, block: SignatureBlock, clock: str) -> list[str]:
    """`<title> (5 of 12, …):` then per signature its count, first/last seen, one example, its stack and numbers."""
    lines = [f"{title} ({len(block.top)} of {block.distinct}{_scope(block)}):"]
    mixed = block.counted == "sample" and any(s.counted != "sample" for s in block.top)
    for rank, sig in enumerate(block.top, 1):
        only = "  (counted in the sample only)" if mixed and sig.counted == "sample" else ""
        lines += [signature_line(rank, sig, clock) + only, example_line(sig, clock)]
        lines += [f"     {frame}" for frame in sig.stack]
        if sig.numbers:
            lines.append(f"   numbers{_numbers_scope(block, sig)}: {numbers_text(sig.numbers)}")
    return lines


def _scope(block: SignatureBlock) -> str:
    sample = f"the newest {block.sampled - block.oldest:,}" + (f" and oldest {block.oldest:,}" if block.oldest else "")
    if block.sampled >= block.total:
        return f", all {block.total:,} lines"
    where = " in the window" if block.distinct_whole else f" in {sample} lines"
    if block.counted == "window" or (block.counted == "sample" and any(s.counted == "window" for s in block.top)):
        return f"{where}; counts, first and last seen over all {block.total:,} lines"
    if block.counted == "words":
        return f"{where}; counts, first and last seen over all {block.total:,} lines holding each one's words"
    return f", from {sample} of {block.total:,} lines"


def _numbers_scope(block: SignatureBlock, sig: Signature) -> str:
    return "" if sig.sampled >= sig.count else f" (in its {sig.sampled:,} sampled lines)"


def numbers_text(numbers: Sequence[SlotRange]) -> str:
    """`waiting 97 → 152 (low 1, high 160) · in 100ms → 129ms`."""
    parts = []
    for n in numbers:
        spread = f" (low {_as_written(n.low)}{n.unit}, high {_as_written(n.high)}{n.unit})"
        same = {n.first, n.last} == {n.low, n.high}
        first, last = f"{_as_written(n.first)}{n.unit}", f"{_as_written(n.last)}{n.unit}"
        parts.append(f"{n.label} {first} → {last}{'' if same else spread}")
    return " · ".join(parts)


def _as_written(value: float) -> str:
    """A number from a log line as the line writes it (no thousands separator)."""
    return str(int(value)) if value == int(value) else f"{value:g}"


def signature_line(rank: int, sig: Signature, clock: str) -> str:
    """`1. 256x <template>  first 15:05:04 last 16:04:57`."""
    return f"{rank}. {signature_text(sig, clock)}"


def signature_text(sig: Signature, clock: str) -> str:
    """A signature as its line shows it, without its rank: `256x <template>  first 15:05:04 last 16:04:57`."""
    return f"{sig.count:,}x {sig.template}  first {sig.first_at:{clock}} last {sig.last_at:{clock}}"


def example_line(sig: Signature, clock: str) -> str:
    """`   example: <the signature's newest line>` (indented under its signature)."""
    return f"   example: {example_text(sig.example, clock)}"


def no_lines_line(summary: LogSummary) -> str:
    """`no ERROR/FATAL lines in this window.`: what the text says when no line is at the levels it clusters."""
    return f"no {'/'.join(summary.cluster_levels)} lines in this window."


def example_text(entry: LogEntry, clock: str) -> str:
    """The example: its line, then the structured fields that carry numbers or an error (the boilerplate cut)."""
    fields = telling_fields(entry.fields)[:MAX_SHOWN_FIELDS]
    shown = " ".join(f"{k}={v}" for k, v in fields)
    return entry_line(entry, clock) + (f" · {shown}" if shown else "")


def entry_line(entry: LogEntry, clock: str, *, service: bool = True, trace: bool = True) -> str:
    """One log line, compact: logger abbreviated the logback way, the service only when it varies."""
    message = shown_entry(entry).message
    who = [entry.service] if service else []
    where = " ".join(p for p in (*who, entry.host, _short_logger(entry.logger)) if p)
    trace_id = f" trace={entry.trace_id}" if trace and entry.trace_id else ""
    return f"{entry.timestamp:{clock}} {entry.level} {where}: {message}{trace_id}"


def whole_line(entry: LogEntry, clock: str) -> str:
    """One line whole: the stored line (or message) uncut, every field, the stack as it is."""
    fields = " ".join(f"{k}={v}" for k, v in entry.fields if entry.line == "" or f'"{k}"' not in entry.line)
    text = entry.line or entry.message
    head = f"{entry.timestamp:{clock}} {entry.level} {entry.service} {entry.host}".rstrip()
    return (
        f"{head}: {text}"
        + (f"\n  fields: {fields}" if fields else "")
        + (f"\n  stack: {entry.stack_trace.strip()}" if entry.stack_trace.strip() else "")
    )


def seconds_clock(window: TimeWindow) -> str:
    """strftime for a log line's time in the window: HH:MM:SS (with the date when the window crosses midnight)."""
    return window.clock_format.replace("%H:%M", "%H:%M:%S")


def _header(summary: LogSummary) -> str:
    if summary.trace_id:
        head = f"trace {summary.trace_id} in every service's logs, {window_text(summary.window)}"
    else:
        head = f"logs of {summary.service or 'every service'}, {window_text(summary.window)}"
    extra = [
        f"query {summary.terms}" if summary.terms else "",
        f"level {','.join(summary.levels)}" if summary.levels else "",
        f"namespace {summary.namespace}" if summary.namespace else "",
        "where " + ", ".join(f"{k}={v}" for k, v in summary.where) if summary.where else "",
    ]
    return ", ".join([head, *(e for e in extra if e)])


def _title(block: SignatureBlock) -> str:
    return f"top {'/'.join(block.levels) or 'any level'} signatures"


def _onset_lines(contrast: OnsetContrast, clock: str) -> list[str]:
    since = contrast.since or contrast.onset
    early = "" if since == contrast.onset else f" (the onset {contrast.onset:{clock}} less one rate window)"
    base = f"{contrast.baseline_start:{clock}}" if contrast.baseline_start else "the window's start"
    head = f"new since {since:{clock}}{early}, any level, absent from {base}–{since:{clock}}"
    held = f"{contrast.before_sampled} of the {contrast.after_sampled} signatures after it were there before"
    if contrast.new is None:
        return [f"{head}: none ({held})."]
    return block_lines(f"{head}, in the order they began ({held}); new signatures", contrast.new, clock)


def _listing(summary: LogSummary, clock: str) -> list[str]:
    if summary.whole_lines:
        title = f"whole lines, the newest {len(summary.whole_lines)} of {summary.total:,}:"
        return [title, *(whole_line(e, clock) for e in summary.whole_lines)]
    if not summary.newest:
        return []
    every = summary.service is None
    if summary.trace_id:
        title = f"its {summary.shown:,} of {summary.total:,} lines, oldest first (repeats folded):"
        return [title, *(text for line in reversed(summary.newest) for text in _newest(line, clock, every, True))]
    title = f"newest {summary.shown:,} of {summary.total:,} matching lines (repeats folded):"
    return [title, *(text for line in summary.newest for text in _newest(line, clock, every, False))]


def _newest(line: LogLine, clock: str, every_service: bool, trace: bool) -> list[str]:
    # Trace ids are long and rarely useful line by line; the signature examples keep theirs.
    shown = [entry_line(line.entry, clock, service=every_service, trace=False)]
    if line.more and line.back_to is not None:
        numbers = f"; {numbers_text(line.numbers)}" if line.numbers else ""
        direction = "from" if trace else "back to"
        shown.append(f"  … {line.more} more like this, {direction} {line.back_to:{clock}}{numbers}")
    return shown


def _short_logger(logger: str) -> str:
    """`com.zaxxer.hikari.pool.HikariPool` -> `c.z.h.p.HikariPool`."""
    parts = logger.split(".")
    return ".".join([p[:1] for p in parts[:-1]] + parts[-1:]) if len(parts) > 2 else logger


def _level_order(item: tuple[str, int]) -> int:
    return LEVELS.index(item[0]) if item[0] in LEVELS else len(LEVELS)
