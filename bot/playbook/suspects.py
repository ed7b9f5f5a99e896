"""Suspects, not the nearest deploy: one "what changed" step around the onset, ranked by the evidence.

Where it looks: the deploys of the asked service and of every service within two hops of it in the topology,
both directions (callees, callers, and the other callers of a dependency that degraded), and the traffic of
those other callers (a batch job or a bulk sender hammering what the asked service shares with them).
How far back, and how each suspect is scored, is tools/analysis/ranking.py: the same rules find_changes (the model's
tool) uses. A second, wider look reads the changes of the day before the onset whose effect can wait (a cap met by the
daily load, a pool, a rate limit, a log volume, a retry setting): the nearest deploy is not always the one that bit.
This module makes the tool calls (through call_tool, as Steps) and reads their data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

import bot.playbook.families.rivals as rivals
import bot.playbook.families.sharedload as sharedload
import tools.analysis.changeclass as changeclass
import tools.analysis.placement as placement
import tools.analysis.ranking as ranking
from bot.playbook.evidence import LogSignature, change_points_of, deploys_in
from bot.playbook.findings import Findings, ServiceHealth, Suspect
from bot.playbook.probes import ProbeRun, check_logs, iso_from_moment
from tools.analysis.reasons import Reason
from tools.deploys.records import DeployList, DeployRecord
from tools.results import deploys_of, diff_of, series_of


def lookback_for(findings: Findings, service: str) -> timedelta:
    """Hours when memory or restarts changed (a leak, a sawtooth of OOM kills), else minutes. The trend is looked
    for where the trouble starts too: in the deepest dependency that degraded (the asked service only relays its
    timeouts), and in the lines logged since the onset (a heap that ran out says so before a memory series does)."""
    slow = [findings.roles.get(role, "") for role in ("memory", "restarts")]
    places = [h for s in dict.fromkeys((service, findings.origin)) if s and (h := findings.health.get(s)) is not None]
    trend = any(h.changed(m) for h in places for m in slow if m)
    ran_out = any(changeclass.MEMORY in changeclass.symptoms_in_text(sig.text) for sig in _all_signatures(findings))
    return ranking.lookback_for(trend or ran_out)


def _all_signatures(findings: Findings) -> list[LogSignature]:
    return [sig for found in findings.signatures.values() for sig in found]


def gather_suspects(run: ProbeRun, findings: Findings, topology: Mapping[str, Sequence[str]], target: str) -> None:
    """The "what changed" step: every deploy near the onset and every surge in another caller, ranked."""
    first = findings.first_change(target)
    if first is None or "query_deploy_records" not in run.tools:
        return
    onset, lookback = first[1], lookback_for(findings, target)
    near = ranking.neighbourhood(topology, target)
    suspects = _deploy_suspects(run, findings, target, near, onset, lookback)
    suspects += _surge_suspects(run, findings, topology, target, onset)
    seen = {(s.deploy.service, s.deploy.version) for s in suspects if s.deploy is not None}
    suspects += _delayed_suspects(run, findings, topology, (target, onset), lookback, seen)
    retried: dict[str, str] = {}  # callee -> the caller whose retry change multiplies its traffic
    for suspect in suspects:  # a retry setting sends more calls with the same traffic in, and so does a change
        # followed at once by its dependency's surge (a refresh interval); other changes do not
        if suspect.deploy is None:
            continue
        suspect.add(sharedload.shared_slots_reasons(findings, topology, suspect, target))
        retries = any(changeclass.class_of(c) == changeclass.TIMEOUT for c in changeclass.expanded(suspect.key_changes))
        if retries:
            suspect.add(rivals.retry_reasons(findings, topology, suspect.service))
            callee, _ = rivals.retried_callee(findings, topology, suspect.service)
            if callee:
                retried.setdefault(callee, suspect.service)
        elif not rivals.load_sent_after(findings, topology, suspect.deploy, target):  # its calls out rose, not in
            suspect.add(rivals.load_from_elsewhere(findings, topology, suspect.service))
    for suspect in suspects:
        if suspect.deploy is not None and suspect.service in retried:
            suspect.add(rivals.retried_into(findings, suspect.service, retried[suspect.service]))
    findings.suspects = sorted(suspects, key=lambda s: -s.score)


# Role of a metric -> the symptom it shows when it rose.
_ROLE_SYMPTOMS = {
    "latency": changeclass.LATENCY,
    "errors": changeclass.ERRORS,
    "traffic": changeclass.TRAFFIC,
    "cpu": changeclass.SATURATION,
    "memory": changeclass.MEMORY,
    "restarts": changeclass.RESTARTS,
}


def symptoms_of(findings: Findings) -> frozenset[str]:
    """What the degraded services show: their metrics that rose, and what their new log lines say (throttling,
    GC pauses, a full disk, a growing backlog)."""
    found = set()
    for health in findings.health.values():
        for metric, point in health.changes():
            symptom = _ROLE_SYMPTOMS.get(findings.role_of(metric))
            if symptom is not None and point.ratio > 1:
                found.add(symptom)
    for signatures in findings.signatures.values():
        for sig in signatures:
            found |= changeclass.symptoms_in_text(sig.text)
    return frozenset(found) or ranking.GOLDEN_SYMPTOMS


def _degraded_order(findings: Findings) -> list[str]:
    """The services that degraded, earliest first."""
    firsts = [(first[1], svc) for svc in findings.health if (first := findings.first_change(svc)) is not None]
    return [svc for _, svc in sorted(firsts)]


def _delayed_suspects(
    run: ProbeRun,
    findings: Findings,
    topology: Mapping[str, Sequence[str]],
    asked: tuple[str, datetime],
    lookback: timedelta,
    seen: set[tuple[str, str]],
) -> list[Suspect]:
    """Changes of the day before the lookback whose effect can wait: read, classed, kept only when they can."""
    target, onset = asked
    near = ranking.neighbourhood(topology, target)
    start, end = onset - ranking.DELAYED_LOOKBACK, onset - lookback
    thought = (
        f"A cap, a pool, a rate limit, a log volume or a retry setting can bite hours after it lands, when load or "
        f"a blip meets it: reading every deploy of the {ranking.lookback_words(ranking.DELAYED_LOOKBACK)} before "
        f"{end:%H:%M} UTC near {target}."
    )
    step = run.probe(
        thought, "query_deploy_records", {"service": "*", "start": iso_from_moment(start), "end": iso_from_moment(end)}
    )
    if step is None:
        return []
    degraded = _degraded_order(findings)
    records = [d for svc in near for d in deploys_in(step, svc) if (d.service, d.version) not in seen]
    records.sort(key=lambda d: (d.service not in degraded, d.service != target, -d.at.timestamp()))
    found = []
    for record in records[: ranking.MAX_DIFFS]:
        suspect = _delayed_suspect(
            run, findings, record, asked, degraded, rivals.load_sent_after(findings, topology, record, target)
        )
        if suspect is not None:
            suspect.add(placement.shared_dependency_reasons(topology, record.service, degraded))
            found.append(suspect)
    return found


def _delayed_suspect(
    run: ProbeRun,
    findings: Findings,
    deploy: DeployRecord,
    asked: tuple[str, datetime],
    degraded: list[str],
    load_sent: list[Reason],
) -> Suspect | None:
    """A deploy of the day before, kept when what it changed can wait that long, or when the load it sent into a
    dependency the asked service shares shows at once (`load_sent`), weighed by where its service sits among the
    degraded ones and by what the service logged since the onset (read here when not read yet)."""
    target, onset = asked
    suspect = Suspect(f"deploy {deploy.service} {deploy.version}", deploy.service, deploy=deploy)
    _read_diff(
        run,
        suspect,
        deploy,
        f"Reading the diff of {deploy.service} {deploy.version}: does it touch something that waits?",
    )
    waiting = ranking.delayed_reason(suspect.key_changes, deploy.at, onset, symptoms_of(findings))
    if waiting is None and not load_sent:
        return None
    suspect.add(
        [*([waiting] if waiting else []), *load_sent, *placement.place_reasons(deploy.service, target, degraded)]
    )
    if deploy.service not in findings.signatures:
        why = f"{deploy.service} changed {suspect.key_changes[0].key} hours before: do its logs say so? "
        check_logs(run, findings, deploy.service, ("the onset", onset), why=why)
    signatures = [(sig.text, sig.quoted) for sig in _all_signatures(findings)]
    suspect.add(ranking.diff_reasons(suspect.key_changes, suspect.risky_lines, signatures, symptoms_of(findings)))
    suspect.key_changes = ranking.meaningful_changes(suspect.key_changes, symptoms_of(findings), delayed=True)
    own = [(sig.text, sig.quoted) for sig in findings.signatures.get(deploy.service, ())]
    settings = [c for c in suspect.key_changes if changeclass.class_of(c) != changeclass.IMAGE]
    # the changed service says so itself: a line showing what the setting limits, or naming the setting or its value
    if ranking.showing_signature(own, suspect.key_changes) is not None or (
        settings and ranking.naming_signature([text for text, _ in own], settings) is not None
    ):
        suspect.add([Reason(2, f"{deploy.service}'s own logs since the onset show it too")])
    return suspect


def _read_diff(run: ProbeRun, suspect: Suspect, deploy: DeployRecord, thought: str) -> None:
    """The deploy's changed settings (runtime flags on lines of their own included) and risky statements."""
    step = run.probe(thought, "query_deploy_diff", {"version": deploy.version, "service": deploy.service})
    report = diff_of(step) if step is not None else None
    if report is not None:
        changes = changeclass.with_option_lines(report.key_changes, report.diff)
        suspect.key_changes = changeclass.with_contract_files(changes, report.diff)
    suspect.risky_lines = list(report.risky_lines) if report else []


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
        for d in ranking.deploys_to_read(records, near, target, onset, lookback, _degraded_order(findings))
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
    timing, place = ranking.deploy_reasons(deploy, target, onset, health is not None and bool(health.changes()))
    if findings.steady_asked and deploy.service == target:  # the walk moved here; nobody asked about it
        place = Reason(2, f"{target} degraded, where the trouble was found ({findings.steady_asked} looks healthy)")
    suspect.add([timing, place])
    suspect.add(placement.origin_reasons(deploy.service, target, findings.origin))
    _read_diff(run, suspect, deploy, f"Reading the diff of {deploy.service} {deploy.version} to weigh it as a suspect.")
    # matched on the template, cited as the concrete example (it can be checked against the logs)
    signatures = [(sig.text, sig.quoted) for sig in _all_signatures(findings)]
    symptoms = symptoms_of(findings)
    suspect.add(ranking.diff_reasons(suspect.key_changes, suspect.risky_lines, signatures, symptoms))
    suspect.key_changes = ranking.meaningful_changes(suspect.key_changes, symptoms) or suspect.key_changes
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
