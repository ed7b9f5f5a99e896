"""What query_logs found, as frozen values: counts by level, clustered signatures, what is new since an onset, and
the newest lines; and how lines are clustered into signatures.

A signature is a line's first message line with its numbers, ids, uuids, hex and IPs replaced, plus its exception
type. Code reads a LogSummary (tools/results.py finds it on a step); the model reads the text tools/logs/render.py
renders from it. Entries hold what the text shows: a message with its whitespace collapsed and cut at
MAX_LINE_CHARS, and (for an example) its stack cut to the exception line, the first frames and `Caused by:` lines.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import ClassVar

from tools.base import ToolData
from tools.logs.model import LogEntry
from tools.timerange import TimeWindow

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
    """One cluster of lines: its template, how many lines, when first and last seen, and its newest line."""

    template: str
    count: int
    first_at: datetime
    last_at: datetime
    example: LogEntry  # the newest line of the cluster, as shown (its stack is `stack`)
    stack: tuple[str, ...] = ()  # the example's trimmed stack: exception line, first frames, `Caused by:` lines


@dataclass(frozen=True)
class SignatureBlock:
    """The signatures of lines at `levels`, clustered from the newest `sampled` of `total` such lines."""

    levels: tuple[str, ...]
    sampled: int
    total: int
    distinct: int  # how many signatures the sample holds
    top: tuple[Signature, ...]  # the biggest, at most TOP_SIGNATURES

    @property
    def whole(self) -> bool:
        """Every line at these levels was clustered (so a signature's first time is really its first)."""
        return self.sampled >= self.total


@dataclass(frozen=True)
class OnsetContrast:
    """The window split at an onset: signatures (any level) after it that the part before it lacks."""

    onset: datetime
    before_sampled: int  # the newest lines before the onset that were compared
    after_sampled: int
    new: SignatureBlock | None  # None: every signature after the onset was there before it too


@dataclass(frozen=True)
class LogLine:
    """One of the newest lines, with the run of older lines of the same signature folded into it."""

    entry: LogEntry
    more: int = 0  # older lines just after it in the listing with the same signature
    back_to: datetime | None = None  # the oldest of them


@dataclass(frozen=True)
class LogSummary(ToolData):
    """What query_logs read from one service's (None: every service's) logs in a window."""

    kind: ClassVar[str] = "log_summary"
    service: str | None
    window: TimeWindow
    terms: str  # the search as it was run (`"timeout" pool*`), "" for all lines
    levels: tuple[str, ...]  # the level filter, () for every level
    total: int  # lines matching every filter
    counts_by_level: Mapping[str, int]  # ignoring the level filter
    cluster_levels: tuple[str, ...]  # the levels `signatures` clusters
    signatures: SignatureBlock | None  # None: no line at the cluster levels
    warnings: SignatureBlock | None = None  # WARN signatures, when WARN is not a cluster level and was asked for
    onset: OnsetContrast | None = None  # with an onset: what is new after it
    newest: tuple[LogLine, ...] = field(default=())  # newest first, repeats folded
    counts_by_error_type: Mapping[str, int] = field(default_factory=dict)  # the biggest, ignoring the level filter
    notes: tuple[str, ...] = ()  # what could not be checked as asked, said in the text

    @property
    def shown(self) -> int:
        """How many of the newest lines the listing covers (folded ones included)."""
        return sum(1 + line.more for line in self.newest)


def signature_of(entry: LogEntry) -> str:
    """The message's first line with numbers, ids, uuids, hex and IPs replaced, plus the exception type (the error
    type field's, else the stack's first line's)."""
    text = (entry.message.splitlines() or [""])[0]
    for pattern, token in _NORMALISERS:
        text = pattern.sub(token, text)
    text = " ".join(text.split())[:160]
    exception = entry.error_type.strip()
    if not exception and entry.stack_trace:
        exception = entry.stack_trace.split(":", 1)[0].split("\n", 1)[0].strip()
    return f"{text} [{exception}]" if exception and exception not in text else text


def cluster_signatures(entries: Sequence[LogEntry]) -> list[Signature]:
    """Group lines by their signature; biggest group first."""
    groups: dict[str, list[LogEntry]] = {}
    for entry in entries:
        groups.setdefault(signature_of(entry), []).append(entry)
    signatures = [_signature(key, group) for key, group in groups.items()]
    return sorted(signatures, key=lambda s: (-s.count, s.template))


def _signature(template: str, group: Sequence[LogEntry]) -> Signature:
    newest = max(group, key=_when)
    first = min(group, key=_when)
    return Signature(
        template, len(group), first.timestamp, newest.timestamp, shown_entry(newest), trim_stack(newest.stack_trace)
    )


def signature_block(levels: Sequence[str], entries: Sequence[LogEntry], total: int) -> SignatureBlock:
    """The top signatures of `entries` (the newest lines at `levels`, of `total` such lines)."""
    signatures = cluster_signatures(entries)
    return SignatureBlock(tuple(levels), len(entries), total, len(signatures), tuple(signatures[:TOP_SIGNATURES]))


def newest_lines(entries: Sequence[LogEntry]) -> tuple[LogLine, ...]:
    """One LogLine per entry, except that a run of lines with the same signature is folded into its first."""
    out: list[LogLine] = []
    run: list[LogEntry] = []
    for entry in [*entries, None]:
        if entry is not None and run and signature_of(entry) == signature_of(run[0]):
            run.append(entry)
            continue
        if run:
            back_to = run[-1].timestamp if len(run) > 1 else None
            out.append(LogLine(shown_entry(run[0]), len(run) - 1, back_to))
        run = [entry] if entry is not None else []
    return tuple(out)


def shown_entry(entry: LogEntry) -> LogEntry:
    """The entry as a line of the text shows it: message whitespace collapsed and cut, no stack."""
    message = " ".join(entry.message.split())
    if len(message) > MAX_LINE_CHARS:
        message = message[: MAX_LINE_CHARS - 1] + "…"
    return replace(entry, message=message, stack_trace="")


def trim_stack(stack: str) -> tuple[str, ...]:
    """The exception line, the first frames and every `Caused by:` line; then `… N more lines`."""
    lines = [line.rstrip() for line in stack.strip().splitlines() if line.strip()]
    if not lines:
        return ()
    kept = lines[: 1 + STACK_FRAMES] + [line for line in lines[1 + STACK_FRAMES :] if "Caused by" in line][:3]
    more = len(lines) - len(kept)
    return tuple(line.strip() for line in kept) + ((f"… {more} more lines",) if more else ())


def _when(entry: LogEntry) -> float:
    return entry.timestamp.timestamp()
