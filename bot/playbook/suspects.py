"""Suspects, not the nearest deploy: one "what changed" step around the onset, ranked by the evidence.

Where it looks: the deploys of the asked service and of every service within two hops of it in the topology,
both directions (callees, callers, and the other callers of a dependency that degraded), and the traffic of
those other callers (a batch job or a bulk sender hammering what the asked service shares with them).
How far back, and how each suspect is scored, is tools/analysis/ranking.py: the same rules find_changes (the model's
tool) uses. This module makes the tool calls (through call_tool, as Steps) and reads their data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

import tools.analysis.ranking as ranking
from bot.playbook.evidence import change_points_of, deploys_in
from bot.playbook.findings import Findings, ServiceHealth, Suspect
from bot.playbook.probes import ProbeRun, iso_from_moment
from tools.deploys.records import DeployList, DeployRecord
from tools.results import deploys_of, diff_of, series_of


def lookback_for(findings: Findings, service: str) -> timedelta:
    """Hours when memory or restarts changed (a leak, a sawtooth of OOM kills), else minutes."""
    health = findings.health.get(service)
    slow = [findings.roles.get(role, "") for role in ("memory", "restarts")]
    return ranking.lookback_for(health is not None and any(health.changed(m) for m in slow if m))


def gather_suspects(run: ProbeRun, findings: Findings, topology: Mapping[str, Sequence[str]], target: str) -> None:
    """The "what changed" step: every deploy near the onset and every surge in another caller, ranked."""
    first = findings.first_change(target)
    if first is None or "query_deploy_records" not in run.tools:
        return
    onset, lookback = first[1], lookback_for(findings, target)
    near = ranking.neighbourhood(topology, target)
    suspects = _deploy_suspects(run, findings, target, near, onset, lookback)
    suspects += _surge_suspects(run, findings, topology, target, onset)
    findings.suspects = sorted(suspects, key=lambda s: -s.score)


def _deploy_suspects(
    run: ProbeRun, findings: Findings, target: str, near: list[str], onset: datetime, lookback: timedelta
) -> list[Suspect]:
    start = onset - lookback
    thought = (
        f"What changed: every deploy of {target} and of the {len(near) - 1} services within two hops of it "
        f"(callers and callees) in the {ranking.lookback_words(lookback)} before the onset at "
        f"{onset:%H:%M} UTC."
    )
    step = run.probe(
        thought,
        "query_deploy_records",
        {"service": "*", "start": iso_from_moment(start), "end": iso_from_moment(onset)},
    )
    records = [d for svc in near for d in deploys_in(step, svc)] if step is not None else []
    if step is not None and len(near) == 1:
        _set_aside(findings, target, deploys_of(step), lookback)
    return [
        _score_deploy(run, findings, target, d, onset)
        for d in ranking.deploys_to_read(records, near, target, onset, lookback)
    ]


def _set_aside(findings: Findings, target: str, found: DeployList | None, lookback: timedelta) -> None:
    """With no service near `target` in the topology, other services' deploys are not weighed: the answer names
    them and the setting that would let the playbook follow them, so a cause one hop away is not silently missed."""
    others = sorted({(r.at, r.service, r.version) for r in (found.records if found else ()) if r.service != target})
    if others:
        named = ", ".join(f"{service} {version} at {at:%H:%M} UTC" for at, service, version in others[-5:])
        findings.unknowns.append(
            f"not weighed: {len(others)} deploy(s) of other services in the {ranking.lookback_words(lookback)} "
            f"before the onset ({named}): the topology names no service {target} calls or is called by "
            "(set `topology` so the playbook follows them)"
        )


def _score_deploy(run: ProbeRun, findings: Findings, target: str, deploy: DeployRecord, onset: datetime) -> Suspect:
    suspect = Suspect(f"deploy {deploy.service} {deploy.version}", deploy.service, deploy=deploy)
    health = findings.health.get(deploy.service)
    suspect.add(ranking.deploy_reasons(deploy, target, onset, health is not None and bool(health.changes())))
    step = run.probe(
        f"Reading the diff of {deploy.service} {deploy.version} to weigh it as a suspect.",
        "query_deploy_diff",
        {"version": deploy.version, "service": deploy.service},
    )
    report = diff_of(step) if step is not None else None
    suspect.key_changes = list(report.key_changes) if report else []
    suspect.risky_lines = list(report.risky_lines) if report else []
    # matched on the template, cited as the concrete example (it can be checked against the logs)
    signatures = [(sig.text, sig.quoted) for found in findings.signatures.values() for sig in found]
    suspect.add(ranking.diff_reasons(suspect.key_changes, suspect.risky_lines, signatures))
    return suspect


def _surge_suspects(
    run: ProbeRun, findings: Findings, topology: Mapping[str, Sequence[str]], target: str, onset: datetime
) -> list[Suspect]:
    """Another caller of a degraded dependency whose traffic surged just before the onset."""
    traffic = findings.roles.get("traffic")
    if traffic is None:
        return []
    degraded = [s for s in topology.get(target, ()) if (h := findings.health.get(s)) is not None and h.changes()]
    found = []
    for dependency in degraded:
        for caller in ranking.other_callers(topology, dependency, target):
            suspect = _surge(run, findings, caller, dependency, traffic, onset)
            if suspect is not None:
                found.append(suspect)
    return found


def _surge(
    run: ProbeRun, findings: Findings, caller: str, dependency: str, traffic: str, onset: datetime
) -> Suspect | None:
    health = findings.health.setdefault(caller, ServiceHealth(caller))
    if traffic not in health.readings:
        thought = (
            f"{dependency} degraded and {caller} calls it too; checking {caller}'s {traffic} for a surge "
            "(a batch job or a bulk sender) at the onset."
        )
        step = run.probe(
            thought, "query_metrics", {"service": caller, "metric": traffic, "range": run.window.range_arg}
        )
        series = series_of(step) if step is not None else None
        health.readings[traffic] = change_points_of(series) if series is not None else None
    point = health.changed(traffic)
    if point is None or not ranking.is_surge(point.ratio, point.at, onset):
        return None
    suspect = Suspect(f"a traffic surge in {caller}, another caller of the shared {dependency}", caller)
    change = f"{caller} {traffic} went from {point.before_text} to {point.after_text} at {point.at:%H:%M} UTC"
    suspect.add(ranking.surge_reasons(caller, dependency, findings.service, change))
    return suspect
