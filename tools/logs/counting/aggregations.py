"""Elasticsearch aggregations for the log source: lines per bucket by level (a date_histogram over the window with
a level terms or filters sub-aggregation), and each probed signature's count, first and last seen and buckets (one
`filters` bucket per signature, matched by the phrases between its slots, with min/max on the timestamp and a
date_histogram inside). One request each, over every line of the window.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tools.logs.mapping import FieldUse, level_aggregation, level_counts
from tools.logs.model import Frame, KeyCount, Probe
from tools.timerange import moment_from_value


def date_buckets(timestamp: str, frame: Frame) -> dict[str, Any]:
    """A date_histogram whose buckets start at the frame's start (an offset from the epoch's grid)."""
    offset_s = int(frame.start.timestamp()) % frame.step_s
    return {"date_histogram": {"field": timestamp, "fixed_interval": f"{frame.step_s}s", "offset": f"{offset_s}s"}}


def level_histogram_aggs(timestamp: str, level: FieldUse, frame: Frame) -> dict[str, Any]:
    return {"buckets": {**date_buckets(timestamp, frame), "aggs": {"levels": level_aggregation(level)}}}


def level_histogram_from(reply: Mapping[str, Any], frame: Frame) -> dict[str, tuple[int, ...]]:
    found: dict[str, list[int]] = {}
    for bucket in reply.get("aggregations", {}).get("buckets", {}).get("buckets", []):
        index = _index(bucket, frame)
        if index is None:
            continue
        for level, count in level_counts(bucket.get("levels", {})).items():
            found.setdefault(level, [0] * frame.count)[index] += count
    return {level: tuple(v) for level, v in found.items()}


def probe_filter(probe: Probe, message: str) -> dict[str, Any]:
    """The lines holding every phrase of the probe in the message field."""
    return {"bool": {"filter": [{"match_phrase": {message: phrase}} for phrase in probe.phrases]}}


def key_aggs(probes: Sequence[Probe], message: str, timestamp: str, frame: Frame) -> dict[str, Any]:
    inner = {
        "first": {"min": {"field": timestamp}},
        "last": {"max": {"field": timestamp}},
        "buckets": date_buckets(timestamp, frame),
    }
    named = {f"p{i}": probe_filter(p, message) for i, p in enumerate(probes)}
    return {"keys": {"filters": {"filters": named}, "aggs": inner}}


def key_counts_from(reply: Mapping[str, Any], probes: Sequence[Probe], frame: Frame) -> dict[str, KeyCount]:
    buckets = reply.get("aggregations", {}).get("keys", {}).get("buckets", {})
    counts: dict[str, KeyCount] = {}
    for i, probe in enumerate(probes):
        found = buckets.get(f"p{i}", {})
        total = int(found.get("doc_count", 0))
        first, last = found.get("first", {}).get("value"), found.get("last", {}).get("value")
        if not total or first is None or last is None:
            continue
        series = [0] * frame.count
        for bucket in found.get("buckets", {}).get("buckets", []):
            index = _index(bucket, frame)
            if index is not None:
                series[index] += int(bucket.get("doc_count", 0))
        counts[probe.key] = KeyCount(total, moment_from_value(first), moment_from_value(last), tuple(series))
    return counts


def _index(bucket: Mapping[str, Any], frame: Frame) -> int | None:
    start_ms = frame.start.timestamp() * 1000
    offset = (float(bucket["key"]) - start_ms) / (frame.step_s * 1000)
    index = round(offset)
    return index if 0 <= index < frame.count else None
