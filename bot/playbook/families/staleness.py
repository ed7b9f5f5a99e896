"""Stale data from a healthy service: the producer upstream has stopped keeping up.

A service that serves what another one computes (a cache a projector fills, a view a consumer builds from a topic)
answers fast and without errors while what it answers is old. Its metrics stay flat; its own warnings say so
("stale", "lag", "older than the freshness SLO", "last update 400 s ago"). The service that feeds it sits within two
hops (another writer of the cache it reads), and the warning usually names it. That service's own errors since then say
why it fell behind (a record it cannot process, retried forever).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

import tools.analysis.ranking as ranking
from bot.engine.types import Step
from bot.playbook.families.hypotheses import Staleness
from bot.playbook.families.upstreamchange import with_upstream_change
from bot.playbook.findings import Findings
from bot.playbook.probes import ProbeRun, iso_from_moment
from tools.logs.summary import Signature
from tools.results import logs_of

_STALE_RX = re.compile(
    r"\b(?:stale|lag|lagging|behind|older than|freshness|out of date|outdated|last \w+ (?:update|sync)\w*)\b",
    re.IGNORECASE,
)
NEW_AFTER = timedelta(minutes=30)  # a warning first seen this long after the window began is new in it
PRODUCER_BEFORE = timedelta(hours=2)  # the producer's trouble starts before its consumers notice
PRODUCER_HOPS = 3
BASELINE = timedelta(hours=1)  # a producer's line must be absent this long before it counts as new
_ERRORS = ("ERROR", "FATAL")


def check_staleness(run: ProbeRun, findings: Findings, topology: Mapping[str, Sequence[str]], target: str) -> None:
    """The asked service is flat: do its lines (errors and warnings first, then notices: a freshness check often logs
    at INFO) say what it serves is stale, which producer near it has errors or warnings since then, and what changed
    there?"""
    if "query_logs" not in run.tools:
        return
    stale = _stale_signature(run, target)
    if stale is None:
        return
    # data flows further than calls: the consumer that fills the store the asked service's backend reads sits three
    # hops away (asked -> query -> store <- consumer); one the stale line names is read first
    near = [s for s in ranking.neighbourhood(topology, target, hops=PRODUCER_HOPS) if s != target]
    for producer in sorted(near, key=lambda s: (not _named_in(s, stale.template), near.index(s))):
        error = _producer_error(run, producer, stale)
        if error is not None:
            found = Staleness(target, stale.example.message, stale.first_at, producer, error[0], error[1])
            findings.stale = with_upstream_change(run, topology, found)
            return


def _stale_signature(run: ProbeRun, target: str) -> Signature | None:
    """The first signature of `target`, new in the window, that says what it serves is old."""
    for level in ("ERROR,WARN", "INFO"):
        thought = (
            f"{target}'s metrics are flat, yet the user sees trouble: stale data looks healthy from the inside. "
            f"Reading {target}'s {level} lines for one that says what it serves is old."
        )
        step = run.probe(thought, "query_logs", {"service": target, "level": level, "range": run.window.range_arg})
        found = every_signature(step) if step is not None else []
        start = min((s.first_at for s in found), default=None)
        saying = [s for s in found if _STALE_RX.search(s.template)]
        new = next((s for s in saying if start is not None and s.first_at - start > NEW_AFTER), None)
        # a line first seen near the window's start may have begun just inside it or long before: the hour before
        # its first line decides (the window follows the time the user named, not when the data froze)
        stale = new or next((s for s in saying[:1] if _began_there(run, target, level, s)), None)
        if stale is not None:
            return stale
    return None


def _began_there(run: ProbeRun, target: str, level: str, stale: Signature) -> bool:
    """Whether the stale line is absent from the hour before its first line in the window (new, not background)."""
    thought = (
        f"{target}'s line saying its data is old was first seen at {stale.first_at:%H:%M} UTC, near the start of the "
        "window: reading the hour before it to tell whether it began there or was always logged."
    )
    new = _new_since(run, thought, target, level, stale.first_at - timedelta(minutes=1))
    return any((s.key or s.template) == (stale.key or stale.template) for s in new)


def _new_since(run: ProbeRun, thought: str, service: str, level: str, start: datetime) -> Sequence[Signature]:
    """`service`'s signatures at `level` new since `start`: absent from the hour before it (BASELINE)."""
    args = {
        "service": service,
        "level": level,
        "start": iso_from_moment(start - BASELINE),
        "end": iso_from_moment(run.window.end),
        "onset": iso_from_moment(start),
    }
    summary = run.read_logs(thought, args)
    contrast = summary.onset if summary is not None else None
    return contrast.new.top if contrast is not None and contrast.new is not None else ()


def every_signature(step: Step) -> list[Signature]:
    """query_logs' signatures of every level it clustered (errors, then warnings, or the levels asked for)."""
    summary = logs_of(step)
    blocks = (summary.signatures, summary.warnings) if summary is not None else ()
    return [sig for block in blocks if block is not None for sig in block.top]


def _named_in(service: str, text: str) -> bool:
    """Whether the line names the service, or a word of its name that is not generic ("projector" of
    entitlement-projector, not "api")."""
    words = [w for w in re.split(r"[-_.]", service) if len(w) > 3 and w not in ("service", "server", "worker")]
    return service in text or any(re.search(rf"\b{re.escape(w)}\b", text, re.IGNORECASE) for w in words)


def _producer_error(run: ProbeRun, producer: str, stale: Signature) -> tuple[str, datetime] | None:
    """The producer's errors or warnings that began before the staleness was first noticed: (the line, when it
    began). A consumer that skips what it cannot read often says so at WARN and carries on."""
    start = stale.first_at - PRODUCER_BEFORE
    thought = (
        f"{stale.first_at:%H:%M} UTC is when the staleness was first logged; {producer} sits near it and may feed "
        f"it: reading {producer}'s errors and warnings since {start:%H:%M} UTC."
    )
    new = _new_since(run, thought, producer, "ERROR,WARN", start)
    # absent the hour before: a warning logged all day long is background, whatever the window's first sample says
    failing = [s for s in new if s.example.level in (*_ERRORS, "WARN") and s.first_at <= stale.first_at]
    began = sorted(failing, key=lambda s: s.example.level not in _ERRORS)
    return (began[0].example.message, began[0].first_at) if began else None


def fell_behind(findings: Findings) -> str:
    """When the walk moved from a healthy asked service to the one that changed, and that one's throughput fell: it
    stopped keeping up with its input, so what it feeds lags behind (the words for the headline; "" otherwise)."""
    traffic = findings.roles.get("traffic", "")
    health = findings.health.get(findings.service)
    point = health.changed(traffic) if health is not None and traffic else None
    if not findings.steady_asked or health is None or point is None or point.ratio >= 1:
        return ""
    return (
        f"{findings.service} stopped keeping up ({health.describe(traffic, point)}), so it lags behind its input and "
        f"what {findings.steady_asked} gets through it is stale"
    )
