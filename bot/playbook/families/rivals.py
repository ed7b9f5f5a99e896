"""An operation someone ran and a deploy, weighed against each other on the same evidence.

An operation (a campaign started, a job run by hand) is a rival to a deploy, not a fallback for when no deploy is
found: it is scored like one. It counts for its timing, for the actor on record, for where its service sits (a caller
of a dependency that changed at the onset, shared with the asked service) and for what the errors since the onset name
in common with its line (an account, a table, a host). A deploy, in turn, counts against itself when the dependency its
service shares with others took more load at the onset and its own service did not: the extra load came from another
caller.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

import bot.playbook.families.sessions as sessions
import tools.analysis.changeclass as changeclass
import tools.analysis.ranking as ranking
from bot.playbook.families.hypotheses import Operation
from bot.playbook.findings import Findings, Suspect
from tools.analysis.reasons import CLOSE, Reason
from tools.deploys.records import DeployRecord

# An identifier worth matching between two lines: a word with a dash, an underscore, a dot or a digit inside it and at
# least six characters (an account, a table, a host), not a bare English word that any two lines share.
_IDENTIFIER_RX = re.compile(r"(?<![\w.-])(?=[\w.-]*[-_.\d])[A-Za-z][\w.-]{4,}\w(?![\w-])")


def operation_suspect(
    findings: Findings, topology: Mapping[str, Sequence[str]], target: str, operation: Operation, onset: datetime
) -> Suspect:
    """The operation as a suspect: timing, actor, the shared dependency that changed, identifiers the errors share."""
    suspect = Suspect(operation.describe(), operation.service)
    close = abs(onset - operation.at) <= CLOSE
    timing = f"it ran at {operation.at:%H:%M} UTC, {'at' if close else 'well before'} the onset at {onset:%H:%M} UTC"
    suspect.add([Reason(2 if close else 1, timing), Reason(1, f"{operation.actor} is on record as running it")])
    suspect.add(_shared_change(findings, topology, operation.service, target))
    shared = _shared_identifier(operation.line, findings)
    if shared:
        suspect.add([Reason(2, f"the errors since the onset name what it touched: {shared}")])
    suspect.add(_hold_reasons(findings, operation))
    suspect.add(_shared_limit(findings, topology, operation, target))
    return suspect


def _shared_limit(
    findings: Findings, topology: Mapping[str, Sequence[str]], operation: Operation, target: str
) -> list[Reason]:
    """+3 when `target`'s errors since the onset say a dependency it shares with the operation's service throttles
    it (a 429, a rate limit, a quota): a load started in another caller spends a limit they share. +2 more when the
    operation's own service is throttled the same way since it ran."""
    shared = [d for d in topology.get(operation.service, ()) if d in topology.get(target, ())]
    if operation.service == target or not shared:
        return []
    for sig in findings.signatures.get(target, ()):
        if changeclass.THROTTLING not in changeclass.symptoms_in_text(sig.text):
            continue
        # the dependency the line names; unnamed, the one shared, when only one is and it names no other
        named = [d for d in topology.get(target, ()) if _names(sig.text, d)] or (shared if len(shared) == 1 else [])
        dependency = next((d for d in named if d in shared), "")
        if not dependency:
            continue
        why = (
            f"{target}'s errors since the onset say {dependency} throttles it ({sig.quoted}), and {operation.service}, "
            f"where it ran, calls {dependency} too: a load started there spends a limit they share"
        )
        reasons = [Reason(3, why)]
        if operation.throttled:
            reasons.append(Reason(2, f"{operation.service} is throttled too since it ran: {operation.throttled}"))
        return reasons
    return []


def _names(text: str, service: str) -> bool:
    """Whether `text` names `service`, in any case and with or without its dashes ("PayGate" names pay-gate)."""
    squeezed = re.sub(r"[^a-z0-9]", "", service.casefold())
    return len(squeezed) >= 4 and squeezed in re.sub(r"[^a-z0-9]", "", text.casefold())


def _hold_reasons(findings: Findings, operation: Operation) -> list[Reason]:
    """+2 when the database records the operation's session holding others up, +2 when the errors since the onset
    are queries waiting out a lock or a statement timeout (what a statement holding a lock does to the others)."""
    reasons = []
    if operation.blocking:
        reasons.append(Reason(2, "the database records its session holding others up"))
    waited = next(
        (sig for found in findings.signatures.values() for sig in found if sessions.LOCK_WAIT_RX.search(sig.text)),
        None,
    )
    if waited is not None and (operation.blocking or sessions.LOCK_WAIT_RX.search(operation.line)):
        reasons.append(Reason(2, f"the errors since the onset are queries waiting out a lock: {waited.quoted}"))
    return reasons


def _shared_change(
    findings: Findings, topology: Mapping[str, Sequence[str]], service: str, target: str
) -> list[Reason]:
    """+3 when `service` calls a dependency that `target` calls too and whose traffic rose at the onset."""
    for dependency in topology.get(service, ()):
        if dependency in topology.get(target, ()) and _load_rose(findings, dependency):
            why = f"{service} shares {dependency} with {target}, and {dependency}'s traffic rose at the onset"
            return [Reason(3, why)]
    return []


def _load_rose(findings: Findings, service: str) -> bool:
    return bool(_traffic_rise(findings, service))


def _traffic_rise(findings: Findings, service: str) -> str:
    """How `service`'s traffic rose at the onset ("" when it did not rise by a surge's ratio)."""
    traffic = findings.roles.get("traffic", "")
    health = findings.health.get(service)
    point = health.changed(traffic) if health is not None and traffic else None
    return health.describe(traffic, point) if health and point and point.ratio >= ranking.SURGE_RATIO else ""


def _shared_identifier(line: str, findings: Findings) -> str:
    """An identifier the operation's line and a log signature since the onset both name ("" when none)."""
    mine = {m.casefold() for m in _IDENTIFIER_RX.findall(line)}
    for signatures in findings.signatures.values():
        for sig in signatures:
            common = mine & {m.casefold() for m in _IDENTIFIER_RX.findall(sig.quoted)}
            if common:
                return sorted(common, key=len)[-1]
    return ""


LOAD_AFTER_DEPLOY = timedelta(minutes=30)  # a change to a caller's call rate shows in its dependency's traffic soon


def load_sent_after(
    findings: Findings, topology: Mapping[str, Sequence[str]], deploy: DeployRecord, target: str
) -> list[Reason]:
    """+3 for a deploy of another caller of a dependency `target` calls too, when that dependency's traffic surged
    within minutes after the deploy (its own inbound traffic may stay level: the calls it sends went up); +2 more
    when `target`'s errors since the onset say that dependency throttles it: the load spends a limit they share,
    which can run out hours later (a daily quota)."""
    traffic = findings.roles.get("traffic", "")
    if not traffic or deploy.service == target:
        return []
    for dependency in topology.get(deploy.service, ()):
        health = findings.health.get(dependency)
        rise = health.changed(traffic) if health is not None and dependency in topology.get(target, ()) else None
        if health is None or rise is None or rise.ratio < ranking.SURGE_RATIO:
            continue
        if not deploy.at <= rise.at <= deploy.at + LOAD_AFTER_DEPLOY:
            continue
        minutes = int((rise.at - deploy.at).total_seconds() // 60)
        reasons = [
            Reason(
                3,
                f"{dependency}'s traffic surged {minutes} min after it ({health.describe(traffic, rise)}); "
                f"{deploy.service} calls {dependency}, and so does {target}",
            )
        ]
        throttled = next(
            (
                sig
                for sig in findings.signatures.get(target, ())
                if changeclass.THROTTLING in changeclass.symptoms_in_text(sig.text) and _names(sig.text, dependency)
            ),
            None,
        )
        if throttled is not None:
            why = f"{target}'s errors since the onset say {dependency} throttles it ({throttled.quoted})"
            why += ": a limit they share"
            reasons.append(Reason(2, why))
        return reasons
    return []


def other_tables_waited_on(suspects: Sequence[Suspect], operation: Operation) -> None:
    """-3 for a deploy whose own statements lock tables (a migration's ALTER TABLE) when the database records the
    sessions waiting on another table, the one the operation's statement locks: the queue is behind the operation."""
    mine = sessions.tables_locked_by(operation.line)
    waited = [t for t in mine if operation.blocking and re.search(rf"\b{re.escape(t)}\b", operation.blocking)]
    if not waited:
        return
    for suspect in suspects:
        if suspect.deploy is None:
            continue
        locks = list(dict.fromkeys(t for line in suspect.risky_lines for t in sessions.tables_locked_by(line)))
        if locks and not {t.casefold() for t in locks} & {t.casefold() for t in waited}:
            why = (
                f"its statements lock {', '.join(locks)}, but the sessions the database records waiting wait on "
                f"{', '.join(waited)}, which {operation.actor}'s statement locks"
            )
            suspect.add([Reason(-3, why)])


def load_from_elsewhere(findings: Findings, topology: Mapping[str, Sequence[str]], service: str) -> list[Reason]:
    """-2 for a deploy of `service` when a dependency it shares with another caller took more load at the onset
    while `service`'s own traffic stayed level: its change did not send that load."""
    traffic = findings.roles.get("traffic", "")
    own = findings.health.get(service)
    if not traffic or own is None or own.readings.get(traffic) is None or own.changed(traffic) is not None:
        return []
    for dependency in topology.get(service, ()):
        shared = any(dependency in callees for caller, callees in topology.items() if caller != service)
        if shared and _load_rose(findings, dependency):
            return [
                Reason(
                    -2,
                    f"{dependency}'s traffic rose at the onset while {service}'s own stayed level: the extra load "
                    "came from another caller",
                )
            ]
    return []


def retried_callee(findings: Findings, topology: Mapping[str, Sequence[str]], service: str) -> tuple[str, str]:
    """(a callee of `service` whose traffic rose at the onset, how it rose); ("", "") when none did."""
    for callee in topology.get(service, ()):
        rise = _traffic_rise(findings, callee)
        if rise:
            return callee, rise
    return "", ""


def retry_reasons(findings: Findings, topology: Mapping[str, Sequence[str]], service: str) -> list[Reason]:
    """+2 for a retry or timeout change in `service` when a service it calls took more traffic at the onset: retries
    multiply the calls into a callee that fails, and the callee's traffic shows it (the mechanism, seen)."""
    callee, rise = retried_callee(findings, topology, service)
    if not callee:
        return []
    why = f"its retry setting multiplies {service}'s calls into {callee}, whose traffic rose at the onset"
    return [Reason(2, f"{why} ({rise})")]


def retried_into(findings: Findings, service: str, caller: str) -> list[Reason]:
    """-2 for a deploy of `service` whose traffic rose at the onset while a caller changed its retries, unless its own
    errors rose first: its code does not send it more calls, the caller's retries do (a callee that broke first would
    show its failures before the retries it drew)."""
    health = findings.health.get(service)
    traffic, errors = findings.roles.get("traffic", ""), findings.roles.get("errors", "")
    rose = health.changed(traffic) if health is not None and traffic else None
    failed = health.changed(errors) if health is not None and errors else None
    if rose is None or (failed is not None and failed.ratio > 1 and failed.at <= rose.at):
        return []
    why = f"{service}'s traffic rose at the onset with no failure of its own first: {caller}'s retries send it"
    return [Reason(-2, why)]
