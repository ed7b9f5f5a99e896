"""A block of signatures whose counts and first/last seen cover the whole window.

Lines are sampled (the newest, and the oldest, at the block's levels) and grouped by key; the backend then counts
the groups over the whole window (tools/logs/model.py KeyCounts): SQLite by each line's exact key, and it names the
biggest signatures no sample held; Elasticsearch and Loki by the words between a signature's slots. A group whose
words another sampled group also holds cannot be told apart by words, so it keeps the sample's counts; so does
a group the backend could not count. Every signature says which (Signature.counted), and the block's header too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from tools.logs.counting.histogram import local_buckets
from tools.logs.model import Frame, KeyCount, KeyCounts, LogEntry, LogQuery, LogResult, LogSource, Probe
from tools.logs.shape.cluster import shape_of, signature_from_group, signature_key, template_by_shape
from tools.logs.summary import TOP_SIGNATURES, Counted, Signature, SignatureBlock

MAX_PROBES = 10  # groups counted over the whole window (the biggest of the sample)
_ORDER: dict[str, int] = {"window": 0, "words": 1, "sample": 2}


@dataclass(frozen=True)
class CountedBlock:
    """A block and the buckets of its top signatures (for the histogram)."""

    block: SignatureBlock
    buckets: dict[str, tuple[int, ...]]


def sampled_lines(result: LogResult) -> list[LogEntry]:
    """The newest lines at the cluster levels, then as many of the oldest as lie beyond them: each line once.

    The two samples overlap when the window holds fewer lines than both; lines are not told apart by their text
    (a burst logs the same line many times in one second), so the oldest are cut to the lines the newest lack."""
    newest = list(result.cluster_entries)
    beyond = max(0, result.cluster_total - len(newest))
    return newest + list(result.cluster_oldest[:beyond])


def grouped(entries: Sequence[LogEntry]) -> dict[str, list[LogEntry]]:
    """Entries by key."""
    groups: dict[str, list[LogEntry]] = {}
    for entry in entries:
        groups.setdefault(signature_key(entry), []).append(entry)
    return groups


def probe_of(key: str, group: Sequence[LogEntry]) -> Probe:
    return Probe(key, shape_of(group[0]).phrases())


def counted_block(
    source: LogSource,
    query: LogQuery,
    sampled: Sequence[LogEntry],
    total: int,
    frame: Frame,
    *,
    oldest: int = 0,
    complete: bool | None = None,
    discover: bool = True,
) -> CountedBlock:
    """The top signatures of the lines at `query.cluster_levels`: grouped from `sampled` (the newest, then `oldest`
    of the oldest), counted over the whole window unless the sample held every line (`complete`). `discover=False`
    keeps to the sampled groups (a backend that finds others is not asked for them)."""
    groups = grouped(sampled)
    if len(sampled) >= total if complete is None else complete:  # every line is in hand: its counts are the window's
        signatures = [_whole(key, group) for key, group in groups.items()]
        buckets = {key: local_buckets(frame, (e.timestamp for e in group)) for key, group in groups.items()}
        return _block(query, signatures, len(sampled), total, oldest, len(groups), True, buckets)
    biggest = sorted(groups, key=lambda k: -len(groups[k]))[:MAX_PROBES]
    counts = source.count_keys(query, [probe_of(k, groups[k]) for k in biggest], frame)
    signatures = [_counted(key, groups[key], counts, groups) for key in groups]
    found = counts.found if discover else {}
    signatures += [_found(key, entry, counts.by_key[key]) for key, entry in found.items() if key not in groups]
    whole = discover and counts.distinct is not None
    distinct = counts.distinct if whole and counts.distinct is not None else len(groups)
    buckets = {key: c.buckets for key, c in counts.by_key.items()}
    return _block(query, signatures, len(sampled), total, oldest, distinct, whole, buckets)


def _block(
    query: LogQuery,
    signatures: list[Signature],
    sampled: int,
    total: int,
    oldest: int,
    distinct: int,
    distinct_whole: bool,
    buckets: dict[str, tuple[int, ...]],
) -> CountedBlock:
    ranked = sorted(signatures, key=lambda s: (-s.count, s.template))[:TOP_SIGNATURES]
    distinct = max(distinct, len(signatures))  # the header never claims fewer signatures than the block lists
    counted: Counted = max((s.counted for s in ranked), key=_ORDER.__getitem__, default="window")
    block = SignatureBlock(
        tuple(query.cluster_levels), sampled, total, distinct, tuple(ranked), oldest, counted, distinct_whole
    )
    return CountedBlock(block, {s.key: buckets[s.key] for s in ranked if s.key in buckets})


def _whole(key: str, group: Sequence[LogEntry]) -> Signature:
    return replace(signature_from_group(key, group), counted="window")


def _counted(key: str, group: Sequence[LogEntry], counts: KeyCounts, groups: dict[str, list[LogEntry]]) -> Signature:
    signature = signature_from_group(key, group)
    found = counts.by_key.get(key)
    if found is None:
        return signature
    if not counts.exact and _shared_words(key, groups):
        return signature  # another sampled shape holds these words too: the backend's count would mix them
    return _with(signature, found, "window" if counts.exact else "words")


def _found(key: str, entry: LogEntry, count: KeyCount) -> Signature:
    """A signature the backend found beyond the sample: one line in hand, so its slots are shown by their shape
    (one line cannot tell a value that never varies from one that does)."""
    signature = signature_from_group(key, [entry])
    return _with(replace(signature, template=template_by_shape(entry)), count, "window")


def _with(signature: Signature, count: KeyCount, counted: Counted) -> Signature:
    return replace(signature, count=count.count, first_at=count.first_at, last_at=count.last_at, counted=counted)


def _shared_words(key: str, groups: dict[str, list[LogEntry]]) -> bool:
    """Whether another group's message holds every phrase of this group's probe."""
    phrases = [_words(p) for p in probe_of(key, groups[key]).phrases]
    if not phrases:
        return True
    for other, group in groups.items():
        if other != key and all(_contains(_words(group[0].message), p) for p in phrases):
            return True
    return False


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9_]+", text.lower())


def _contains(words: list[str], phrase: list[str]) -> bool:
    n = len(phrase)
    return any(words[i : i + n] == phrase for i in range(len(words) - n + 1))
