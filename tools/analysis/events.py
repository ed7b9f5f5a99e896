"""Operational events as suspects: what a person, a job or the cluster did, with its time and actor.

A DDL statement run by hand, a cron job starting a full rebuild, a failover, a campaign launch, a node drain, a
rollback: each can cause an incident without any deploy. The readers (tools/events/) turn log lines, Kubernetes
events and deploy records into OpsEvents; this module classifies log lines by configurable patterns and scores
an event by the same evidence as a deploy (tools/analysis/ranking.py): the time before the onset, the services
it touches, and whether what it is can explain the symptom.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from tools.analysis.reasons import CLOSE, Reason, place_reason

# Log timestamps and metric change points both fall on minutes: an event up to this long after the onset started
# "at" it, not after it.
AT_ONSET = timedelta(minutes=2)

# What each kind of event can explain, in the symptoms of the onset's metric role.
FITS: Mapping[str, frozenset[str]] = {
    "ddl": frozenset({"latency", "errors", "saturation"}),
    "db session": frozenset({"latency", "errors", "saturation"}),
    "job": frozenset({"latency", "errors", "saturation", "cpu", "memory"}),
    "failover": frozenset({"latency", "errors", "traffic"}),
    "campaign": frozenset({"traffic", "errors", "latency", "saturation", "rate_limited"}),
    "drain": frozenset({"latency", "errors", "restarts", "traffic"}),
    "eviction": frozenset({"latency", "errors", "restarts", "traffic"}),
    "node": frozenset({"latency", "errors", "restarts", "traffic"}),
    "restart": frozenset({"errors", "restarts", "memory"}),
    "scaling": frozenset({"latency", "traffic", "saturation", "cpu"}),
    "rollback": frozenset({"latency", "errors", "traffic"}),
    "failed rollout": frozenset({"errors", "restarts", "latency"}),
}
MECHANISM = {
    "ddl": "a DDL statement takes locks and rewrites tables",
    "db session": "a manual database session can hold locks and load the database",
    "job": "a job's batch load competes with live traffic",
    "failover": "a failover drops connections and moves the primary",
    "campaign": "a campaign or batch launch adds load and uses up shared quotas",
    "drain": "a drain moves pods and lowers capacity",
    "eviction": "an eviction restarts pods elsewhere",
    "node": "a node that stops answering takes its pods with it",
    "restart": "restarts drop in-flight work and cold-start the service",
    "scaling": "a scale change moves capacity",
    "rollback": "a rollback puts older code back",
    "failed rollout": "a rollout that never finished leaves pods not ready",
}


@dataclass(frozen=True)
class EventPattern:
    """A kind of event in log lines: the regex that recognises a line, and the words a log search finds it by."""

    kind: str
    match: str  # case-insensitive regex over the message
    words: tuple[str, ...]  # searched with OR; each must occur in every line the regex matches


# Defaults: Postgres statement and connection logs, job runners, Redis Sentinel, Patroni/Raft elections, campaign
# and batch senders. A team replaces or extends them in the events settings.
DEFAULT_PATTERNS = (
    EventPattern(
        "ddl",
        # a line that waits on the statement is its effect, not the event: "still waiting ... blocked by VACUUM FULL"
        r"^(?!.*\b(waiting for|still waiting|blocked by)\b).*?(?P<what>\b(alter table|create (unique )?index"
        r"|drop (table|index)|vacuum \(?full|reindex|truncate)\b)",
        ("ALTER", "INDEX", "VACUUM", "REINDEX", "TRUNCATE", "DROP"),
    ),
    EventPattern("db session", r"connection authorized:.*application(_name)?=psql", ("authorized",)),
    EventPattern(
        "job", r"\b(starting job|job \S+ start(ed|ing)|cron\b.*\bstart|full rebuild)", ("job", "cron", "rebuild")
    ),
    EventPattern(
        "failover",
        r"(\+switch-master|promoted (self )?to (leader|primary)|leader elected|new leader|failover)",
        ("switch-master", "promoted", "leader", "failover"),
    ),
    EventPattern("campaign", r"\b(campaign|batch)\b.*\b(start(ed|ing)?|launch(ed)?)\b", ("campaign", "batch")),
)
ACTOR_FIELDS = ("actor", "user", "usename", "user_name", "username", "initiator")
_ACTOR_IN_TEXT = re.compile(r"(?:\buser=|\bactor=|\bstarted by |\brun by |\bscheduled by )([\w.@-]+)", re.IGNORECASE)


@dataclass(frozen=True)
class OpsEvent:
    """One operational event: when it first happened in the window, what it is, who did it, what it touched."""

    at: datetime
    kind: str  # a key of FITS
    service: str  # the service (or database, or node) it touched
    what: str  # one line, at most 160 characters
    actor: str = ""  # "" when the data names none
    source: str = ""  # "logs", "kubernetes", "deploys"
    count: int = 1  # how many times it was seen in the window
    phrase: str = ""  # what its pattern matched ("ALTER TABLE", "+switch-master"): a log line naming it names this


def patterns_from_config(patterns: Mapping[str, str], words: Sequence[str]) -> tuple[EventPattern, ...]:
    """Configured patterns (kind -> regex) searched by the configured words; none configured = the defaults."""
    if not patterns:
        return DEFAULT_PATTERNS
    return tuple(EventPattern(kind, regex, tuple(words)) for kind, regex in patterns.items())


def kind_of(message: str, patterns: Sequence[EventPattern]) -> tuple[str, str] | None:
    """The kind of the first pattern that matches the message, and the text it matched; None when none does."""
    for pattern in patterns:
        found = re.search(pattern.match, message, re.IGNORECASE)
        if found:  # a pattern may name the part that says what happened (?P<what>...); else the whole match
            return pattern.kind, found.group("what") if "what" in found.groupdict() else found.group(0)
    return None


def naming_line(event: OpsEvent, lines: Sequence[str]) -> str | None:
    """The first log line (a signature new after the onset) that names what the event did: the lock waits that
    say "blocked by ALTER TABLE", the errors that say "+switch-master". Only a phrase of 5+ characters counts."""
    phrase = _letters(event.phrase)  # letters only: "VACUUM (FULL" is named by "(VACUUM FULL, user dba)"
    if len(phrase) < 5:
        return None
    itself = _letters(event.what)[:40]  # the event's own line, new after the onset too, names nothing
    return next((line for line in lines if phrase in _letters(line) and itself not in _letters(line)), None)


def _letters(text: str) -> str:
    return re.sub(r"[^a-z]", "", text.casefold())


def actor_of(message: str, fields: Iterable[tuple[str, str]]) -> str:
    """Who did it: a structured field (actor, user ...), else `user=x` / `started by x` in the message."""
    named = {k.rsplit(".", 1)[-1].lower(): v for k, v in fields}
    found = next((named[k] for k in ACTOR_FIELDS if named.get(k)), "")
    if found:
        return found
    spoken = _ACTOR_IN_TEXT.search(message)
    return spoken.group(1).rstrip(".,;)") if spoken else ""


def in_reach(event: OpsEvent, onset: datetime, lookback: timedelta) -> bool:
    """Whether an event can have caused an onset: in the lookback, or at the onset itself."""
    return onset - lookback <= event.at <= onset + AT_ONSET


def event_reasons(
    event: OpsEvent, target: str, onset: datetime, changed_too: bool | None, symptom: str
) -> list[Reason]:
    """Timing, topology (as a deploy's, tools/analysis/ranking.deploy_reasons) and whether its kind fits the
    symptom. `changed_too` None: the event's object is outside the topology (a node). `symptom` is the onset
    metric's role (latency, errors, memory ...)."""
    if event.at > onset:
        timing = Reason(2, f"at {event.at:%H:%M} UTC, at the onset at {onset:%H:%M} UTC")
    elif onset - event.at <= CLOSE:
        timing = Reason(2, f"at {event.at:%H:%M} UTC, just before the onset at {onset:%H:%M} UTC")
    else:
        timing = Reason(1, f"at {event.at:%H:%M} UTC, well before the onset at {onset:%H:%M} UTC")
    outside = f"{event.service} is not a service of the topology (a node of the cluster)"
    reasons = [timing, place_reason(event.service, target, changed_too, outside)]
    if symptom in FITS.get(event.kind, frozenset()):
        reasons.append(Reason(2, f"{MECHANISM[event.kind]}: it can explain {symptom}"))
    return reasons


def event_title(event: OpsEvent) -> str:
    """`event ddl on accounts-db at 15:02 by dba.jane: statement: ALTER TABLE ...`."""
    by = f" by {event.actor}" if event.actor else ""
    seen = f" ({event.count}x)" if event.count > 1 else ""
    return f"event {event.kind} on {event.service} at {event.at:%H:%M}{by}{seen}: {event.what}"


class EventReader(Protocol):
    """A source of operational events (logs, the Kubernetes API, deploy records): raises when it cannot read."""

    def events(self, services: Sequence[str], start: datetime, end: datetime) -> list[OpsEvent]:
        """The events of `services` (every one when empty) between start and end, oldest first."""
        ...


def read_events(
    readers: Sequence[EventReader], services: Sequence[str], start: datetime, end: datetime
) -> tuple[list[OpsEvent], list[str]]:
    """Every reader's events, oldest first, and a "not run" note per reader that failed (never "no event").
    find_changes reads events through this; the playbook can call it with the same readers."""
    found: list[OpsEvent] = []
    notes: list[str] = []
    for reader in readers:
        try:
            found += reader.events(services, start, end)
        except Exception as exc:  # a backend failure is a check not run
            notes.append(f"not run: events from {type(reader).__name__} ({type(exc).__name__}: {exc})")
    return sorted(found, key=lambda e: e.at), notes
