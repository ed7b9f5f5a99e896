"""A database in the path of the degraded service, read through its views (the database toolset, when configured):
the lock waits and the session at the root of the blocking chain, with its user and statement. A session someone ran
by hand (a VACUUM FULL, an ALTER TABLE in psql) that others queue behind is an operation with its actor, and a
stronger one than a log line: the database says who holds the lock now.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from bot.playbook.families.hypotheses import Operation
from bot.playbook.probes import ProbeRun, iso_from_moment
from tools.database.locks import DbLocks
from tools.results import database_of

LOCKS_AROUND = timedelta(minutes=15)


def database_names(run: ProbeRun) -> list[str]:
    """The databases query_db_locks may read (its `database` choices)."""
    spec = run.tools.get("query_db_locks")
    schema = spec.parameters.get("properties", {}).get("database", {}) if spec else {}
    names = schema.get("enum") or ([schema["const"]] if "const" in schema else [])  # one choice is written as const
    return [str(name) for name in names]


def database_of_service(service: str, names: Sequence[str]) -> str | None:
    """The database a service in the topology is: the same name, or the name without its "-db" suffix."""
    for name in names:
        if service in (name, f"{name}-db") or service.removesuffix("-db") == name.removesuffix("-db"):
            return name
    return None


def check_database_locks(run: ProbeRun, services: Sequence[str], onset: datetime) -> Operation | None:
    """The root blocker of the first database among `services` whose sessions wait on a lock around the onset."""
    names = database_names(run)
    for service in services:
        database = database_of_service(service, names)
        if database is None:
            continue
        thought = (
            f"{service} is a database in the path of the change at {onset:%H:%M} UTC; reading its lock waits: a "
            "session others queue behind, and who runs it."
        )
        args = {
            "database": database,
            "start": iso_from_moment(onset - LOCKS_AROUND),
            "end": iso_from_moment(onset + LOCKS_AROUND),
        }
        step = run.probe(thought, "query_db_locks", args)
        found = database_of(step) if step is not None else None
        if isinstance(found, DbLocks) and (operation := _root_operation(service, found, onset)) is not None:
            return operation
    return None


def _root_operation(service: str, locks: DbLocks, onset: datetime) -> Operation | None:
    if not locks.roots:
        return None
    root = locks.roots[0]
    behind = locks.blocked_behind(root.pid)
    longest = locks.waiting[0] if locks.waiting else None
    waits = f"{len(behind)} session(s) wait behind it"
    if longest is not None and longest.waiting_for:
        waits += f", the longest for {longest.waiting_for}" + (f" ({longest.wait_s:.0f} s)" if longest.wait_s else "")
    held = f" for {root.transaction_s:.0f} s" if root.transaction_s else ""
    line = (
        f"pid {root.pid} of {root.application or 'a client'} ({root.state}{held}): {root.statement or '(no statement)'}"
    )
    return Operation(root.wait_since or onset, service, root.user or "an unknown user", line, waits)
