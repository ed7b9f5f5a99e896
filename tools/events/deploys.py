"""Operational events in deploy records: rollbacks, restarts and failed rollouts, where a source says so.

A record whose status says it failed, or whose summary or version says it rolled back or restarted, is an event,
not a new version: the ranking names it as what it was.
"""

from __future__ import annotations

import re

from tools.analysis.events import OpsEvent
from tools.deploys.records import DeployRecord

_FAILED = re.compile(r"fail|error|degraded|abort|timed? ?out|progressdeadlineexceeded", re.IGNORECASE)
_ROLLBACK = re.compile(r"\b(roll(ed|ing)?[ -]?back|revert(ed|ing)?)\b", re.IGNORECASE)
_RESTART = re.compile(r"\b(rollout restart|restart(ed|ing)?)\b", re.IGNORECASE)


def event_from_record(record: DeployRecord) -> OpsEvent | None:
    """The record as an event (a rollback, a restart, a failed rollout), or None for a plain deploy."""
    said = f"{record.summary} {record.version}"
    if _ROLLBACK.search(said):
        kind = "rollback"
    elif _FAILED.search(record.status):
        kind = "failed rollout"
    elif _RESTART.search(said):
        kind = "restart"
    else:
        return None
    status = f" ({record.status})" if record.status else ""
    what = f"{record.service}/{record.version}{status}: {record.summary}"[:160]
    return OpsEvent(record.at, kind, record.service, what, record.author, "deploys")
