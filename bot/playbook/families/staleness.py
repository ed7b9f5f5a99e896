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
from bot.playbook.families.hypotheses import Staleness
from bot.playbook.findings import Findings
from bot.playbook.probes import ProbeRun, iso_from_moment
from tools.logs.summary import Signature
from tools.results import signatures_of

_STALE_RX = re.compile(
    r"\b(?:stale|lag|lagging|behind|older than|freshness|out of date|outdated|last \w+ (?:update|sync)\w*)\b",
    re.IGNORECASE,
)
NEW_AFTER = timedelta(minutes=30)  # a warning first seen this long after the window began is new in it
PRODUCER_BEFORE = timedelta(hours=2)  # the producer's trouble starts before its consumers notice
PRODUCER_HOPS = 3


def check_staleness(run: ProbeRun, findings: Findings, topology: Mapping[str, Sequence[str]], target: str) -> None:
    """The asked service is flat: do its warnings or errors say what it serves is stale, and which producer near it
    has errors since then?"""
    if "query_logs" not in run.tools:
        return
    thought = (
        f"{target}'s metrics are flat, yet the user sees trouble: stale data looks healthy from the inside. "
        f"Reading {target}'s warnings and errors for lines that say what it serves is old."
    )
    args = {"service": target, "level": "ERROR,WARN", "range": run.window.range_arg}
    step = run.probe(thought, "query_logs", args)
    if step is None:
        return
    found = [*signatures_of(step, "ERROR"), *signatures_of(step, "WARN")]
    start = min((s.first_at for s in found), default=None)
    new = [s for s in found if start is not None and s.first_at - start > NEW_AFTER]  # not there all along
    stale = next((s for s in new if _STALE_RX.search(s.template)), None)
    if stale is None:
        return
    # data flows further than calls: the consumer that fills the store the asked service's backend reads sits three
    # hops away (asked -> query -> store <- consumer); one the stale line names is read first
    near = [s for s in ranking.neighbourhood(topology, target, hops=PRODUCER_HOPS) if s != target]
    for producer in sorted(near, key=lambda s: (not _named_in(s, stale.template), near.index(s))):
        error = _producer_error(run, producer, stale)
        if error is not None:
            findings.stale = Staleness(target, stale.example.message, stale.first_at, producer, error[0], error[1])
            return


def _named_in(service: str, text: str) -> bool:
    """Whether the line names the service, or a word of its name that is not generic ("projector" of
    entitlement-projector, not "api")."""
    words = [w for w in re.split(r"[-_.]", service) if len(w) > 3 and w not in ("service", "server", "worker")]
    return service in text or any(re.search(rf"\b{re.escape(w)}\b", text, re.IGNORECASE) for w in words)


def _producer_error(run: ProbeRun, producer: str, stale: Signature) -> tuple[str, datetime] | None:
    """The producer's errors that began before the staleness was first noticed: (the line, when it began)."""
    start = stale.first_at - PRODUCER_BEFORE
    thought = (
        f"{stale.first_at:%H:%M} UTC is when the staleness was first logged; {producer} sits near it and may feed "
        f"it: reading {producer}'s errors since {start:%H:%M} UTC."
    )
    args = {
        "service": producer,
        "level": "ERROR",
        "start": iso_from_moment(start),
        "end": iso_from_moment(run.window.end),
    }
    step = run.probe(thought, "query_logs", args)
    found = signatures_of(step, "ERROR") if step is not None else ()
    began = [s for s in found if s.first_at <= stale.first_at and s.first_at - start > timedelta(minutes=1)]
    return (began[0].example.message, began[0].first_at) if began else None
