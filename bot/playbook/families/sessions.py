"""What an operation's session holds in a database, in the database's own words.

A statement someone ran by hand (a DDL, a transaction left open in psql) is a cause only while it holds something the
services wait for. The database records that: a wait line names the process that blocks it ("blocked by process
48213"), a monitor names a session idle in transaction with its user. Those lines name the operation's session, by its
process id or by its actor, so one query for those marks, from the moment it ran until a while after the onset, shows
whether anyone queues behind it; no table, user or engine name is assumed.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime, timedelta

from bot.playbook.families.hypotheses import Operation
from bot.playbook.probes import ProbeRun, iso_from_moment
from tools.logs.model import LogEntry
from tools.logs.render import entry_line, seconds_clock

HOLD_AFTER = timedelta(minutes=15)  # waits pile up for minutes after the onset; a monitor reports an idle session late
_SESSION_FIELDS = ("pid", "process_id", "backend_pid", "session_id")
# A line saying a session waits on another, or holds its transaction open while idle.
_WAITS_RX = re.compile(r"\b(?:blocked by|still waiting|waiting for|waits? for)\b", re.IGNORECASE)
_IDLE_RX = re.compile(r"\bidle in transaction\b", re.IGNORECASE)
# A statement run, not a session opened: what the operation is, when its actor has several lines.
_STATEMENT_RX = re.compile(
    r"\bstatement:|\b(?:ALTER|UPDATE|DELETE|INSERT|VACUUM|REINDEX|TRUNCATE|DROP|CREATE|LOCK|BEGIN|CLUSTER)\b"
)
# A statement that takes a table lock others queue behind (a rewrite, a full vacuum, an explicit lock, an index built
# without CONCURRENTLY), and the table it names: wait lines name the table, not the session, when no pid is logged.
_LOCKING_RX = re.compile(
    r"\b(?:ALTER\s+TABLE(?:\s+ONLY)?(?:\s+IF\s+EXISTS)?|LOCK\s+TABLE(?:\s+ONLY)?|VACUUM\s+\(?FULL\)?"
    r"|TRUNCATE\s+TABLE|(?-i:TRUNCATE|CLUSTER)|REINDEX\s+TABLE|DROP\s+TABLE(?:\s+IF\s+EXISTS)?"
    r"|CREATE\s+(?:UNIQUE\s+)?INDEX\s+(?!CONCURRENTLY)(?:[\w\"]+\s+)?ON(?:\s+ONLY)?)\s+([A-Za-z_\"][\w.\"]*)",
    re.IGNORECASE,
)
# What the services log when their queries wait out a lock another session holds.
LOCK_WAIT_RX = re.compile(r"\block timeout|\bstatement timeout|\bwaiting for \w*lock|\bdeadlock", re.IGNORECASE)


def ran_a_statement(entry: LogEntry) -> bool:
    """Whether the line records a statement being run (a statement field, or one in the text)."""
    return any(key == "statement" and value for key, value in entry.fields) or bool(_STATEMENT_RX.search(entry.message))


def locked_tables(entry: LogEntry) -> list[str]:
    """The tables a lock-taking statement on the line names, without their schema ([] for other statements)."""
    texts = [entry.message, *(value for key, value in entry.fields if key == "statement")]
    return list(dict.fromkeys(name for t in texts for name in tables_locked_by(t)))


def tables_locked_by(text: str) -> list[str]:
    """The tables a lock-taking statement in `text` names, without their schema (a diff's migration, a log line)."""
    found = [m.group(1).strip('"').rsplit(".", 1)[-1].strip('"') for m in _LOCKING_RX.finditer(text)]
    return list(dict.fromkeys(name for name in found if name))


def session_marks(entry: LogEntry, actor: str) -> list[str]:
    """What names the operation's session in other lines: its actor, its process id where the line has one, and
    the tables its statement locks (a wait line names the relation it waits on)."""
    fields = dict(entry.fields)
    marks = (actor, *(fields.get(k, "") for k in _SESSION_FIELDS), *locked_tables(entry))
    return list(dict.fromkeys(m for m in marks if m))


def check_hold(run: ProbeRun, operation: Operation, entry: LogEntry, onset: datetime) -> Operation:
    """The operation with the database's lines that show its session holding others up (unchanged when none do)."""
    marks = session_marks(entry, operation.actor)
    if operation.blocking or not marks or "query_logs" not in run.tools:
        return operation
    thought = (
        f"{operation.actor}'s statement on {operation.service} is a cause only if its session holds something others "
        f"wait for: reading {operation.service}'s lines that name its session ({', '.join(marks)}) until "
        f"{onset + HOLD_AFTER:%H:%M} UTC."
    )
    args = {
        "service": operation.service,
        "query": " OR ".join(f'"{m}"' for m in marks),
        "start": iso_from_moment(operation.at),
        "end": iso_from_moment(onset + HOLD_AFTER),
        "limit": 100,
    }
    summary = run.read_logs(thought, args)
    if summary is None:
        return operation
    clock = seconds_clock(summary.window)
    lines = sorted((line.entry for line in summary.newest), key=lambda e: e.timestamp)
    named = [e for e in lines if e.timestamp > entry.timestamp and _names_session(e, marks)]
    held = [next((e for e in named if rx.search(e.message)), None) for rx in (_WAITS_RX, _IDLE_RX)]
    quoted = [entry_line(e, clock, trace=False) for e in held if e is not None]
    return replace(operation, blocking=" / ".join(quoted)) if quoted else operation


def _names_session(entry: LogEntry, marks: list[str]) -> bool:
    text = " ".join([entry.message, *(value for _, value in entry.fields)])
    return any(re.search(rf"(?<![\w.]){re.escape(m)}(?![\w])", text) for m in marks)
