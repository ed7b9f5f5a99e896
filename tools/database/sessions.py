"""Who is connected to a database and what runs longest (DbSessions), and how close it is to max_connections
(DbConnections): frozen values built from pg_stat_activity's rows or postgres_exporter's series, and their text.

Plain data, no client: tools/database/sql.py and tools/database/exporter.py read the backends.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Literal

from tools.base import ToolData
from tools.database.statements import statement_text
from tools.database.units import age_text, scope_text
from tools.timerange import TimeWindow, iso_z

Source = Literal["sql", "postgres_exporter"]
BUSY_STATES = ("active", "idle in transaction", "idle in transaction (aborted)")
QUIET_WAITS = ("Client", "Activity")


@dataclass(frozen=True)
class SessionGroup:
    """The sessions that share an application_name, a user and a state ("" when the source does not say)."""

    application: str
    user: str
    state: str
    count: int


@dataclass(frozen=True)
class Statement:
    """One session's current statement: how long it has run (active) or sat idle in its transaction."""

    pid: int
    application: str
    user: str
    state: str
    running_s: float | None  # since the statement started (active) or since the session went idle (in transaction)
    transaction_s: float | None  # since its transaction began; None outside one
    wait: str = ""  # `Lock:transactionid`, `IO:DataFileRead`; "" when not waiting
    text: str = ""  # literals masked, cut (tools/database/statements.py)


@dataclass(frozen=True)
class DbSessions(ToolData):
    kind: ClassVar[str] = "db_sessions"
    database: str
    server: str
    source: Source
    total: int  # client sessions (of `application`, when asked)
    groups: tuple[SessionGroup, ...]  # biggest first, at most the tool's maximum
    longest: tuple[Statement, ...] = ()  # longest-running first; SQL only
    application: str = ""  # the application_name asked for; "" = every one
    longest_transaction_s: float | None = None  # the exporter's max_tx_duration at its peak in the window
    window: TimeWindow | None = None  # the exporter's window; None: now
    note: str = ""


@dataclass(frozen=True)
class RoleLimit:
    """A role with a connection limit of its own (rolconnlimit), and how many it uses."""

    role: str
    used: int
    limit: int


@dataclass(frozen=True)
class DbConnections(ToolData):
    kind: ClassVar[str] = "db_connections"
    database: str
    server: str
    source: Source
    used: int  # client connections now (the exporter: at the end of the window)
    max_connections: int | None
    superuser_reserved: int = 0  # superuser_reserved_connections
    reserved: int = 0  # reserved_connections (Postgres 16+), for roles granted pg_use_reserved_connections
    by_state: tuple[tuple[str, int], ...] = ()  # most first
    by_application: tuple[tuple[str, int], ...] = ()  # most first, at most the tool's maximum
    role_limits: tuple[RoleLimit, ...] = ()
    peak: int | None = None  # the exporter: the most in the window, and when
    peak_at: datetime | None = None
    window: TimeWindow | None = None
    note: str = ""

    @property
    def available(self) -> int | None:
        """Connections an ordinary role may still open; None when max_connections is unknown."""
        if self.max_connections is None:
            return None
        return self.max_connections - self.superuser_reserved - self.reserved - self.used

    @property
    def used_share(self) -> float | None:
        """`used` over what ordinary roles may open (max_connections less the reserved slots)."""
        limit = (self.max_connections or 0) - self.superuser_reserved - self.reserved
        return self.used / limit if limit > 0 else None


def sessions_from_rows(
    rows: Iterable[Mapping[str, Any]], *, database: str, server: str, application: str, max_rows: int, max_chars: int
) -> DbSessions:
    """DbSessions from pg_stat_activity's client backends (the SESSIONS query)."""
    mine = [r for r in rows if not application or (r.get("application_name") or "") == application]
    counts = Counter((r.get("application_name") or "", r.get("usename") or "", r.get("state") or "") for r in mine)
    groups = tuple(SessionGroup(a, u, s, n) for (a, u, s), n in counts.most_common(max_rows))
    busy = [r for r in mine if r.get("state") in BUSY_STATES and r.get("state_s") is not None]
    busy.sort(key=lambda r: float(r["state_s"]), reverse=True)
    longest = tuple(statement_from_row(r, max_chars) for r in busy[:max_rows])
    return DbSessions(database, server, "sql", len(mine), groups, longest, application)


def statement_from_row(row: Mapping[str, Any], max_chars: int) -> Statement:
    kind = row.get("wait_event_type") or ""
    # A client's own silence (ClientRead while idle in transaction) is no wait on the server: left out.
    wait = f"{kind}:{row.get('wait_event') or ''}" if kind and kind not in QUIET_WAITS else ""
    return Statement(
        int(row["pid"]),
        row.get("application_name") or "",
        row.get("usename") or "",
        row.get("state") or "",
        _float(row.get("state_s")),
        _float(row.get("xact_s")),
        wait,
        statement_text(row.get("query"), max_chars),
    )


def connections_from_rows(
    summary: Mapping[str, Any], rows: Iterable[Mapping[str, Any]], *, database: str, server: str, max_rows: int
) -> DbConnections:
    """DbConnections from the CONNECTIONS summary row and the per-session rows (state, application, role limit)."""
    sessions = list(rows)
    states = Counter(r.get("state") or "(no state)" for r in sessions)
    apps = Counter(r.get("application_name") or "(none)" for r in sessions)
    used_by_role = Counter(r.get("usename") or "" for r in sessions)
    limits = {r["usename"]: int(r["rolconnlimit"]) for r in sessions if (r.get("rolconnlimit") or -1) >= 0}
    return DbConnections(
        database,
        server,
        "sql",
        len(sessions),
        int(summary["max_connections"]),
        int(summary.get("superuser_reserved") or 0),
        int(summary.get("reserved") or 0),
        tuple(states.most_common()),
        tuple(apps.most_common(max_rows)),
        tuple(RoleLimit(role, used_by_role[role], limit) for role, limit in sorted(limits.items())),
    )


def render_sessions(found: DbSessions) -> str:
    """A header with the total, the groups on one line, then one line per long-running statement."""
    scope = scope_text("sessions", found.database, found.server, found.source, found.window)
    only = f" of application {found.application}" if found.application else ""
    lines = [f"{scope}: {found.total} client sessions{only}"]
    if found.groups and not any(g.application or g.user for g in found.groups):  # postgres_exporter's default series
        by_state = ", ".join(f"{g.state or '?'} x{g.count}" for g in found.groups)
        lines.append(f"by state: {by_state} (these series name no application or user: not tied to one)")
    elif found.groups:
        lines.append("by application/user and state: " + ", ".join(map(_group_text, found.groups)))
    if found.longest_transaction_s is not None:
        lines.append(f"longest open transaction in the window: {age_text(found.longest_transaction_s)}")
    if found.longest:
        lines.append("longest-running (literals masked as ?):")
        lines += [f"  {statement_line(s)}" for s in found.longest]
    elif found.source == "sql":
        lines.append("no statement is running or holding a transaction open.")
    return "\n".join(lines + ([found.note] if found.note else []))


def statement_line(s: Statement) -> str:
    """`pid 4242 billing/batch idle in transaction 5.2 min (transaction 5.3 min), waiting Lock:…: UPDATE …`."""
    open_for = f" (transaction {age_text(s.transaction_s)})" if s.transaction_s is not None else ""
    wait = f", waiting {s.wait}" if s.wait else ""
    who = f"{s.application or '(no application)'}/{s.user or '?'}"
    return f"pid {s.pid} {who} {s.state} {age_text(s.running_s)}{open_for}{wait}: {s.text or '(no statement)'}"


def render_connections(found: DbConnections) -> str:
    """`connections on …: 17 of 20 (max_connections; 3 reserved for superusers): 0 left for ordinary roles`."""
    scope = scope_text("connections", found.database, found.server, found.source, found.window)
    lines = [f"{scope}: {connections_summary(found)}"]
    if found.peak is not None:
        lines.append(f"peak in the window: {found.peak} at {iso_z(found.peak_at) if found.peak_at else '?'}")
    if found.by_state:
        lines.append("by state: " + ", ".join(f"{state} {n}" for state, n in found.by_state))
    if found.by_application:
        lines.append("by application: " + ", ".join(f"{app} {n}" for app, n in found.by_application))
    for r in found.role_limits:
        lines.append(
            f"role {r.role}: {r.used} of its own limit of {r.limit}{' (AT THE LIMIT)' if r.used >= r.limit else ''}"
        )
    return "\n".join(lines + ([found.note] if found.note else []))


def connections_summary(found: DbConnections) -> str:
    """`17 of 20 (3 reserved for superusers), 0 left for ordinary roles (at the limit)`."""
    if found.max_connections is None:
        return f"{found.used} client connections (max_connections unknown)"
    reserved = [f"{found.superuser_reserved} reserved for superusers"] if found.superuser_reserved else []
    reserved += [f"{found.reserved} reserved for pg_use_reserved_connections"] if found.reserved else []
    left = found.available or 0
    warning = " (AT THE LIMIT: new connections are refused)" if left <= 0 else ""
    share = f" ({found.used_share:.0%} used)" if found.used_share is not None and left > 0 else ""
    extra = f" ({'; '.join(reserved)})" if reserved else ""
    return f"{found.used} of max_connections {found.max_connections}{extra}, {max(left, 0)} left{share}{warning}"


def _group_text(g: SessionGroup) -> str:
    who = "/".join(part or "?" for part in (g.application or "(none)", g.user))
    return f"{who} {g.state or '?'} x{g.count}"


def _float(value: Any) -> float | None:
    return None if value is None else float(value)
