"""Two more readings of a log window for query_logs: WARN signatures, and what is new since an onset.

WARN lines carry what an ERROR cluster does not: lock waits, a DDL statement, "starting nightly job". They
get their own section, so a flood of them never crowds errors out of the error sample.

Given an onset (when the metrics changed), the window is split there: a signature at any level that appears
after the onset and not before it is new, the kind of line that names what changed ("reindex-products
started", "feature flag X enabled"). Both halves are sampled (newest CONTRAST_SAMPLE lines each), and the
section says so. The signatures themselves are formed and rendered by tools/logs/query.py, passed in as `block`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime

from tools.base import ToolError
from tools.logs.model import LEVELS, LogEntry, LogQuery, LogSource

CONTRAST_SAMPLE = 1_000
# (header, entries, how many lines they were sampled from) -> the section's lines
Block = Callable[[str, Sequence[LogEntry], int], list[str]]


def warn_lines(source: LogSource, query: LogQuery, block: Block) -> list[str]:
    """`top WARN signatures (...)`, or nothing when the query asked for levels without WARN or had none."""
    if (query.levels and "WARN" not in query.levels) or "WARN" in query.cluster_levels:
        return []
    result = source.search(replace(query, limit=1, cluster_levels=("WARN",)))
    if not result.cluster_entries:
        return []
    return block("top WARN signatures", result.cluster_entries, result.cluster_total)


def onset_lines(
    source: LogSource, query: LogQuery, onset: datetime, clock: str, key: Callable[[LogEntry], str], block: Block
) -> list[str]:
    """`new since HH:MM ...`: signatures at any level after `onset` that the part of the window before it lacks."""
    if not query.start < onset < query.end:
        raise ToolError(f"onset {onset:%Y-%m-%dT%H:%MZ} is outside the window; pick a window around it.")
    sampled = replace(query, levels=(), text=query.text, limit=1, cluster_levels=LEVELS, cluster_sample=CONTRAST_SAMPLE)
    before = source.search(replace(sampled, end=onset))
    after = source.search(replace(sampled, start=onset))
    seen = {key(entry) for entry in before.cluster_entries}
    new = [entry for entry in after.cluster_entries if key(entry) not in seen]
    span = f"the {len(before.cluster_entries):,} newest lines before it, {len(after.cluster_entries):,} after"
    header = f"new since {onset:{clock}}, at any level, absent before it (from {span}):\nnew signatures"
    if not new:
        return [f"new since {onset:{clock}}: no signature after it is absent before it (from {span})."]
    return block(header, new, len(new))
