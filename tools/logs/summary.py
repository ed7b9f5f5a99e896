"""What query_logs found, as frozen values: counts by level, a count histogram, signatures (errors, warnings, new since
an onset) with their counts, first and last seen and numbers, the newest lines, and the whole lines asked for.

Lines are grouped into signatures by tools/logs/shape/cluster.py; the counts and first/last seen come from the
backend's aggregation over the whole window where it can count them (tools/logs/counting/), else from the lines
sampled, and each block says which. Code reads a LogSummary (tools/results.py finds it on a step); the model reads the
text tools/logs/render.py renders from it. Entries hold what the text shows: a message with its whitespace collapsed
and cut at MAX_LINE_CHARS (its head and its tail), and for an example its stack cut to the exception line, the first
frames and `Caused by:` lines.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, ClassVar, Literal

from tools.base import ToolData
from tools.logs.model import LogEntry
from tools.timerange import TimeWindow

if TYPE_CHECKING:  # the detectors (numpy) load with the first histogram analysed
    from tools.analysis.changepoints import ChangePoint

TOP_SIGNATURES = 5
STACK_FRAMES = 3
MAX_LINE_CHARS = 320
_TAIL_CHARS = 100  # a cut line keeps its end too: the field or frame that matters often comes last
ERROR_LEVELS = ("ERROR", "FATAL")
Counted = Literal["window", "words", "sample"]
# The keys a structured line uses for what the line's prefix already shows (tools/logs/shape/structured.py reads
# the level, stack, trace and error type out of them); an example leaves them out.
LEVEL_KEYS = ("level", "lvl", "severity", "loglevel", "log.level", "severity_text", "levelname")
STACK_KEYS = ("stack_trace", "stacktrace", "stack", "exception.stacktrace", "error.stack_trace", "exc_info")
TRACE_KEYS = ("trace_id", "traceId", "trace.id", "trace", "dd.trace_id")
ERROR_TYPE_KEYS = ("error.type", "error_type", "exception.type", "exception_class", "exc_type")
BOILERPLATE = frozenset(
    {
        *("timestamp", "@timestamp", "time", "ts", "t", "date", "datetime", "service", "service.name", "app"),
        *("logger", "logger_name", "log.logger", "caller", "source", "thread", "thread_name", "span_id", "spanId"),
        *("span.id", "host", "hostname", "pid", "file", "line", "func", "function", "module", "version", "@version"),
        *LEVEL_KEYS,
        *TRACE_KEYS,
        *STACK_KEYS,
    }
)
_ERROR_FIELD = re.compile(r"(error|exception|reason|cause|err)$", re.IGNORECASE)


@dataclass(frozen=True)
class SlotRange:
    """A number that varies across a signature's lines (or a fold's): its first and last value in time, its lowest
    and highest. `label` is the word before it (`waiting` in `waiting=152`) or a structured line's field name."""

    label: str
    unit: str
    first: float
    last: float
    low: float
    high: float


@dataclass(frozen=True)
class Signature:
    """One cluster of lines: its template, how many lines, when first and last seen, and its newest line.

    `template` shows a slot that never varies in the sampled lines as its value (`eu-west-1b`, `limit 2Gi`) and a
    varying one by its shape (`<n>ms`); `key` (every slot `<*>`) is what groups the lines. `counted` says where
    `count`, `first_at` and `last_at` come from: the backend's count of exactly these lines over the whole window
    ("window"), its count of the lines holding the signature's words over the whole window ("words": lines of
    another shape with the same words are counted too), or the sampled lines alone ("sample")."""

    template: str
    count: int
    first_at: datetime
    last_at: datetime
    example: LogEntry  # the newest line of the cluster, as shown (its stack is `stack`)
    stack: tuple[str, ...] = ()  # the example's trimmed stack: exception line, first frames, `Caused by:` lines
    key: str = ""
    sampled: int = 0  # its lines among those sampled: the template's values and `numbers` come from them
    numbers: tuple[SlotRange, ...] = ()  # the numbers that vary across the sampled lines
    counted: Counted = "sample"


@dataclass(frozen=True)
class SignatureBlock:
    """The signatures of lines at `levels`, found in `sampled` of `total` such lines (the newest, and with
    `oldest` the oldest too); `counted` says whether the counts cover the whole window (see Signature)."""

    levels: tuple[str, ...]
    sampled: int
    total: int
    distinct: int  # how many signatures the sample holds (or the whole window, when `distinct_whole`)
    top: tuple[Signature, ...]  # the biggest, at most TOP_SIGNATURES (or, new since an onset, the earliest first)
    oldest: int = 0  # of the sampled lines, how many are the window's oldest
    counted: Counted = "sample"
    distinct_whole: bool = False

    @property
    def whole(self) -> bool:
        """Counts and first/last seen cover every line at these levels (so a signature's first time is really its
        first): every line was sampled, or the backend counted over the whole window."""
        return self.sampled >= self.total or self.counted != "sample"


@dataclass(frozen=True)
class OnsetContrast:
    """The window split at an onset, less one rate window of tolerance (a line that began a minute before the metric
    moved belongs to it): signatures, any level, from `since` on that the baseline before `since` lacks."""

    onset: datetime
    before_sampled: int  # of the signatures after the onset, how many the baseline holds too
    after_sampled: int  # signatures after the onset that were compared
    new: SignatureBlock | None  # None: every signature after the onset was there before it too
    since: datetime | None = None  # the onset less the tolerance (None: the onset itself)
    baseline_start: datetime | None = None  # the baseline is [baseline_start, since)
    baseline_counted: bool = False  # absent from the baseline by the backend's count, not only from a sample


@dataclass(frozen=True)
class LogLine:
    """One of the newest lines, with the run of older lines of the same signature folded into it."""

    entry: LogEntry
    more: int = 0  # older lines just after it in the listing with the same signature
    back_to: datetime | None = None  # the oldest of them
    numbers: tuple[SlotRange, ...] = ()  # what varied across the folded lines, oldest to newest


@dataclass(frozen=True)
class LogHistogram:
    """Lines per bucket over the window, from the backend's aggregation: by level (every level, whatever the level
    filter), and per top signature (by key). `changes` are the change points in the lines at ERROR and FATAL: the
    onset in the logs. A series like any metric's, so a detector can run on it again (`series`)."""

    start: datetime
    step_s: int
    by_level: Mapping[str, tuple[int, ...]]
    by_signature: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    changes: tuple[ChangePoint, ...] = ()

    @property
    def buckets(self) -> int:
        return max((len(v) for v in self.by_level.values()), default=0)

    def times(self) -> tuple[datetime, ...]:
        """Each bucket's start."""
        return tuple(self.start + timedelta(seconds=self.step_s * i) for i in range(self.buckets))

    def at_levels(self, levels: Sequence[str] = ERROR_LEVELS) -> tuple[int, ...]:
        """Lines per bucket at any of `levels`."""
        rows = [self.by_level[lv] for lv in levels if lv in self.by_level]
        return tuple(sum(column) for column in zip(*rows, strict=True)) if rows else (0,) * self.buckets

    def per_minute(self, counts: Sequence[int]) -> tuple[float, ...]:
        """A bucket series as lines per minute (the error-log rate a detector reads like a metric)."""
        return tuple(n * 60.0 / self.step_s for n in counts)

    def series(self, levels: Sequence[str] = ERROR_LEVELS) -> tuple[tuple[datetime, ...], tuple[float, ...]]:
        """(times, lines per minute) at `levels`: the error-log rate by default."""
        return self.times(), self.per_minute(self.at_levels(levels))

    def signature_series(self, key: str) -> tuple[tuple[datetime, ...], tuple[float, ...]] | None:
        """(times, lines per minute) of one top signature (its Signature.key); None when it was not counted."""
        counts = self.by_signature.get(key)
        return (self.times(), self.per_minute(counts)) if counts is not None else None


@dataclass(frozen=True)
class TimestampDoubt:
    """Timestamps that cannot place events: every line within one second, or most sampled lines on one stamp (an
    ingest time, a default value). First/last seen, the histogram and any onset read from them mean nothing."""

    lines: int  # lines in the window
    spread_s: float  # between the first and the last of them
    same_stamp: int  # sampled lines that share the most common stamp
    sampled: int
    at: datetime  # that stamp


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
    namespace: str = ""  # the namespace filter ("" every namespace)
    where: tuple[tuple[str, str], ...] = ()  # the field filters
    trace_id: str = ""  # the trace followed (every service's lines that carry it, oldest first in `newest`)
    search_changes: tuple[str, ...] = ()  # what the search did not run as written (dropped terms, ignored NOT)
    histogram: LogHistogram | None = None
    timestamps: TimestampDoubt | None = None
    whole_lines: tuple[LogEntry, ...] = ()  # the newest matching lines in full, when asked for
    counts_by_service: Mapping[str, int] = field(default_factory=dict)  # with a trace or every service

    @property
    def shown(self) -> int:
        """How many of the newest lines the listing covers (folded ones included)."""
        return sum(1 + line.more for line in self.newest)


def telling_fields(fields: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """The fields an example keeps: those that carry a number or name an error, without the boilerplate."""
    return tuple(
        (k, v)
        for k, v in fields
        if k not in BOILERPLATE and v and (any(ch.isdigit() for ch in v) or _ERROR_FIELD.search(k))
    )


def shown_entry(entry: LogEntry) -> LogEntry:
    """The entry as a line of the text shows it: message whitespace collapsed and cut (its head and its tail kept),
    no stack, no whole line."""
    return replace(entry, message=cut_text(" ".join(entry.message.split()), MAX_LINE_CHARS), stack_trace="", line="")


def cut_text(text: str, limit: int) -> str:
    """`text` within `limit` characters: its head, `…`, and its last _TAIL_CHARS."""
    if len(text) <= limit:
        return text
    tail = min(_TAIL_CHARS, limit // 3)
    return text[: limit - tail - 1] + "…" + text[-tail:]


def trim_stack(stack: str) -> tuple[str, ...]:
    """The exception line, the first frames and every `Caused by:` line; then `… N more lines`."""
    lines = [line.rstrip() for line in stack.strip().splitlines() if line.strip()]
    if not lines:
        return ()
    kept = lines[: 1 + STACK_FRAMES] + [line for line in lines[1 + STACK_FRAMES :] if "Caused by" in line][:3]
    more = len(lines) - len(kept)
    return tuple(line.strip() for line in kept) + ((f"… {more} more lines",) if more else ())


def runs_text(counts: Sequence[int]) -> str:
    """Counts in order, a run of 3 or more equal ones as `value×run`: `0×14 8 16×15`."""
    parts: list[str] = []
    i = 0
    while i < len(counts):
        j = i
        while j < len(counts) and counts[j] == counts[i]:
            j += 1
        run = j - i
        parts += [f"{counts[i]}×{run}"] if run >= 3 else [str(counts[i])] * run
        i = j
    return " ".join(parts)


def step_text(step_s: int) -> str:
    for unit, size in (("d", 86_400), ("h", 3600), ("m", 60)):
        if step_s >= size and step_s % size == 0:
            return f"{step_s // size}{unit}"
    return f"{step_s}s"


def number_text(value: float) -> str:
    if value == int(value):
        return f"{int(value):,}"
    return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.3g}"
