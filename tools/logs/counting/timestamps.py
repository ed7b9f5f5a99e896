"""Timestamps that cannot place events: a stream whose lines all sit within one second (a batch load stamped with
its ingest time), or whose sampled lines mostly share one stamp (a default value). Such a stream's first/last seen,
histogram and onset are meaningless, and the observation says so instead of printing them as findings.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from tools.logs.model import LogEntry
from tools.logs.summary import LogHistogram, TimestampDoubt

MIN_LINES = 20  # fewer lines than this can honestly sit in one second
SAME_STAMP_SHARE = 0.9  # of the sampled lines on one stamp


def timestamp_doubt(total: int, held: Sequence[LogEntry], histogram: LogHistogram | None) -> TimestampDoubt | None:
    """A doubt about the window's timestamps, or None when they can place events."""
    if total < MIN_LINES or len(held) < MIN_LINES:
        return None
    stamps = [e.timestamp for e in held]
    spread_s = (max(stamps) - min(stamps)).total_seconds()
    at, same = Counter(stamps).most_common(1)[0]
    used = sum(1 for counts in zip(*histogram.by_level.values(), strict=True) if any(counts)) if histogram else 1
    if (spread_s < 1.0 and used <= 2) or same >= SAME_STAMP_SHARE * len(held):
        return TimestampDoubt(total, spread_s, same, len(held), at)
    return None
