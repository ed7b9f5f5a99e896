"""Loki's metric queries for the log source: lines per bucket by level (`sum by (level) (count_over_time(...))` as a
range query, one point per bucket), and each probed signature's count (an instant `count_over_time` over the window),
its buckets, and its first and last line (a log query forward and one backward, one line each).

A signature is matched by a case-insensitive line filter per phrase between its slots (words joined by any
non-word run, so a JSON line's escaping does not hide them); such a filter may also match a line of another shape
with the same words, and the counts say so.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from tools.logs.model import Frame, KeyCount, Probe


class LokiApi(Protocol):
    def get(self, path: str, params: dict[str, Any], what: str) -> Any: ...


def phrase_filters(probe: Probe, quote: Callable[[str], str]) -> str:
    """One `|~` per phrase: its words in order, any non-word run between them, any case."""
    parts = []
    for phrase in probe.phrases:
        pattern = "(?i)" + r"\b" + r"\W+".join(re.escape(w) for w in phrase.split()) + r"\b"
        parts.append(" |~ " + quote(pattern))
    return "".join(parts)


def range_counts(api: LokiApi, log_query: str, label: str, frame: Frame, what: str) -> dict[str, tuple[int, ...]]:
    """`sum by (label) (count_over_time(q [step]))` at the end of each bucket: lines per bucket by label value.

    Loki's range is (t - step, t]; each point is taken 1 ns before its bucket's end, so a bucket is
    [start, start + step) like the other backends' and a line on a bucket's edge counts in the bucket it opens."""
    step = frame.step_s
    params = {
        "query": f"sum by ({label}) (count_over_time({log_query} [{step}s]))",
        "start": ns(frame.start + timedelta(seconds=step)) - 1,
        "end": ns(frame.start + timedelta(seconds=step * frame.count)) - 1,
        "step": f"{step}s",
    }
    reply = api.get("/loki/api/v1/query_range", params, what)
    found: dict[str, list[int]] = {}
    for series in reply.get("data", {}).get("result", []):
        value = str(series.get("metric", {}).get(label, ""))
        row = found.setdefault(value, [0] * frame.count)
        for at, count in series.get("values", []):
            index = round((float(at) - frame.start.timestamp()) / step) - 1
            if 0 <= index < frame.count:
                row[index] += int(float(count))
    return {value: tuple(row) for value, row in found.items()}


def window_count(api: LokiApi, log_query: str, start: datetime, end: datetime) -> int:
    """Lines of `log_query` in [start, end): one instant count_over_time at the end."""
    seconds = max(1, int((end - start).total_seconds()))
    logql = f"sum(count_over_time({log_query} [{seconds}s]))"
    reply = api.get("/loki/api/v1/query", {"query": logql, "time": ns(end) - 1}, "counting a signature")
    return sum(int(float(s["value"][1])) for s in reply.get("data", {}).get("result", []))


def edge_line(api: LokiApi, log_query: str, start: datetime, end: datetime, *, first: bool) -> datetime | None:
    """The time of the first (or last) line of `log_query` in [start, end)."""
    params = {
        "query": log_query,
        "start": ns(start),
        "end": ns(end) - 1,
        "limit": 1,
        "direction": "forward" if first else "backward",
    }
    reply = api.get("/loki/api/v1/query_range", params, "finding a signature's first and last line")
    stamps = [int(ts) for s in reply.get("data", {}).get("result", []) for ts, _ in s.get("values", [])]
    if not stamps:
        return None
    return moment(min(stamps) if first else max(stamps))


def probe_count(
    api: LokiApi, log_query: str, start: datetime, end: datetime, frame: Frame, label: str
) -> KeyCount | None:
    """One probe's lines over the whole window: its count, first and last line, buckets."""
    total = window_count(api, log_query, start, end)
    if not total:
        return None
    first = edge_line(api, log_query, start, end, first=True)
    last = edge_line(api, log_query, start, end, first=False)
    if first is None or last is None:
        return None
    rows = range_counts(api, log_query, label, frame, "counting a signature per bucket")
    buckets = tuple(sum(column) for column in zip(*rows.values(), strict=True)) if rows else (0,) * frame.count
    return KeyCount(total, first, last, buckets)


def probe_counts(
    api: LokiApi, queries: Mapping[str, str], start: datetime, end: datetime, frame: Frame, label: str
) -> dict[str, KeyCount]:
    counts = {key: probe_count(api, q, start, end, frame, label) for key, q in queries.items()}
    return {key: count for key, count in counts.items() if count is not None}


def usable(probes: Sequence[Probe]) -> list[Probe]:
    return [p for p in probes if p.phrases]


def moment(ts_ns: int) -> datetime:
    return datetime.fromtimestamp(ts_ns / 1e9, tz=UTC)


def ns(when: datetime) -> int:
    return int(when.timestamp()) * 1_000_000_000 + when.microsecond * 1_000
