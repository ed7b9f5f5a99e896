"""One query_logs reading of a window, from any LogSource: the search, the histogram, the signature blocks (errors,
warnings, new since an onset), the newest lines folded, the whole lines asked for, and a doubt about timestamps.

Counts follow every filter except where the summary says otherwise: counts by level ignore the level filter (so the
mix shows), and so does the histogram by level; signatures are at the cluster levels.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from tools.logs.contrast import ONSET_TOLERANCE, onset_contrast, warn_block
from tools.logs.counting.histogram import frame_for, log_histogram
from tools.logs.counting.signatures import CountedBlock, counted_block, sampled_lines
from tools.logs.counting.timestamps import timestamp_doubt
from tools.logs.model import Frame, LogQuery, LogResult, LogSource, describe_terms
from tools.logs.shape.cluster import newest_lines
from tools.logs.summary import LogSummary
from tools.timerange import TimeWindow

OLDEST_SAMPLE = 200  # the window's oldest lines at the cluster levels, grouped beside the newest


@dataclass(frozen=True)
class Reading:
    """What a call asks for beyond the search itself."""

    onset: datetime | None = None
    whole_lines: int = 0
    tolerance: timedelta = ONSET_TOLERANCE


def read_window(source: LogSource, query: LogQuery, reading: Reading = Reading()) -> LogSummary:
    """Everything query_logs shows of one window."""
    window = TimeWindow(query.start, query.end)
    frame = frame_for(window)
    result = source.search(replace(query, oldest_sample=OLDEST_SAMPLE))
    errors = _errors(source, query, result, frame)
    any_lines = bool(sum(result.counts_by_level.values()))
    by_level = source.histogram(query, frame) if any_lines else {}
    histogram = log_histogram(frame, by_level, errors.buckets if errors else {}) if any_lines else None
    warnings = warn_block(source, query, frame) if result.total else None
    contrast = onset_contrast(source, query, reading.onset, frame, reading.tolerance) if reading.onset else None
    held = [*result.entries, *result.cluster_entries, *result.cluster_oldest]
    return LogSummary(
        query.service,
        window,
        describe_terms(query.text) if query.text.terms else "",
        query.levels,
        result.total,
        dict(result.counts_by_level),
        query.cluster_levels,
        errors.block if errors else None,
        warnings,
        contrast,
        newest_lines(result.entries),
        dict(result.counts_by_error_type),
        result.notes,
        query.namespace,
        query.where,
        query.trace_id,
        query.text.changes,
        histogram,
        timestamp_doubt(sum(result.counts_by_level.values()), held, histogram),
        result.entries[: reading.whole_lines],
        _by_service(query, result),
    )


def _errors(source: LogSource, query: LogQuery, result: LogResult, frame: Frame) -> CountedBlock | None:
    if not result.cluster_entries:
        return None
    sampled = sampled_lines(result)
    oldest = len(sampled) - len(result.cluster_entries)
    return counted_block(source, query, sampled, result.cluster_total, frame, oldest=oldest)


def _by_service(query: LogQuery, result: LogResult) -> dict[str, int]:
    """With a trace or every service: the lines listed, by service."""
    if query.service is not None and not query.trace_id:
        return {}
    return dict(Counter(e.service for e in result.entries).most_common())
