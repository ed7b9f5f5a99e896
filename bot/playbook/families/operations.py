"""Operations people and schedulers run, read from the logs: a hand-run VACUUM or DDL in a database's log, a campaign
a scheduler started, a maintenance by a named account. No deploy records them, yet they change what a service sees
in the minute they start; the services' logs record them, at INFO as often as at ERROR, with who ran them.

One query over every service's logs around the onset, any level, for the words such lines use; a line is an operation
when it names its actor (a structured `actor`/`user` field, or `user=`, `user <name>`, `by <name.name>` in the text)
and it comes from a service near the degraded ones. The earliest such line is the operation; a line that says sessions
wait behind it (a lock wait naming the same actor) is the blocking chain, quoted with it.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import replace
from datetime import datetime, timedelta

import bot.playbook.families.sessions as sessions
import tools.analysis.changeclass as changeclass
from bot.playbook.families.hypotheses import Operation
from bot.playbook.probes import ProbeRun, iso_from_moment
from tools.logs.model import LogEntry
from tools.logs.render import entry_line, seconds_clock

OPERATIONS_BEFORE = timedelta(minutes=10)  # an operation is at or just before the onset it causes
OPERATIONS_AFTER = timedelta(minutes=3)  # the first change point sits a minute or two into its effect
# The words operation lines use: statements and maintenance in a database, scheduled and manual starts, lock waits.
OPERATION_QUERY = (
    "statement OR VACUUM OR ALTER OR REINDEX OR TRUNCATE OR DROP OR CLUSTER OR started OR scheduled OR manual "
    "OR maintenance OR blocked OR waiting OR psql OR kubectl OR failover OR promoted OR restarted"
)
_ACTOR_FIELDS = ("actor", "user", "usename", "username")
# user=dba.okafor, user dba.okafor, by crm.lucia (a dotted account, not "by process 4711" or "by ALTER TABLE")
_ACTOR_RX = re.compile(r"\buser[= ]([A-Za-z][\w.@-]*\w)|\bby ([a-z][\w-]*\.[\w.-]*\w)")
_WAIT_RX = re.compile(r"\b(?:blocked by|waiting for|waits? for|behind)\b", re.IGNORECASE)
_SYSTEM_ACTORS = frozenset({"postgres", "system", "root", "kubelet", "scheduler"})


def check_operations(run: ProbeRun, near: Collection[str], onset: datetime) -> Operation | None:
    """The operation a named actor ran on a service in `near` just before `onset`, read from every service's logs."""
    if "query_logs" not in run.tools or not near:
        return None
    thought = (
        f"No deploy explains the change at {onset:%H:%M} UTC; an operation someone ran (a statement in a database, "
        "a maintenance, a scheduled job) is logged with who ran it: reading every service's lines around it."
    )
    args = {
        "service": "*",
        "query": OPERATION_QUERY,
        "start": iso_from_moment(onset - OPERATIONS_BEFORE),
        "end": iso_from_moment(onset + OPERATIONS_AFTER),
        "limit": 200,
    }
    summary = run.read_logs(thought, args)
    if summary is None:
        return None
    clock = seconds_clock(summary.window)
    entries = sorted((line.entry for line in summary.newest if line.entry.service in near), key=lambda e: e.timestamp)
    acted = [(entry, actor) for entry in entries if (actor := actor_of(entry))]
    if not acted:
        return None
    # what an actor ran outranks the session they opened for it ("connection authorized" comes first)
    first, actor = next(((e, who) for e, who in acted if sessions.ran_a_statement(e)), acted[0])
    waits = [e for e, who in acted if who == actor and e is not first and _WAIT_RX.search(e.message)]
    operation = Operation(
        first.timestamp,
        first.service,
        actor,
        entry_line(first, clock, trace=False),
        entry_line(waits[0], clock, trace=False) if waits else "",
    )
    held = sessions.check_hold(run, operation, first, onset)
    return held if held.blocking else check_throttled(run, held, onset)


def check_throttled(run: ProbeRun, operation: Operation, onset: datetime) -> Operation:
    """The operation with its own service's first line since it ran that says a dependency throttles it (a 429, a
    quota used up): a load someone started spends a limit it may share with the services that fail."""
    thought = (
        f"{operation.actor} started something on {operation.service}: a load it sends can use up a limit it shares "
        f"with others (a provider's rate limit, a quota). Reading {operation.service}'s warnings and errors since."
    )
    args = {
        "service": operation.service,
        "level": "ERROR,WARN",
        "start": iso_from_moment(operation.at),
        "end": iso_from_moment(onset + sessions.HOLD_AFTER),
    }
    summary = run.read_logs(thought, args)
    blocks = [b for b in (summary.signatures, summary.warnings) if b is not None] if summary else []
    signatures = [sig for block in blocks for sig in block.top]
    found = next((s for s in signatures if changeclass.THROTTLING in changeclass.symptoms_in_text(s.template)), None)
    if found is None:
        return operation
    said = f'{found.count:,} lines since {found.first_at:%H:%M} UTC like "{found.example.message}"'
    return replace(operation, throttled=said)


def actor_of(entry: LogEntry) -> str:
    """Who ran what the line records: its actor or user field, else a user or a dotted account named in the text;
    "" when none, or only the system itself (postgres, the kubelet)."""
    fields = dict(entry.fields)
    named = next((fields[k] for k in _ACTOR_FIELDS if fields.get(k)), "")
    if not named and (match := _ACTOR_RX.search(entry.message)):
        named = match.group(1) or match.group(2)
    return "" if named.lower() in _SYSTEM_ACTORS else named
