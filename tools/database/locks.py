"""Lock waits with their blocking chain (DbLocks): who blocks whom, since when, with what statement, and the root
blocker at the top of each chain. Built from the LOCKS query's rows (pg_stat_activity + pg_blocking_pids() +
pg_locks) or, without SQL, from postgres_exporter's lock counts, which name no session.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from tools.base import ToolData
from tools.database.sessions import Source
from tools.database.statements import statement_text
from tools.database.units import age_text, scope_text
from tools.timerange import TimeWindow, iso_z


@dataclass(frozen=True)
class LockSession:
    """A session in a blocking chain: it waits for a lock (blocked_by not empty), holds one others wait for, or both."""

    pid: int
    application: str
    user: str
    state: str
    blocked_by: tuple[int, ...]  # pg_blocking_pids(): the sessions it waits for; () when it waits for none
    waiting_for: str = ""  # `ShareLock on transactionid`, `AccessExclusiveLock on relation accounts`
    wait_since: datetime | None = None  # when its lock wait began (pg_locks.waitstart, Postgres 14+)
    wait_s: float | None = None  # how long it has waited (else how long it has been in its state)
    transaction_s: float | None = None
    statement: str = ""  # literals masked, cut


@dataclass(frozen=True)
class LockCount:
    mode: str
    count: int


@dataclass(frozen=True)
class DbLocks(ToolData):
    kind: ClassVar[str] = "db_locks"
    database: str
    server: str
    source: Source
    sessions: tuple[LockSession, ...]  # every waiter and every session one waits for; SQL only
    counts: tuple[LockCount, ...] = ()  # the exporter: locks by mode at their peak in the window
    waiting_peak: int | None = None  # the exporter: sessions waiting on a lock at the peak (wait_event_type="Lock")
    window: TimeWindow | None = None
    note: str = ""
    max_shown: int = 10  # sessions the text's trees show; the data keeps every one

    @property
    def waiting(self) -> tuple[LockSession, ...]:
        """The sessions that wait for a lock, longest wait first."""
        found = [s for s in self.sessions if s.blocked_by]
        return tuple(sorted(found, key=lambda s: -(s.wait_s or 0.0)))

    @property
    def roots(self) -> tuple[LockSession, ...]:
        """The root blockers: sessions others wait for that wait for nobody themselves (in a cycle, its oldest)."""
        by_pid = {s.pid: s for s in self.sessions}
        blockers = {pid for s in self.sessions for pid in s.blocked_by}
        roots = [by_pid[p] for p in sorted(blockers) if p in by_pid and not by_pid[p].blocked_by]
        if not roots and blockers:  # every blocker waits too: a cycle (a deadlock not yet broken)
            roots = sorted((by_pid[p] for p in blockers if p in by_pid), key=lambda s: -(s.transaction_s or 0.0))[:1]
        return tuple(sorted(roots, key=lambda s: -len(self.blocked_behind(s.pid))))

    def blocked_behind(self, pid: int) -> tuple[int, ...]:
        """Every session that waits, directly or down the chain, for `pid`."""
        seen: list[int] = []
        frontier = [pid]
        while frontier:
            current = frontier.pop()
            for s in self.sessions:
                if current in s.blocked_by and s.pid not in seen and s.pid != pid:
                    seen.append(s.pid)
                    frontier.append(s.pid)
        return tuple(seen)


def locks_from_rows(
    rows: Iterable[Mapping[str, Any]], *, database: str, server: str, max_chars: int, max_shown: int = 10
) -> DbLocks:
    """DbLocks from the LOCKS query: the waiting sessions and the sessions they wait for."""
    sessions = tuple(sorted((_lock_session(r, max_chars) for r in rows), key=lambda s: s.pid))
    return DbLocks(database, server, "sql", sessions, max_shown=max_shown)


def _lock_session(row: Mapping[str, Any], max_chars: int) -> LockSession:
    since = row.get("wait_since")
    return LockSession(
        int(row["pid"]),
        row.get("application_name") or "",
        row.get("usename") or "",
        row.get("state") or "",
        tuple(int(p) for p in row.get("blocked_by") or ()),
        row.get("waiting_for") or "",
        since if isinstance(since, datetime) else None,
        None if row.get("wait_s") is None else float(row["wait_s"]),
        None if row.get("xact_s") is None else float(row["xact_s"]),
        statement_text(row.get("query"), max_chars),
    )


def render_locks(found: DbLocks) -> str:
    """The counts, then each root blocker with the sessions behind it as an indented tree (at most max_shown)."""
    scope = scope_text("lock waits", found.database, found.server, found.source, found.window)
    if found.source == "postgres_exporter":
        return _render_counts(scope, found)
    waiting, roots = found.waiting, found.roots
    lines = [f"{scope}: {len(waiting)} sessions wait for a lock; {len(roots)} root blocker(s)"]
    if not waiting:
        lines = [f"{scope}: no session waits for a lock."]
    shown: set[int] = set()
    for root in roots:
        behind = len(found.blocked_behind(root.pid))
        lines.append(f"ROOT BLOCKER {session_text(root)}; {behind} session(s) wait behind it")
        lines += _tree(found, root.pid, 1, shown, found.max_shown)
    return "\n".join(lines + ([found.note] if found.note else []))


def session_text(s: LockSession) -> str:
    """`pid 4242 billing/batch idle in transaction (transaction 5.3 min): UPDATE …`, with what and since when it
    waits when it does."""
    who = f"pid {s.pid} {s.application or '(no application)'}/{s.user or '?'} {s.state or '?'}"
    if s.blocked_by:
        since = f" since {iso_z(s.wait_since)}" if s.wait_since else ""
        who += f", waiting {age_text(s.wait_s)}{since} for {s.waiting_for or 'a lock'}"
    elif s.transaction_s is not None:
        who += f" (transaction open {age_text(s.transaction_s)})"
    return f"{who}: {s.statement or '(no statement)'}"


def _tree(found: DbLocks, pid: int, depth: int, shown: set[int], max_rows: int) -> list[str]:
    """The sessions that wait directly for `pid`, each followed by its own waiters; each session once."""
    lines: list[str] = []
    for s in found.sessions:
        if pid not in s.blocked_by or s.pid in shown:
            continue
        if len(shown) >= max_rows:
            return [*lines, "  " * depth + f"… and {len(found.waiting) - len(shown)} more waiting"]
        shown.add(s.pid)
        also = [p for p in s.blocked_by if p != pid]
        extra = f" (also blocked by {', '.join(map(str, also))})" if also else ""
        lines.append("  " * depth + f"└ {session_text(s)}{extra}")
        lines += _tree(found, s.pid, depth + 1, shown, max_rows)
    return lines


def _render_counts(scope: str, found: DbLocks) -> str:
    head = f"{scope}: locks by mode at their peak: " + (
        ", ".join(f"{c.mode} {c.count}" for c in found.counts) or "none recorded"
    )
    lines = [head]
    if found.waiting_peak is not None:
        lines.append(f"sessions waiting on a lock at the peak: {found.waiting_peak}")
    return "\n".join(lines + ([found.note] if found.note else []))
