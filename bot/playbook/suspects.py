"""Suspects, not the nearest deploy: one "what changed" step around the onset, ranked by the evidence.

Where it looks: the deploys of the asked service and of every service within two hops of it in the topology,
both directions (callees, callers, and the other callers of a dependency that degraded), and the traffic of
those other callers (a batch job or a bulk sender hammering what the asked service shares with them).
How far back: minutes for a step, hours when memory or restarts changed (a leak climbs for hours before the
first OOM kill). How it ranks: timing, the path through the topology, what the diff changed (a config key
beats a log-format change), and whether a log signature names the changed key or its new value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from bot.playbook.diffs import DeployRecord, KeyChange, deploys_from_text, key_changes_from_diff, risky_lines_from_diff
from bot.playbook.evidence import change_points_from_text
from bot.playbook.findings import Findings, ServiceHealth, Suspect
from bot.playbook.probes import ProbeRun, iso_from_moment

STEP_LOOKBACK_MINUTES = 45  # a step: the change that caused it landed minutes before
TREND_LOOKBACK_HOURS = 6  # a leak or a creeping trend: hours before the first symptom
AFTER_ONSET_MINUTES = 0  # change points sit mid-ramp, so a deploy that caused the change is never after it
CLOSE_MINUTES = 15
SURGE_RATIO = 1.5
SURGE_BEFORE_MINUTES = 20
MAX_DIFFS = 4
# Changes that cannot explain a symptom: logging, wording, the image tag every deploy bumps.
_TRIVIAL_RX = re.compile(r"log|pattern|format|changelog|readme|footer|wording|dashboard|newTag$", re.IGNORECASE)


def neighbourhood(topology: Mapping[str, Sequence[str]], service: str, hops: int = 2) -> list[str]:
    """Services within `hops` of `service`, both directions (callees and callers), nearest first."""
    edges: dict[str, set[str]] = {}
    for caller, callees in topology.items():
        for callee in callees:
            edges.setdefault(caller, set()).add(callee)
            edges.setdefault(callee, set()).add(caller)
    found, frontier = [service], [service]
    for _ in range(hops):
        frontier = sorted({n for s in frontier for n in edges.get(s, ())} - set(found))
        found += frontier
    return found


def lookback_for(findings: Findings, service: str) -> timedelta:
    """Hours when memory or restarts changed (a leak, a sawtooth of OOM kills), else minutes."""
    health = findings.health.get(service)
    slow = [findings.roles.get(role, "") for role in ("memory", "restarts")]
    if health is not None and any(health.changed(metric) for metric in slow if metric):
        return timedelta(hours=TREND_LOOKBACK_HOURS)
    return timedelta(minutes=STEP_LOOKBACK_MINUTES)


def gather_suspects(run: ProbeRun, findings: Findings, topology: Mapping[str, Sequence[str]], target: str) -> None:
    """The "what changed" step: every deploy near the onset and every surge in another caller, ranked."""
    first = findings.first_change(target)
    if first is None or "query_deploy_records" not in run.tools:
        return
    onset, lookback = first[1], lookback_for(findings, target)
    near = neighbourhood(topology, target)
    suspects = _deploy_suspects(run, findings, target, near, onset, lookback)
    suspects += _surge_suspects(run, findings, topology, target, onset)
    findings.suspects = sorted(suspects, key=lambda s: -s.score)


def _deploy_suspects(
    run: ProbeRun, findings: Findings, target: str, near: list[str], onset: datetime, lookback: timedelta
) -> list[Suspect]:
    start, end = onset - lookback, onset + timedelta(minutes=AFTER_ONSET_MINUTES)
    minutes = int(lookback.total_seconds() // 60)
    span = f"{minutes // 60} h" if minutes >= 60 else f"{minutes} min"
    thought = (f"What changed: every deploy of {target} and of the {len(near) - 1} services within two hops of it "
               f"(callers and callees) in the {span} before the onset at {onset:%H:%M} UTC.")
    observation = run.call(thought, "query_deploy_records",
                           {"service": "*", "start": iso_from_moment(start), "end": iso_from_moment(end)})
    records = [d for svc in near for d in _service_deploys(observation, svc, end) if d.at and start <= d.at <= end]
    records.sort(key=lambda d: (d.service != target, onset - d.at if d.at else lookback))
    return [_score_deploy(run, findings, target, d, onset) for d in records[:MAX_DIFFS]]


def _service_deploys(observation: str, service: str, end: datetime) -> list[DeployRecord]:
    lines = [line for line in observation.splitlines() if re.search(rf"(?<![\w.-]){re.escape(service)}/", line)]
    return deploys_from_text("\n".join(lines), service, end)


def _score_deploy(run: ProbeRun, findings: Findings, target: str, deploy: DeployRecord, onset: datetime) -> Suspect:
    suspect = Suspect(f"deploy {deploy.service} {deploy.version}", deploy.service, deploy=deploy)
    # times, not a computed gap: every number in an answer must be one an observation shows
    close = deploy.at is None or onset - deploy.at <= timedelta(minutes=CLOSE_MINUTES)
    when = f"at {deploy.at:%H:%M} UTC, " if deploy.at else ""
    gap = "just" if close else "well"
    suspect.add(2 if close else 1, f"deployed {when}{gap} before the onset at {onset:%H:%M} UTC")
    if deploy.service == target:
        suspect.add(3, f"{target} is the service asked about")
    elif (health := findings.health.get(deploy.service)) is not None and health.changes():
        suspect.add(2, f"{deploy.service} changed too, on the path from {target}")
    else:
        suspect.add(-1, f"{deploy.service} itself shows no change")
    diff = run.call(f"Reading the diff of {deploy.service} {deploy.version} to weigh it as a suspect.",
                    "query_deploy_diff", {"version": deploy.version, "service": deploy.service})
    suspect.key_changes, suspect.risky_lines = key_changes_from_diff(diff), risky_lines_from_diff(diff)
    _score_diff(suspect, findings)
    return suspect


def _score_diff(suspect: Suspect, findings: Findings) -> None:
    """A changed config key or a risky statement counts; a change to logging or wording alone counts against."""
    meaningful = [c for c in suspect.key_changes if not _TRIVIAL_RX.search(f"{c.path} {c.key}")]
    if suspect.risky_lines:
        suspect.add(2, f"its diff runs {suspect.risky_lines[0]}")
    if meaningful:
        suspect.add(2, "its diff changed " + "; ".join(f"{c.key} {c.old} → {c.new}" for c in meaningful[:2]))
    elif not suspect.risky_lines:
        suspect.add(-2, "its diff changes no setting that could explain the symptom (logging, wording or code only)")
    named = _signature_naming(findings, meaningful)
    if named:
        suspect.add(2, f"a log signature names what it changed: {named}")


def _signature_naming(findings: Findings, changes: Sequence[KeyChange]) -> str:
    """The first log signature that names a changed key's last part or its new value (3+ characters)."""
    words = {w.casefold() for c in changes for w in (c.key.rsplit(".", 1)[-1], c.new.strip("\"'")) if len(w) >= 3}
    for signatures in findings.signatures.values():
        for sig in signatures:
            text = sig.text.casefold()
            if any(re.search(rf"(?<![\w]){re.escape(w)}(?![\w])", text) for w in words):
                return sig.quoted
    return ""


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
        for caller in [c for c, callees in topology.items() if dependency in callees and c != target]:
            suspect = _surge(run, findings, caller, dependency, traffic, onset)
            if suspect is not None:
                found.append(suspect)
    return found


def _surge(
    run: ProbeRun, findings: Findings, caller: str, dependency: str, traffic: str, onset: datetime
) -> Suspect | None:
    health = findings.health.setdefault(caller, ServiceHealth(caller))
    if traffic not in health.readings:
        thought = (f"{dependency} degraded and {caller} calls it too; checking {caller}'s {traffic} for a surge "
                   "(a batch job or a bulk sender) at the onset.")
        observation = run.call(thought, "query_metrics", {"service": caller, "metric": traffic,
                                                          "range": run.window.range_arg})
        health.readings[traffic] = change_points_from_text(observation, run.window.end) if observation else None
    point = health.changed(traffic)
    if point is None or point.ratio < SURGE_RATIO:
        return None
    lead = (onset - point.at).total_seconds() / 60
    if not -CLOSE_MINUTES / 3 <= lead <= SURGE_BEFORE_MINUTES:
        return None
    suspect = Suspect(f"a traffic surge in {caller}, another caller of the shared {dependency}", caller)
    suspect.add(2, f"{caller} {traffic} went from {point.before} to {point.after} at {point.at:%H:%M} UTC")
    suspect.add(3, f"{caller} shares {dependency} with {findings.service}, and {dependency} degraded at the onset")
    return suspect
