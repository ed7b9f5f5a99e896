"""find_changes' look at the day before its lookback: deploys whose change can wait hours to bite.

A step onset is ranked against the deploys of the 45 minutes before it. A cap met by the daily peak, a pool met by
the load, a log level that fills a disk or a retry setting waiting for a blip can land a day earlier. Of the
neighbourhood's deploys of the 30 h before the lookback (find_changes reads them with the lookback's, in one call), it
reads a few diffs (the degraded service's first, newest
first) and keeps only those whose changed keys are of a class that can wait (tools/analysis/changeclass.DELAYED),
with the reason that says so. Everything else stays out: an old image bump or a text change is not a suspect.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

import tools.analysis.ranking as ranking
from tools.analysis.configdiff import KeyChange, risky_lines_from_diff
from tools.analysis.ranking import Suspect
from tools.analysis.reasons import Reason
from tools.deploys.query import DeploySource
from tools.deploys.records import DeployRecord

MAX_LATE_DIFFS = 2  # diffs read for changes of the day before (each is one backend call)


def late_suspects(
    records: Sequence[DeployRecord],
    near: Sequence[str],
    target: str,
    onset: datetime,
    read_diff: Callable[[str, str], tuple[list[Reason], list[KeyChange]]],
    notes: list[str],
) -> list[Suspect]:
    """Of `records` (the deploys of the day before the lookback), those near the asked service that can wait to
    bite, as suspects; `read_diff(service, version)` gives the diff's reasons and its changed keys."""
    dated = sorted(
        ((r, r.at) for r in records if r.service in near and r.at is not None),
        key=lambda pair: (pair[0].service != target, -pair[1].timestamp()),
    )
    found = []
    for record, at in dated[:MAX_LATE_DIFFS]:
        reasons, keys = read_diff(record.service, record.version)
        waiting = ranking.delayed_reason(keys, at, onset)
        if waiting is None:
            continue
        placed = [Reason(1, f"{record.service} is the service asked about")] if record.service == target else []
        what = f"deploy {record.service}/{record.version} at {at:%m-%d %H:%M}"
        found.append(Suspect("deploy", what, (waiting, *placed, *reasons), record.service, at, record.version))
    if len(dated) > MAX_LATE_DIFFS:
        notes.append(
            f"changes of the day before: {len(dated)} deploys near {target}, the {MAX_LATE_DIFFS} nearest read "
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
