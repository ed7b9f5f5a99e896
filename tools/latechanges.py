"""find_changes' look at the day before its lookback: deploys whose change can wait hours to bite.

A step onset is ranked against the deploys of the 45 minutes before it. A cap met by the daily peak, a pool met by
the load, a log level that fills a disk or a retry setting waiting for a blip can land a day earlier. This reads the
neighbourhood's deploys of the 30 h before the lookback, reads a few diffs (the degraded service's first, newest
first) and keeps only those whose changed keys are of a class that can wait (tools/analysis/changeclass.DELAYED),
with the reason that says so. Everything else stays out: an old image bump or a text change is not a suspect.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

import tools.analysis.ranking as ranking
from tools.analysis.configdiff import KeyChange, risky_lines_from_diff
from tools.analysis.ranking import Suspect
from tools.analysis.reasons import Reason
from tools.deploys.query import DeploySource

MAX_LATE_DIFFS = 2  # diffs read for changes of the day before (each is one backend call)


def late_suspects(
    deploys: DeploySource,
    near: Sequence[str],
    target: str,
    onset: datetime,
    lookback: timedelta,
    read_diff: Callable[[str, str], tuple[list[Reason], list[KeyChange]]],
    notes: list[str],
) -> list[Suspect]:
    """Deploys of the day before the lookback that can wait to bite, as suspects; `read_diff(service, version)` gives
    the diff's reasons and its changed keys (as find_changes reads any diff)."""
    start, end = onset - ranking.DELAYED_LOOKBACK, onset - lookback
    try:
        records = [r for r in deploys.records(None, start, end) if r.service in near and r.at is not None]
    except Exception as exc:  # a backend failure is a check not run, never "no change of the day before"
        notes.append(f"not run: deploys of the {ranking.lookback_words(ranking.DELAYED_LOOKBACK)} before")
        notes.append(f"  ({type(exc).__name__}: {exc})")
        return []
    records.sort(key=lambda r: (r.service != target, -r.at.timestamp() if r.at else 0.0))
    found = []
    for record in records[:MAX_LATE_DIFFS]:
        assert record.at is not None
        reasons, keys = read_diff(record.service, record.version)
        waiting = ranking.delayed_reason(keys, record.at, onset)
        if waiting is None:
            continue
        placed = [Reason(1, f"{record.service} is the service asked about")] if record.service == target else []
        what = f"deploy {record.service}/{record.version} at {record.at:%m-%d %H:%M}"
        why = (waiting, *placed, *reasons)
        found.append(Suspect("deploy", what, why, record.service, record.at, record.version))
    if len(records) > MAX_LATE_DIFFS:
        notes.append(
            f"changes of the day before: {len(records)} deploys near {target}, the {MAX_LATE_DIFFS} nearest read "
            "(query_deploy_records with a start and end lists them all)"
        )
    return found


def diff_read(
    deploys: DeploySource, service: str, version: str, signatures: Sequence[tuple[str, str]]
) -> tuple[list[Reason], list[KeyChange]]:
    """A deploy's diff as a ranking reads it: the reasons it gives (what its class can explain, a log signature naming
    a changed key) and its changed keys, with full paths when the source read both versions."""
    try:
        found = deploys.diff(service, version)
    except Exception as exc:
        return [Reason(0, f"diff not read ({type(exc).__name__})")], []
    keys = list(found.changed_keys()) if found else []
    return ranking.diff_reasons(keys, risky_lines_from_diff(found.diff if found else ""), signatures), keys
