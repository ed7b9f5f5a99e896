"""Two more readings of a log window for query_logs: WARN signatures, and what is new since an onset.

WARN lines carry what an ERROR cluster does not: lock waits, a DDL statement, "starting nightly job". They
get their own section, so a flood of them never crowds errors out of the error sample.

Given an onset (when the metrics changed), the window is split there: a signature at any level that appears
after the onset and not before it is new, the kind of line that names what changed ("reindex-products
started", "feature flag X enabled"). Both halves are sampled (newest CONTRAST_SAMPLE lines each), and the
section says so. The signatures are formed in tools/logs/summary.py and rendered in tools/logs/render.py.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from tools.base import ToolError
from tools.logs.model import LEVELS, LogQuery, LogSource
from tools.logs.summary import OnsetContrast, SignatureBlock, signature_block, signature_of

CONTRAST_SAMPLE = 1_000


def warn_block(source: LogSource, query: LogQuery) -> SignatureBlock | None:
    """The WARN signatures, or None when the query asked for levels without WARN, clusters WARN already, or had none."""
    if (query.levels and "WARN" not in query.levels) or "WARN" in query.cluster_levels:
        return None
    result = source.search(replace(query, limit=1, cluster_levels=("WARN",)))
    if not result.cluster_entries:
        return None
    return signature_block(("WARN",), result.cluster_entries, result.cluster_total)


def onset_contrast(source: LogSource, query: LogQuery, onset: datetime) -> OnsetContrast:
    """Signatures at any level after `onset` that the part of the window before it lacks."""
    if not query.start < onset < query.end:
        raise ToolError(f"onset {onset:%Y-%m-%dT%H:%MZ} is outside the window; pick a window around it.")
    sampled = replace(query, levels=(), text=query.text, limit=1, cluster_levels=LEVELS, cluster_sample=CONTRAST_SAMPLE)
    before = source.search(replace(sampled, end=onset))
    after = source.search(replace(sampled, start=onset))
    seen = {signature_of(entry) for entry in before.cluster_entries}
    new = [entry for entry in after.cluster_entries if signature_of(entry) not in seen]
    block = signature_block(LEVELS, new, len(new)) if new else None
    return OnsetContrast(onset, len(before.cluster_entries), len(after.cluster_entries), block)
