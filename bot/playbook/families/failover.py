"""A failover that became a retry storm: a dependency's primary moved, and its callers' retries kept it down.

A failover (Sentinel's `+switch-master`, a replica promoted, a new leader elected) takes seconds, but every call in
flight times out meanwhile. A client that retries at once and several times turns those timeouts into a multiple of
its calls; the dependency, cold on its new primary, saturates and times out more, and the storm feeds itself long
after the failover ended. No deploy is needed, and user traffic does not move: the extra calls are made inside.

So at the onset the logs of the services near the degraded ones are read for a failover line; when one is there, the
volume after it is read: the traffic of the service that failed over (or of one beside it) against the traffic users
send at the entry, and its callers' retry lines since. A failover with a retry volume after it is a suspect, weighed
against the deploys read. A deploy that changed a retry or timeout setting is left to name itself: the failure it
amplified is then named beside it (bot/playbook/families/causes.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import tools.analysis.changeclass as changeclass
import tools.analysis.ranking as ranking
from bot.playbook.findings import Findings, ServiceHealth, Suspect
from bot.playbook.probes import ProbeRun, iso_from_moment
from tools.analysis.events import DEFAULT_PATTERNS, kind_of
from tools.analysis.placement import SURGE_RATIO
from tools.analysis.reasons import Reason
from tools.logs.model import LogEntry
from tools.logs.render import entry_line, seconds_clock

FAILOVER_BEFORE = timedelta(minutes=10)  # a failover is at or just before the onset it causes
FAILOVER_AFTER = timedelta(minutes=4)  # the first change point can come before the switch's own line
STORM_AFTER = timedelta(minutes=15)  # the retry volume rises within this of the failover
_FAILOVER = tuple(p for p in DEFAULT_PATTERNS if p.kind == "failover")
# A line that says a call is being retried: "retrying", "retry 2 of 3", "attempt 4 of 10", "(attempt 4/10)",
# "retries: 5", "re-sent the batch (attempt 12)".
RETRY_RX = re.compile(
    r"\bretr(?:y|ying|ied|ies)\b|\battempts? #?\d+(?:\s*(?:of|/)\s*\d+)?|\bre-?sen(?:t|d|ding)\b|\bresubmit",
    re.IGNORECASE,
)
RETRY_QUERY = "retry* OR retries OR attempt*"


@dataclass(frozen=True)
class Failover:
    """A failover line of one service: when, and the line as the logs show it."""

    at: datetime
    service: str
    line: str


@dataclass(frozen=True)
class RetryLines:
    """A caller's retry lines since a failover: how many, and one of them."""

    caller: str
    count: int
    line: str


def check_failover_storm(
    run: ProbeRun, findings: Findings, topology: Mapping[str, Sequence[str]], target: str, onset: datetime
) -> None:
    """Append a suspect for a failover near `target` at `onset` when a retry volume followed it."""
    if "query_logs" not in run.tools or _retry_changed(findings):
        return
    near = ranking.neighbourhood(topology, target)
    failover = find_failover(run, near, onset)
    if failover is None:
        return
    reasons = [Reason(2, f"it happened at {failover.at:%H:%M} UTC, within minutes of the onset at {onset:%H:%M} UTC")]
    reasons.append(Reason(2, f"a failover drops every call in flight to {failover.service} while its primary moves"))
    amplified = _amplified_traffic(run, findings, topology, failover, near)
    retries = _retry_lines(run, [c for c in _callers(topology, failover.service) if c in near], failover)
    if not amplified and retries is None:
        return
    if amplified:
        reasons.append(Reason(3, amplified))
    if retries is not None:
        reasons.append(Reason(2, f"{retries.caller} retries its calls since: {retries.count:,} retry lines"))
    suspect = Suspect(storm_cause(failover, retries), failover.service)
    suspect.add(reasons)
    findings.suspects.append(suspect)
    findings.suspects.sort(key=lambda s: -s.score)


def storm_cause(failover: Failover, retries: RetryLines | None) -> str:
    """The headline's cause: the failover as its service logged it, and who retried into it (the volume is a reason)."""
    who = f"{retries.caller}'s retries" if retries is not None else "its callers' retries"
    said = f'; {retries.caller} logs "{retries.line}"' if retries is not None else ""
    return (
        f"a failover of {failover.service} at {failover.at:%H:%M} UTC turned into a retry storm: {who} multiplied "
        f'the calls while its primary moved, no deploy caused this: "{failover.line}"{said}'
    )


def find_failover(run: ProbeRun, near: Sequence[str], onset: datetime) -> Failover | None:
    """The first failover line of a service in `near` around `onset`, read from every service's logs."""
    thought = (
        f"Something changed at {onset:%H:%M} UTC: a failover of a dependency (a primary moved, a leader elected) "
        "drops every call in flight and is logged by the dependency itself; reading every service's lines around it."
    )
    words = dict.fromkeys(w for p in _FAILOVER for w in p.words)
    args = {
        "service": "*",
        "query": " OR ".join(words),
        "start": iso_from_moment(onset - FAILOVER_BEFORE),
        "end": iso_from_moment(onset + FAILOVER_AFTER),
        "limit": 100,
    }
    summary = run.read_logs(thought, args)
    if summary is None:
        return None
    clock = seconds_clock(summary.window)
    found = sorted(
        ((line.entry, service) for line in summary.newest if (service := failed_over(line.entry, near))),
        key=lambda pair: pair[0].timestamp,
    )
    if not found:
        return None
    first, service = found[0]
    return Failover(first.timestamp, service, entry_line(first, clock, service=service != first.service, trace=False))


def failed_over(entry: LogEntry, near: Sequence[str]) -> str:
    """The service in `near` a failover line is about: the one that logged it, else the one it names (a Sentinel or
    an orchestrator logs for the primary it moves); "" when the line records no failover, or none near."""
    if kind_of(entry.message, _FAILOVER) is None:
        return ""
    if entry.service in near:
        return entry.service
    return next((s for s in near if re.search(rf"(?<![\w-]){re.escape(s)}(?![\w-])", entry.message)), "")


def _callers(topology: Mapping[str, Sequence[str]], service: str) -> list[str]:
    return sorted(caller for caller, callees in topology.items() if service in callees)


def _retry_changed(findings: Findings) -> bool:
    """Whether a deploy read changed a retry or timeout setting: then that deploy amplified the failure."""
    changes = [*findings.key_changes, *(c for s in findings.suspects if s.deploy for c in s.key_changes)]
    return any(changeclass.class_of(c) == changeclass.TIMEOUT for c in changeclass.expanded(changes))


def _amplified_traffic(
    run: ProbeRun, findings: Findings, topology: Mapping[str, Sequence[str]], failover: Failover, near: Sequence[str]
) -> str:
    """How the calls near the failed-over service multiplied after it while users sent no more ("" otherwise)."""
    traffic = findings.roles.get("traffic")
    if traffic is None:
        return ""
    entries = [s for s in near if not _callers(topology, s)] or list(near[:1])
    surged = _surge_after(run, findings, traffic, failover, [failover.service, *near])
    if surged is None:
        return ""
    service, how = surged
    level = [e for e in entries if e != service and _level(run, findings, traffic, e)]
    if not level:
        return ""
    return f"{how}, while the traffic users send at {' and '.join(level)} stayed level"


def _surge_after(
    run: ProbeRun, findings: Findings, traffic: str, failover: Failover, services: Sequence[str]
) -> tuple[str, str] | None:
    """(service, how its traffic rose) for the first of `services` whose traffic surged just after the failover;
    the failed-over service's own traffic is read when no check read it yet."""
    own = findings.health.setdefault(failover.service, ServiceHealth(failover.service))
    if traffic not in own.readings:
        thought = (
            f"{failover.service} failed over at {failover.at:%H:%M} UTC; retries after a failover multiply the calls "
            f"into it: reading its {traffic}."
        )
        run.read_metric(thought, own, traffic)
    for service in dict.fromkeys(services):
        health = findings.health.get(service)
        rise = health.changed(traffic) if health is not None else None
        if health is None or rise is None or rise.ratio < SURGE_RATIO:
            continue
        if failover.at - FAILOVER_AFTER <= rise.at <= failover.at + STORM_AFTER:
            return service, health.describe(traffic, rise)
    return None


def _level(run: ProbeRun, findings: Findings, traffic: str, service: str) -> bool:
    """Whether `service`'s traffic did not surge (read when no check read it yet)."""
    health = findings.health.setdefault(service, ServiceHealth(service))
    if traffic not in health.readings:
        run.read_metric(
            f"Reading the traffic users send at {service}, the entry: a storm is made inside.", health, traffic
        )
    if health.readings.get(traffic) is None:
        return False
    rise = health.changed(traffic)
    return rise is None or rise.ratio < SURGE_RATIO


def _retry_lines(run: ProbeRun, callers: Sequence[str], failover: Failover) -> RetryLines | None:
    """The first caller whose logs retry calls since the failover, with how many lines and one of them."""
    for caller in callers:
        thought = (
            f"{caller} calls {failover.service}, which failed over at {failover.at:%H:%M} UTC: a client that retries "
            "at once multiplies its calls while the primary moves. Reading its retry lines since."
        )
        args = {
            "service": caller,
            "query": RETRY_QUERY,
            "start": iso_from_moment(failover.at - timedelta(minutes=1)),
            "end": iso_from_moment(min(run.window.end, failover.at + STORM_AFTER)),
            "limit": 20,
        }
        summary = run.read_logs(thought, args)
        if summary is None:
            continue
        said = next((line.entry for line in summary.newest if RETRY_RX.search(line.entry.message)), None)
        if said is not None:
            line = entry_line(said, seconds_clock(summary.window), service=False, trace=False)
            return RetryLines(caller, summary.total, line)
    return None
