"""The database toolset's prerequisites check, one line for `opsbot toolsets` and doctor: per target, that SQL
connects, that the session is read-only and the role cannot write, that every view's reads answer, and that
Prometheus holds the target's postgres_exporter series.

"fail" when no target answers; "warn" when one answers with a problem (a superuser or a role that may write
tables, no pg_monitor, a view that errs, no exporter series) or another does not answer.
"""

from __future__ import annotations

from datetime import timedelta

from tools.base import ToolError
from tools.database import queries
from tools.database.query import DatabaseTools, Target
from tools.database.sql import SqlSession
from tools.timerange import TimeWindow
from tools.toolset import CheckWarning

RECENT = timedelta(minutes=15)  # the exporter's series must have samples this recent
VIEW_READS = (
    queries.SESSIONS,
    queries.LOCKS,
    queries.CONNECTION_LIMITS,
    queries.IN_RECOVERY,
    queries.SLOTS,
    queries.DATABASE_SIZES,
)


def check_database(tools: DatabaseTools) -> str:
    """`orders-db: SQL as opsbot_ro (read-only, pg_monitor, PostgreSQL 15.8), views answer; exporter series present`
    per target; raises CheckWarning or ToolError as the module says."""
    lines, problems, dead = [], [], 0
    for target in tools.targets.values():
        line, trouble, answered = _check_target(target, tools)
        lines.append(line)
        problems += trouble
        dead += 0 if answered else 1
    text = "; ".join(lines)
    if dead == len(tools.targets):
        raise ToolError(text)
    if problems or dead:
        raise CheckWarning(text)
    return text


def _check_target(target: Target, tools: DatabaseTools) -> tuple[str, list[str], bool]:
    parts: list[str] = []
    problems: list[str] = []
    answered = False
    if target.sql is not None:
        try:
            with target.sql.session() as db:
                parts.append(f"SQL {_role(db, problems)}")
                answered = True
                parts.append(_views(db, problems))
        except ToolError as exc:
            parts.append(str(exc))
            problems.append("sql")
    if target.exporter is not None:
        now = tools.clock()
        try:
            present = target.exporter.present(TimeWindow(now - RECENT, now))
            answered = answered or present
        except ToolError as exc:
            present = False
            parts.append(str(exc))
        parts.append(f"postgres_exporter series {'present' if present else 'MISSING'} ({target.exporter.selector})")
        problems += [] if present else ["exporter"]
    return f"{target.name}: {', '.join(parts)}", problems, answered


def _role(db: SqlSession, problems: list[str]) -> str:
    """`as opsbot_ro (read-only, pg_monitor, PostgreSQL 15.8)`, naming each problem with the role in capitals."""
    role = db.row(queries.ROLE)
    notes = ["read-only" if role["read_only"] == "on" else "NOT READ-ONLY"]
    if role["superuser"]:
        notes.append("SUPERUSER: use a role of its own with pg_monitor")
    if role["writable_tables"]:
        notes.append(f"MAY WRITE {role['writable_tables']} tables: grant it pg_monitor only")
    notes.append("pg_monitor" if role["monitor"] else "NO pg_monitor: other roles' statements are hidden")
    problems += [n for n in notes if n[:2].isupper()]
    return f"as {role['role']} ({', '.join(notes)}, PostgreSQL {role['version']})"


def _views(db: SqlSession, problems: list[str]) -> str:
    """`the views answer`, or how many of their reads failed and the first failure."""
    failed = []
    for statement in (*VIEW_READS, queries.WAL_SIZE):
        try:
            db.rows(statement)
        except ToolError as exc:
            failed.append(str(exc))
    if not failed:
        return "the views answer"
    problems.append("views")
    return f"{len(failed)} of the views' reads FAILED: {failed[0]}"
