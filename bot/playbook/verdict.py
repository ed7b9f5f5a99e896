"""The playbook's verdict: a headline that names the likely cause, the evidence it cites, and what the
playbook could not tell, in the playbook_conclusion template.

The cause is chosen by a fixed ranking: nodes that went away or a credential refused for its state (no release),
the best suspect, a deploy just before the first change point, an operation a named actor ran, the deepest
downstream service that changed, a local cause, an error signature alone; flat: stale data, else flatline.py.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.engine.prompts import load_prompt
from bot.playbook.collectiongap import gap_evidence
from bot.playbook.evidence import ChangePoint
from bot.playbook.families.causes import amplified_failure, files_of, flat_or_stale, not_a_release
from bot.playbook.families.staleness import fell_behind
from bot.playbook.findings import GOLDEN_ROLES, LOCAL_CAUSES, Findings, Suspect
from bot.playbook.flatline import lookback_evidence, open_questions
from tools.analysis.configdiff import ABSENT
from tools.deploys.records import DeployRecord, record_line

MIN_SUSPECT_SCORE = 4  # a suspect weaker than this does not override the fixed ranking below
SAME_ONSET_MINUTES = 3  # local changes this close began together; traffic drives CPU, CPU and memory restarts


def conclusion_from_findings(findings: Findings) -> tuple[str, bool]:
    """The cited conclusion text and whether a cause was identified."""
    headline, complete = _headline(findings)
    if findings.lookback and findings.lookback.onset:
        headline = f"{findings.lookback.onset} {headline}"
    if complete:
        headline += _cluster_and_runbook(findings)
    if findings.time_note and complete:
        headline = f"{findings.time_note} {headline}"
    if findings.steady_asked:
        behind = fell_behind(findings)
        headline = (
            f"{findings.steady_asked} itself looks healthy over {findings.window_label}; the trouble is in "
            f"{findings.service}, within two hops of it{': ' + behind if behind else ''}. {headline}"
        )
    if findings.failed_backends:  # an answer resting on a check that could not run is partial, and says why
        backends = " and ".join(findings.failed_backends)
        headline = (
            f"{headline} Partial: {backends} could not be read, so some checks did not run "
            "(listed under Still unknown); this rests on the checks that did."
        )
        complete = False
    named = complete and bool(findings.suspects) and findings.suspects[0].score >= MIN_SUSPECT_SCORE
    evidence = _evidence_lines(findings, named)  # a named cause's other suspects are under Still unknown
    unknowns = _unknown_lines(findings, complete, named)
    answer = load_prompt(
        "playbook_conclusion",
        headline=headline,
        evidence="\n".join(f"- {line}" for line in evidence) or "- (no tool returned usable data)",
        unknowns="\n".join(f"- {line}" for line in unknowns),
    )
    return answer.strip(), complete


def _headline(findings: Findings) -> tuple[str, bool]:
    service = findings.service
    if not any(role in findings.roles for role in GOLDEN_ROLES):
        roles = ", ".join(GOLDEN_ROLES)
        return (
            f"No conclusion: no metric in the catalogue has the role {roles}, so the playbook had no "
            "golden signal to check.",
            False,
        )
    if not any(points is not None for h in findings.health.values() for points in h.readings.values()):
        whose = f"{service}'s" if service else "the services'"
        return f"No conclusion: {whose} metrics could not be read, so the playbook cannot tell what changed.", False
    health = findings.health.get(service)
    changes = health.changes() if health else []
    if not changes:
        return flat_or_stale(findings)
    felt = [c for c in changes if findings.role_of(c[0]) in GOLDEN_ROLES] or changes  # a pool filling up is a cause
    symptom = health.describe(*felt[0]) if health and felt else f"{service} itself looks steady"
    origin_first = findings.first_change(findings.origin) if findings.origin else None
    if (infrastructure := not_a_release(findings)) is not None:
        return f"Likely cause: {infrastructure}. Symptom: {symptom}.", True
    suspect = _top_suspect(findings, origin_first[1] if origin_first else None)
    if suspect is not None:
        return f"Likely cause: {_suspect_cause(findings, suspect)}. Symptom: {symptom}.", True
    deploy = findings.deploy
    if deploy is not None and not (origin_first and origin_first[1] < deploy.at):
        return f"Likely cause: {_deploy_cause(findings, deploy)}. Symptom: {symptom}.", True
    if findings.operation is not None:
        via = f" It reached {service} this way: {_origin_cause(findings)}" if findings.origin else ""
        return f"Likely cause: {findings.operation.describe()}.{via}. Symptom: {symptom}.", True
    if findings.origin:
        return f"Likely cause: {_origin_cause(findings)}. Symptom: {symptom}.", True
    return _local_headline(findings, symptom)


def _cluster_and_runbook(findings: Findings) -> str:
    """What the pods say (OOMKilled, CrashLoopBackOff) and the runbook section that documents it, for a headline
    that names a cause; "" when neither toolset is on or they found nothing."""
    text = ""
    if findings.pod_states:
        text += f" {findings.pod_service} pods: {', '.join(findings.pod_states)} ({findings.pod_summary})."
    if findings.runbook:
        text += f" See {findings.runbook}."
    return text


def _deploy_cause(findings: Findings, deploy: DeployRecord) -> str:
    when = f" at {deploy.at:%Y-%m-%d %H:%M} UTC"
    what = [f"{c.key} {c.old} → {c.new}" for c in findings.key_changes[:3]] + findings.risky_lines[:2]
    change = f", which changed {'; '.join(what)}{files_of(findings.key_changes[:3])}" if what else ""
    top = findings.top_signature(deploy.service) or findings.top_signature(findings.service)
    error = f". Top error since: {top.quoted}" if top else ""
    return f"deploy {deploy.service} {deploy.version}{when}{change}{error}"


def _top_suspect(findings: Findings, origin_at: datetime | None) -> Suspect | None:
    """The best-ranked suspect when its evidence is strong enough (a deploy after the origin degraded is not it)."""
    for suspect in findings.suspects:
        if suspect.score < MIN_SUSPECT_SCORE:
            return None
        if origin_at is None or suspect.deploy is None or suspect.deploy.at <= origin_at:
            return suspect
    return None


def _suspect_cause(findings: Findings, suspect: Suspect) -> str:
    if suspect.deploy is not None:
        deploy = suspect.deploy
        when = f" at {deploy.at:%Y-%m-%d %H:%M} UTC"
        changes = [c for c in suspect.key_changes if not c.key.endswith("newTag")] or suspect.key_changes
        what = [f"{c.key} {c.old} → {c.new}" for c in changes[:3]] + suspect.risky_lines[:2]
        change = f", which changed {'; '.join(what)}{files_of(changes[:3])}" if what else ""
        top = findings.top_signature(deploy.service) or findings.top_signature(findings.service)
        error = f". Top error since: {top.quoted}" if top else ""
        why = f". Why: {'; '.join(suspect.why)}"
        return (
            f"deploy {deploy.service} {deploy.version}{when}{change}{error}{amplified_failure(findings, suspect)}{why}"
        )
    top = findings.top_signature(findings.service)
    error = f". Top error: {top.quoted}" if top else ""
    return f"{suspect.what}. Why: {'; '.join(suspect.why)}{error}"


def _runners_up(findings: Findings) -> list[str]:
    """The runner-up and what tells it from the winner; each other suspect ruled out (score <= 0) or weighed lower."""
    winner, others = findings.suspects[0], findings.suspects[1:4]
    said = [(s, "ruled out" if s.score <= 0 else "weighed lower") for s in others if s.score <= 0 or s is not others[0]]
    lines = [f"{how}: {s.what}, score {s.score} ({'; '.join(s.why) or '-'})" for s, how in said]
    if not others or others[0].score <= 0:
        return lines
    second, why = others[0], others[0].why[0] if others[0].why else ""
    # a deploy is tested by reverting it; an operation (a session, a campaign) by stopping it
    test = f"revert it, or compare {winner.service}'s pods or versions" if winner.deploy else "stop it"
    return [
        f"the runner-up: {second.what} (score {second.score}; {why}); what would tell them apart: whether the symptom "
        f"follows {winner.what} ({test}) rather than {second.what}",
        *lines,
    ]


def _origin_cause(findings: Findings) -> str:
    origin = findings.health[findings.origin]
    change = origin.describe(*origin.changes()[0])
    top = findings.top_signature(origin.service) or findings.top_signature(findings.service)
    error = f"; top error: {top.quoted} ({top.count:,} lines)" if top else ""
    also = (findings.signatures.get(origin.service) or [])[1:2]
    error += "".join(f"; also: {sig.quoted} ({sig.count:,} lines)" for sig in also)
    own = findings.top_signature(findings.service)
    if own is not None and own != top:  # what the asked service itself logs ties the origin to the symptom
        error += f"; {findings.service} logs: {own.quoted} ({own.count:,} lines)"
    meanwhile = "".join(
        f"; meanwhile {n} (steady metrics) logged: {sig.quoted}"
        for n in findings.neighbours[:2]
        if (sig := findings.top_signature(n))
    )
    checked = findings.deploys_checked
    if not checked:
        return f"downstream {origin.service} degraded first ({change}){error}{meanwhile}. Deploys were not checked"
    names = checked[0] if len(checked) == 1 else f"{', '.join(checked[:-1])} or {checked[-1]}"
    return f"downstream {origin.service} degraded first ({change}){error}{meanwhile}. No deploy of {names} precedes it"


def _local_headline(findings: Findings, symptom: str) -> tuple[str, bool]:
    health = findings.health[findings.service]
    top = findings.top_signature(findings.service)
    error = f" Top error: {top.quoted} ({top.count:,} lines)." if top else ""
    local = _local_cause(findings)
    if local is not None:
        what, metric, point = local
        cause = health.describe(metric, point)
        also = "" if cause == symptom else f" Symptom: {symptom}."
        if findings.onset_lines:
            also = f" It began as this ran: {findings.onset_lines[0]}.{also}"
        return f"Likely cause: {what} on {findings.service} {_no_deploy(findings)} ({cause}).{also}{error}", True
    if top is not None:
        return f"Likely cause: {top.quoted} ({top.count:,} errors), {_no_deploy(findings)}. {symptom}.", True
    return f"Unexplained change: {symptom}; no deploy, downstream change or error cluster explains it.", False


def _no_deploy(findings: Findings) -> str:
    """What the deploy check found; "not checked" when it could not run (or there was no deploy tool)."""
    return "with no deploy before it" if findings.deploys_checked else "(deploys not checked)"


def _local_cause(findings: Findings) -> tuple[str, str, ChangePoint] | None:
    """(what, metric, change) of the local cause: the earliest to change; among changes that began within
    SAME_ONSET_MINUTES of it (change points are pinned to a minute or two), the one that drives the others."""
    health = findings.health[findings.service]
    candidates = []
    for rank, (role, what) in enumerate(LOCAL_CAUSES):
        point = health.changed(findings.roles.get(role, ""))
        if point is not None and (role != "traffic" or point.ratio > 1):  # traffic that fell is a symptom
            candidates.append((rank, what, findings.roles[role], point))
    if not candidates:
        return None
    onset = min(point.at for *_, point in candidates)
    rank, what, metric, point = min(c for c in candidates if c[3].at - onset <= timedelta(minutes=SAME_ONSET_MINUTES))
    return what, metric, point


def _evidence_lines(findings: Findings, named: bool) -> list[str]:
    lines = []
    for service, health in findings.health.items():
        for metric, points in health.readings.items():
            if points is None:
                lines.append(f"{service} {metric}: could not be read (see the step's observation)")
            elif metric in health.silent:
                lines.append(
                    f"{service} {metric}: no samples in {findings.window_label} (no requests were "
                    "measured, or there is no such series): not checked for a change"
                )
            elif (point := health.changed(metric)) is not None:
                lines.append(health.describe(metric, point))
        lines += gap_evidence(health)
        readable = [
            m
            for m, points in health.readings.items()
            if points is not None and m not in health.silent and m not in health.gaps
        ]
        if readable and not health.changes():
            lines.append(f"{service}: no significant change in {', '.join(readable)}")
    lines += lookback_evidence(findings)
    lines.extend(_deploy_evidence(findings, named))
    lines.extend(
        f"suspect {rank}: {s.what}, score {s.score} ({'; '.join(s.why)})"
        for rank, s in enumerate(findings.suspects[: 1 if named else 4], start=1)
    )
    lines.extend(f"at the onset, {findings.service} logged: {line}" for line in findings.onset_lines)
    for service, signatures in findings.signatures.items():
        lines.extend(
            f"{service} log cluster: {s.count:,}x {s.text}" + (f' (e.g. "{s.example}")' if s.example else "")
            for s in signatures[:2]
        )
    if findings.pod_summary:
        states = f"; {', '.join(findings.pod_states)}" if findings.pod_states else ""
        lines.append(f"{findings.pod_service or findings.service} pods: {findings.pod_summary}{states}")
    if findings.runbook:
        lines.append(f"the closest runbook section: {findings.runbook}")
    return lines


def _deploy_evidence(findings: Findings, named: bool) -> list[str]:
    if findings.deploy is None:  # a deploy after the change is ruled out: under Still unknown (_unknown_lines)
        return [f"no deploy of {s} in the hour before its first change" for s in findings.deploys_checked]
    # a named deploy's own record and diff; the nearest deploy, when another, is the runner-up under Still unknown
    cause: Findings | Suspect = findings.suspects[0] if named and findings.suspects[0].deploy else findings
    deploy = cause.deploy or findings.deploy
    lines = [f"deploy: {record_line(deploy)}"]
    for c in cause.key_changes[:5]:
        verb = "added" if c.old == ABSENT else "removed" if c.new == ABSENT else "changed"
        lines.append(f"{verb} {c.key}: {c.old} → {c.new} ({c.path})")
    lines.extend(f"risky statement: {line}" for line in cause.risky_lines[:3])
    if not cause.key_changes and not cause.risky_lines:
        lines.append(f"the diff of {deploy.version} shows no changed configuration key (a code change?)")
    return lines


def _unknown_lines(findings: Findings, complete: bool, named: bool) -> list[str]:
    lines = list(findings.unknowns)
    lines += _runners_up(findings) if named else []
    lines += [f"ruled out: {d.service} {d.version} (after the change): {record_line(d)}" for d in findings.late_deploys]
    lines += [f"not checked: {check}" for check in findings.failed_checks]
    lines += [f"{h.service}'s {m}: {text}" for h in findings.health.values() for m, text in h.capped.items()]
    if findings.unconfigured:
        lines.append(
            f"not checked: no catalogue metric has the role {', '.join(findings.unconfigured)} "
            "(set `role` on a metric catalogue entry so the playbook reads it)"
        )
    lines += [
        f"not checked: {h.service}'s {', '.join(sorted(h.unmeasured))} (prometheus.services.{h.service}.not_measured)"
        for h in findings.health.values()
        if h.unmeasured
    ]
    if findings.deploy is not None:
        lines.append("whether reverting the deploy restores the metrics (not verified by the playbook)")
    if complete:
        lines.append("the mechanism linking the cause to the symptom: the playbook matches timing, it does not reason")
    else:
        lines += open_questions(findings)
    return lines
