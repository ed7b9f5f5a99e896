"""Two more readings of a log window for query_logs: WARN signatures, and what is new since an onset.

WARN lines carry what an ERROR cluster does not: lock waits, a DDL statement, "starting nightly job", a zone
failover. They get their own section, so a flood of them never crowds errors out of the error sample.

Given an onset (when the metrics changed), a signature at any level is new when it appears from the onset on and
not in a baseline before it. The onset is taken one rate window early (ONSET_TOLERANCE): a metric computed over
`rate(...[5m])` moves up to that long after the lines that explain it, so a signature that began a minute before
the metric's onset is new, not old. The baseline is the hour before that (or the part of the window before it, if
longer), and a signature is absent from it by the backend's count over the whole baseline, not by a sample. The new
signatures are listed in the order they began, so a failover's events read in order.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from tools.base import ToolError
from tools.logs.counting.signatures import counted_block, grouped, probe_of, sampled_lines
from tools.logs.model import Frame, LogQuery, LogSource
from tools.logs.summary import OnsetContrast, SignatureBlock

ONSET_TOLERANCE = timedelta(minutes=5)  # one rate window: the catalogue's rate(...[5m])
BASELINE = timedelta(hours=1)
CONTRAST_SAMPLE = 1_000
OLDEST_SAMPLE = 300
MAX_NEW_PROBES = 40  # signatures after the onset checked against the baseline


def warn_block(source: LogSource, query: LogQuery, frame: Frame) -> SignatureBlock | None:
    """The WARN signatures, or None when the query asked for levels without WARN, clusters WARN already, or had none."""
    if (query.levels and "WARN" not in query.levels) or "WARN" in query.cluster_levels:
        return None
    warns = replace(query, limit=1, cluster_levels=("WARN",), oldest_sample=OLDEST_SAMPLE)
    result = source.search(warns)
    if not result.cluster_entries:
        return None
    sampled = sampled_lines(result)
    oldest = len(sampled) - len(result.cluster_entries)
    return counted_block(source, warns, sampled, result.cluster_total, frame, oldest=oldest).block


def onset_contrast(
    source: LogSource, query: LogQuery, onset: datetime, frame: Frame, tolerance: timedelta = ONSET_TOLERANCE
) -> OnsetContrast:
    """Signatures at any level from the onset (less the tolerance) on that the baseline before it lacks."""
    if not query.start < onset < query.end:
        raise ToolError(f"onset {onset:%Y-%m-%dT%H:%M:%SZ} is outside the window; pick a window around it.")
    since = max(query.start, onset - tolerance)
    base_start = min(query.start, since - BASELINE)
    every = replace(query, levels=(), limit=1, cluster_levels=(), cluster_sample=CONTRAST_SAMPLE)
    after_query = replace(every, start=since, oldest_sample=OLDEST_SAMPLE)
    after = source.search(after_query)
    in_hand = sampled_lines(after)
    groups = grouped(in_hand)
    keys = sorted(groups, key=lambda k: -len(groups[k]))[:MAX_NEW_PROBES]
    baseline_query = replace(every, start=base_start, end=since)
    before = source.count_keys(baseline_query, [probe_of(k, groups[k]) for k in keys], frame)
    fresh = [k for k in keys if k not in before.by_key]
    sampled = [e for k in fresh for e in groups[k]]
    block = None
    if fresh:
        held = len(in_hand) >= after.cluster_total
        counted = counted_block(source, after_query, sampled, after.cluster_total, frame, complete=held, discover=False)
        block = _in_time_order(counted.block)
    return OnsetContrast(onset, len(keys) - len(fresh), len(keys), block, since, base_start, True)


def _in_time_order(block: SignatureBlock) -> SignatureBlock:
    return replace(block, top=tuple(sorted(block.top, key=lambda s: s.first_at)))
