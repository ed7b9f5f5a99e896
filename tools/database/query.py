"""The read-only database tools: query_db_sessions, query_db_locks, query_db_replication, query_db_storage and
query_db_connections, over the configured Postgres targets.

A target is read by SQL where a read-only role is configured (tools/database/sql.py) and from postgres_exporter's
series in Prometheus where they exist (tools/database/exporter.py). SQL shows the server now, in detail (statements,
the blocking chain); the exporter shows a window (how disk and connections moved). When SQL fails and the exporter
has the view, the exporter answers and the text says why. `database` is a target's name or a service one lists;
both are checked against the configuration before anything is read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any, TypeVar

from tools.base import ToolData, ToolError, ToolResult, ToolSpec, tool
from tools.choices import choice_or_error
from tools.database import queries
from tools.database.exporter import ExporterViews
from tools.database.locks import DbLocks, locks_from_rows, render_locks
from tools.database.replication import (
    DbReplication,
    ReplayState,
    render_replication,
    replay_from_row,
    replica_from_row,
    slot_from_row,
)
from tools.database.sessions import (
    DbConnections,
    DbSessions,
    connections_from_rows,
    render_connections,
    render_sessions,
    sessions_from_rows,
)
from tools.database.sql import PostgresReader, SqlSession
from tools.database.storage import NO_EXPORTER, NO_HISTORY, DbStorage, SizeSeries, render_storage
from tools.timerange import Clock, TimeWindow, utc_now, window_from_args

_V = TypeVar("_V", bound=ToolData)
PAST = timedelta(minutes=10)  # a window that ended longer ago than this is not what SQL's "now" shows


@dataclass(frozen=True)
class Target:
    """One Postgres server: its name, how it is read, the services that use it, the targets replicating from it."""

    name: str
    sql: PostgresReader | None = None
    exporter: ExporterViews | None = None
    services: tuple[str, ...] = ()
    replicas: tuple[str, ...] = ()


class DatabaseTools:
    """The five views over the configured targets."""

    def __init__(self, targets: list[Target], *, max_rows: int = 10, max_chars: int = 200, clock: Clock = utc_now):
        if not targets:
            raise ValueError("the database toolset needs at least one target")
        self.targets = {t.name: t for t in targets}
        unknown = sorted({r for t in targets for r in t.replicas} - set(self.targets))
        if unknown:
            raise ValueError(f"database replicas name no configured target: {', '.join(unknown)}")
        self.max_rows, self.max_chars, self.clock = max_rows, max_chars, clock

    @property
    def names(self) -> list[str]:
        """What `database` may be: every target's name, then every service a target lists."""
        services = [s for t in self.targets.values() for s in t.services if s not in self.targets]
        return list(self.targets) + sorted(set(services))

    def target(self, database: str) -> Target:
        name = choice_or_error(database.strip(), self.names, "database", "the configured databases and their services")
        return self.targets.get(name) or next(t for t in self.targets.values() if name in t.services)

    def specs(self) -> list[ToolSpec]:
        names = {"database": self.names}
        docs = (
            (self.query_db_sessions, _SESSIONS_DOC),
            (self.query_db_locks, _LOCKS_DOC),
            (self.query_db_replication, _REPLICATION_DOC),
            (self.query_db_storage, _STORAGE_DOC),
            (self.query_db_connections, _CONNECTIONS_DOC),
        )
        return [tool(f, description=d.format(most=self.max_rows), choices=names) for f, d in docs]

    def query_db_sessions(
        self, database: str, application: str = "", range: str = "1h", start: str = "", end: str = ""
    ) -> ToolResult:
        """Run query_db_sessions (the description shown to the model is _SESSIONS_DOC)."""
        target, window = self.target(database), window_from_args(range, start, end, self.clock())

        def by_sql(db: SqlSession) -> DbSessions:
            rows = db.rows(queries.SESSIONS)
            _known_application(application, rows)
            return sessions_from_rows(
                rows, database=target.name, server="", application=application, max_rows=self.max_rows,
                max_chars=self.max_chars,
            )  # fmt: skip

        def by_exporter(views: ExporterViews) -> DbSessions | None:
            return views.sessions(target.name, application, window)

        return self._answer(target, window, by_sql, by_exporter, render_sessions)

    def query_db_locks(self, database: str, range: str = "1h", start: str = "", end: str = "") -> ToolResult:
        """Run query_db_locks (the description shown to the model is _LOCKS_DOC)."""
        target, window = self.target(database), window_from_args(range, start, end, self.clock())

        def by_sql(db: SqlSession) -> DbLocks:
            rows, most = db.rows(queries.LOCKS), self.max_rows
            return locks_from_rows(rows, database=target.name, server="", max_chars=self.max_chars, max_shown=most)

        def by_exporter(views: ExporterViews) -> DbLocks | None:
            return views.locks(target.name, window)

        return self._answer(target, window, by_sql, by_exporter, render_locks)

    def query_db_replication(self, database: str, range: str = "1h", start: str = "", end: str = "") -> ToolResult:
        """Run query_db_replication (the description shown to the model is _REPLICATION_DOC)."""
        target, window = self.target(database), window_from_args(range, start, end, self.clock())

        def by_sql(db: SqlSession) -> DbReplication:
            replica = bool(db.row(queries.IN_RECOVERY)["in_recovery"])
            own = (replay_from_row(target.name, db.row(queries.REPLAY)),) if replica else ()
            standbys = () if replica else tuple(map(replica_from_row, db.rows(queries.STANDBYS)))
            slots = tuple(map(slot_from_row, db.rows(queries.SLOTS)))
            replays = own + tuple(self._replay_of(name) for name in target.replicas)
            return DbReplication(target.name, "", "sql", "replica" if replica else "primary", standbys, replays, slots)

        def by_exporter(views: ExporterViews) -> DbReplication | None:
            return views.replication(target.name, window)

        return self._answer(target, window, by_sql, by_exporter, render_replication)

    def query_db_storage(self, database: str, range: str = "24h", start: str = "", end: str = "") -> ToolResult:
        """Run query_db_storage (the description shown to the model is _STORAGE_DOC)."""
        target, window = self.target(database), window_from_args(range, start, end, self.clock())
        why, unread = NO_HISTORY if target.exporter is not None else NO_EXPORTER, ""
        try:
            history = target.exporter.storage(target.name, window) if target.exporter is not None else None
        except ToolError as exc:  # Prometheus down: the current sizes by SQL still answer, saying why
            if target.sql is None:
                raise
            unread = f"postgres_exporter's series could not be read ({exc})"
            history, why = None, f"History is not available: {unread}; these are the current sizes."
        if history is not None or target.sql is None:
            return self._answer(target, window, None, lambda views: history, render_storage)
        # when SQL fails too, the error says both
        return self._answer(target, window, self._sql_storage(target.name, why), _raises(unread), render_storage)

    def query_db_connections(self, database: str, range: str = "1h", start: str = "", end: str = "") -> ToolResult:
        """Run query_db_connections (the description shown to the model is _CONNECTIONS_DOC)."""
        target, window = self.target(database), window_from_args(range, start, end, self.clock())

        def by_sql(db: SqlSession) -> DbConnections:
            limits, rows = db.row(queries.CONNECTION_LIMITS), db.rows(queries.SESSIONS)
            return connections_from_rows(limits, rows, database=target.name, server="", max_rows=self.max_rows)

        def by_exporter(views: ExporterViews) -> DbConnections | None:
            return views.connections(target.name, window)

        return self._answer(target, window, by_sql, by_exporter, render_connections)

    def _sql_storage(self, name: str, why: str) -> Callable[[SqlSession], DbStorage]:
        """The current sizes by SQL; `why` says why there is no history."""

        def by_sql(db: SqlSession) -> DbStorage:
            sizes = [SizeSeries(r["datname"], "database", r["size_bytes"]) for r in db.rows(queries.DATABASE_SIZES)]
            try:
                wal = db.row(queries.WAL_SIZE)
            except ToolError as exc:  # pg_ls_waldir() needs pg_monitor: the databases' sizes still stand
                return DbStorage(name, "", "sql", tuple(sizes), note=f"{why} The WAL size is unknown: {exc}")
            sizes.append(SizeSeries("WAL", "wal", wal["size_bytes"]))
            return DbStorage(name, "", "sql", tuple(sizes), segments=int(wal["segments"]), note=why)

        return by_sql

    def _replay_of(self, name: str) -> ReplayState:
        """A configured replica's own replay; why not, when it cannot be asked."""
        replica = self.targets.get(name)
        if replica is None or replica.sql is None:
            return ReplayState(name, None, error="no SQL access to it is configured")
        try:
            with replica.sql.session() as db:
                return replay_from_row(name, db.row(queries.REPLAY))
        except ToolError as exc:
            return ReplayState(name, None, error=str(exc))

    def _answer(
        self,
        target: Target,
        window: TimeWindow,
        by_sql: Callable[[SqlSession], _V] | None,
        by_exporter: Callable[[ExporterViews], _V | None] | None,
        render: Callable[[_V], str],
    ) -> ToolResult:
        """SQL when the target has it, else (or when SQL fails) the exporter; the text says which, and why."""
        failed = ""
        if by_sql is not None and target.sql is not None:
            try:
                with target.sql.session() as db:
                    found = replace(by_sql(db), server=target.sql.where)  # type: ignore[type-var]
                return _result(found, self._past(window), render)
            except ToolError as exc:
                if by_exporter is None or target.exporter is None:
                    raise
                failed = f"SQL failed ({exc}); from postgres_exporter instead."
        if by_exporter is None or target.exporter is None:
            raise ToolError(
                f"{target.name} has neither SQL access nor postgres_exporter series configured for this view"
            )
        try:
            found_exporter = by_exporter(target.exporter)
        except ToolError as exc:  # both sources failed: say both, the SQL failure first
            raise ToolError(f"{failed} {exc}".strip()) from exc
        if found_exporter is None:
            hint = "check database.exporter_label and the target's exporter_value"
            missing = f"Prometheus holds no postgres_exporter series for {target.name} in the window; {hint}."
            raise ToolError(f"{failed} {missing}".strip())
        return _result(found_exporter, failed, render)

    def _past(self, window: TimeWindow) -> str:
        if self.clock() - window.end <= PAST:
            return ""
        return f"Note: SQL shows the server now, not the window asked for ({window.describe()})."


def _known_application(application: str, rows: Sequence[Mapping[str, Any]]) -> None:
    """An application_name filter must be one the server holds now."""
    if application:
        present = sorted({r.get("application_name") or "" for r in rows} - {""})
        choice_or_error(application, present, "application", "the application_names connected now")


def _raises(error: str) -> Callable[[ExporterViews], None] | None:
    """An exporter read that failed already, replayed as its error (None: there was no failure to replay)."""
    if not error:
        return None

    def read(views: ExporterViews) -> None:
        raise ToolError(error)

    return read


def _result(found: _V, note: str, render: Callable[[_V], str]) -> ToolResult:
    """The view with `note` added to its own, and its text rendered from it: the text is its data's, note and all."""
    own = str(getattr(found, "note", ""))  # every database view has a note
    if note:
        found = replace(found, note=f"{own}\n{note}" if own else note)  # type: ignore[type-var]
    return ToolResult("ok", render(found), found)


_SESSIONS_DOC = """\
Sessions on one Postgres database by application, user and state; the longest-running statements (literals masked) \
and how long each ran or sat idle in transaction.
Use it for pool exhaustion, too many clients, statement timeouts or slow queries: who holds the connections.
Legal values: database: a database, or a service that uses one; application: one application_name, \
empty = all; range <n>m|h|d or start/end (the exporter's window; SQL shows now).
Returns at most {most} groups and {most} statements."""

_LOCKS_DOC = """\
Lock waits on one Postgres database: who blocks whom, since when, on which lock, with what statement; the root \
blocker of each chain first (often a session idle in transaction).
Use it for lock timeouts, deadlocks, statements that hang.
Legal values: database as for query_db_sessions; range as for query_db_sessions (the exporter: lock counts by mode).
Returns each root blocker and at most {most} sessions behind it."""

_REPLICATION_DOC = """\
Replication of one Postgres server: each replica's lag (bytes, seconds), replay paused or stuck, and each slot's \
retained WAL (an inactive slot holding WAL is ORPHANED).
Use it for stale reads, a lagging replica, or a filling WAL disk.
Legal values: database as for query_db_sessions; range as for query_db_sessions.
Returns one line per replica, replay and slot."""

_STORAGE_DOC = """\
Disk used by one Postgres server: each database's size and the WAL's over the window (growth per hour, peak), or \
the sizes now by SQL when no history exists (it says so).
Use it for a filling disk (no space left on device, could not extend file) or WAL growth.
Legal values: database as for query_db_sessions; range <n>m|h|d (default 24h) or start/end.
Returns one line per database, the WAL and each slot's retained WAL."""

_CONNECTIONS_DOC = """\
Connections to one Postgres server against max_connections and reserved slots: used, still open to an ordinary \
role, by state and application, roles at their own limit.
Use it when clients cannot connect or a pool waits for a connection.
Legal values: database as for query_db_sessions; range as for query_db_sessions (the exporter adds the window's peak).
Returns the counts and at most {most} applications."""
