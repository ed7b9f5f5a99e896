"""What changed upstream of a producer that stopped keeping up: the deploy its own error names.

Stale data has two links: the producer (a consumer, an indexer, a projector) that fell behind, and the reason it did.
A producer that cannot read what it is sent says so in terms of the change that sent it: a schema version, a field, a
setting's new value. So the deploys of the hour before its errors began are read (the producer's and those within two
hops of it first: a topic between two services is not in the call topology); the one whose diff its error names (a
changed key or its new value), or whose changed setting is what the error shows (a batch size for a lagging
consumer), is the change. None named: the staleness stands alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import timedelta

import tools.analysis.changeclass as changeclass
import tools.analysis.ranking as ranking
from bot.playbook.families.hypotheses import Staleness
from bot.playbook.probes import ProbeRun, iso_from_moment
from tools.analysis.configdiff import KeyChange
from tools.deploys.records import DeployRecord
from tools.results import deploys_of, diff_of

BEFORE_ERRORS = timedelta(hours=1)  # a change that broke the producer landed shortly before its errors began
AFTER_ERRORS = timedelta(minutes=2)  # change points and first lines are pinned to a minute or two
MAX_DIFFS = 3


def with_upstream_change(run: ProbeRun, topology: Mapping[str, Sequence[str]], found: Staleness) -> Staleness:
    """`found` with the deploy near the producer that its error names, when one does."""
    if "query_deploy_records" not in run.tools or "query_deploy_diff" not in run.tools:
        return found
    start, end = found.producer_since - BEFORE_ERRORS, found.producer_since + AFTER_ERRORS
    near = ranking.neighbourhood(topology, found.producer)
    thought = (
        f"{found.producer} began failing at {found.producer_since:%H:%M} UTC; what it cannot process often comes from "
        f"a change near it or upstream of it: reading every deploy since {start:%H:%M} UTC, {found.producer}'s "
        "neighbours first."
    )
    args = {"service": "*", "start": iso_from_moment(start), "end": iso_from_moment(end)}
    step = run.probe(thought, "query_deploy_records", args)
    # every service's deploys: data flows through topics the call topology does not record, and the error must name
    # the change anyway; the producer's neighbours are read first
    listed = deploys_of(step) if step is not None else None
    records = [d for d in (listed.records if listed else ()) if start <= d.at <= end]
    records.sort(key=lambda d: (d.service not in near, found.producer_since - d.at))
    for deploy in records[:MAX_DIFFS]:
        changes = _changes_of(run, deploy, found)
        named = _named_change(found.error, changes)
        if named is not None:
            return replace(found, change=_words(deploy, named))
    return found


def _changes_of(run: ProbeRun, deploy: DeployRecord, found: Staleness) -> list[KeyChange]:
    thought = (
        f"{deploy.service} {deploy.version} landed at {deploy.at:%H:%M} UTC, before {found.producer} began failing: "
        "does its diff change what the error names?"
    )
    step = run.probe(thought, "query_deploy_diff", {"version": deploy.version, "service": deploy.service})
    report = diff_of(step) if step is not None else None
    if report is None:
        return []
    changes = changeclass.with_option_lines(report.key_changes, report.diff)
    return changeclass.expanded(changeclass.with_contract_files(changes, report.diff))


def _named_change(error: str, changes: Sequence[KeyChange]) -> KeyChange | None:
    """The change the error names (its key's last part or new value), else the setting whose class the error shows."""
    settings = [c for c in changes if changeclass.class_of(c) != changeclass.IMAGE]
    named = next((c for c in settings if ranking.naming_signature([error], [c]) is not None), None)
    if named is not None:
        return named
    shown = ranking.showing_signature([(error, error)], settings)
    if shown is None:
        return None
    wanted = changeclass.symptoms_in_text(error) & changeclass.SPECIFIC
    return next((c for c in settings if wanted & changeclass.EXPLAINS[changeclass.class_of(c)]), None)


def _words(deploy: DeployRecord, change: KeyChange) -> str:
    return (
        f"deploy {deploy.service} {deploy.version} at {deploy.at:%Y-%m-%d %H:%M} UTC changed {change.key} "
        f"{change.old} → {change.new}, which the error names or shows"
    )
