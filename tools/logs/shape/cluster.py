"""Lines grouped into signatures, and runs of alike lines folded, keeping what varied.

A line's signature key is its message's shape (tools/logs/shape/template.py: every slot `<*>`) plus its exception
type. A group shows each slot that held one value in all its lines as that value, and a varying one by its shape;
the numbers that varied (a slot's or a structured line's numeric field) are kept as first, last, lowest and highest,
so `/metrics rendered 45 MB` ×30 still shows the growth to 120 MB.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from tools.logs.model import LogEntry
from tools.logs.shape.template import MessageShape, message_shape, number_of, slot_shape
from tools.logs.summary import (
    TOP_SIGNATURES,
    LogLine,
    Signature,
    SignatureBlock,
    SlotRange,
    shown_entry,
    telling_fields,
    trim_stack,
)

MAX_NUMBERS = 4  # varying numbers kept per signature or fold
MAX_LISTED_VALUES = 3  # a slot with at most this many identifiers shows them ({eu-west-1b|eu-west-1c})
_SHAPES: dict[str, MessageShape] = {}  # a burst repeats its messages: each shaped once
_MAX_CACHED = 20_000


def shape_of(entry: LogEntry) -> MessageShape:
    """The shape of the entry's message (cached by text)."""
    text = entry.message
    found = _SHAPES.get(text)
    if found is None:
        if len(_SHAPES) >= _MAX_CACHED:
            _SHAPES.clear()
        found = _SHAPES[text] = message_shape(text)
    return found


def exception_of(entry: LogEntry) -> str:
    """The exception type: the error type field's, else the stack's first line's."""
    exception = entry.error_type.strip()
    if not exception and entry.stack_trace:
        exception = entry.stack_trace.split(":", 1)[0].split("\n", 1)[0].strip()
    return exception


def signature_key(entry: LogEntry) -> str:
    """What groups lines: the message's shape (slots as `<*>`) and the exception type."""
    return key_from_parts(shape_of(entry).key, exception_of(entry))


def key_from_parts(shape_key: str, exception: str) -> str:
    return f"{shape_key} [{exception}]" if exception and exception not in shape_key else shape_key


def cluster_signatures(entries: Sequence[LogEntry]) -> list[Signature]:
    """Group lines by their key; biggest group first (counts from these lines alone)."""
    groups: dict[str, list[LogEntry]] = {}
    for entry in entries:
        groups.setdefault(signature_key(entry), []).append(entry)
    signatures = [signature_from_group(key, group) for key, group in groups.items()]
    return sorted(signatures, key=lambda s: (-s.count, s.template))


def signature_from_group(key: str, group: Sequence[LogEntry]) -> Signature:
    """A signature of the lines `group` (any order), counted from them."""
    ordered = sorted(group, key=lambda e: e.timestamp)
    newest = ordered[-1]
    return Signature(
        template_of(ordered),
        len(ordered),
        ordered[0].timestamp,
        newest.timestamp,
        shown_entry(newest),
        trim_stack(newest.stack_trace),
        key,
        len(ordered),
        numbers_of(ordered),
    )


def signature_block(levels: Sequence[str], entries: Sequence[LogEntry], total: int) -> SignatureBlock:
    """The top signatures of `entries` (the newest lines at `levels`, of `total` such lines), counted from them."""
    signatures = cluster_signatures(entries)
    return SignatureBlock(tuple(levels), len(entries), total, len(signatures), tuple(signatures[:TOP_SIGNATURES]))


def template_of(ordered: Sequence[LogEntry]) -> str:
    """The group's message with each slot shown as its one value, a few identifiers, or its shape."""
    shapes = [shape_of(e) for e in ordered]
    first = shapes[0]
    columns = [[s.values[i] for s in shapes if len(s.values) == len(first.values)] for i in range(len(first.values))]
    shown, slot = [], 0
    for part in first.parts:
        if part is not None:
            shown.append(part)
            continue
        shown.append(_slot_text(columns[slot]))
        slot += 1
    text = " ".join("".join(shown).split())
    return key_from_parts(text, exception_of(ordered[-1]))


def template_by_shape(entry: LogEntry) -> str:
    """One line's message with every slot shown by its shape (`<n>ms`, `<uuid>`), never its value."""
    shape = shape_of(entry)
    values = iter(shape.values)
    shown = [part if part is not None else slot_shape([next(values)]) for part in shape.parts]
    return key_from_parts(" ".join("".join(shown).split()), exception_of(entry))


def _slot_text(values: list[str]) -> str:
    counts = Counter(values)
    if len(counts) == 1:
        return values[0]
    listed = [v for v, _ in counts.most_common()]
    if len(listed) <= MAX_LISTED_VALUES and all(any(c.isalpha() for c in v) for v in listed):
        return "{" + "|".join(listed) + "}"
    return slot_shape(values)


def numbers_of(ordered: Sequence[LogEntry]) -> tuple[SlotRange, ...]:
    """The numbers that vary across time-ordered lines: each numeric slot, then each numeric structured field."""
    shapes = [shape_of(e) for e in ordered]
    width = len(shapes[0].values)
    ranges = []
    for i in range(width):
        column = [s.values[i] for s in shapes if len(s.values) == width]
        ranges.append(_range(shapes[0].labels[i] or f"#{i + 1}", column))
    names = dict.fromkeys(k for e in ordered for k, _ in telling_fields(e.fields))
    for name in names:
        ranges.append(_range(name, [v for e in ordered for k, v in e.fields if k == name]))
    return tuple(r for r in ranges if r is not None)[:MAX_NUMBERS]


def _range(label: str, values: Sequence[str]) -> SlotRange | None:
    numbers = [number_of(v.strip('"')) for v in values]
    if len(values) < 2 or any(n is None for n in numbers):
        return None
    units = {n[1] for n in numbers if n is not None}
    series = [n[0] for n in numbers if n is not None]
    if len(units) != 1 or len(set(series)) == 1:
        return None
    return SlotRange(label, units.pop(), series[0], series[-1], min(series), max(series))


def newest_lines(entries: Sequence[LogEntry]) -> tuple[LogLine, ...]:
    """One LogLine per entry (newest first), except that a run of lines with the same key is folded into its first,
    keeping the numbers that varied across the run."""
    out: list[LogLine] = []
    run: list[LogEntry] = []
    for entry in [*entries, None]:
        if entry is not None and run and signature_key(entry) == signature_key(run[0]):
            run.append(entry)
            continue
        if run:
            out.append(_folded(run))
        run = [entry] if entry is not None else []
    return tuple(out)


def _folded(run: Sequence[LogEntry]) -> LogLine:
    if len(run) == 1:
        return LogLine(shown_entry(run[0]))
    return LogLine(shown_entry(run[0]), len(run) - 1, run[-1].timestamp, numbers_of(list(reversed(run))))


def keys_of(entries: Iterable[LogEntry]) -> set[str]:
    return {signature_key(e) for e in entries}
