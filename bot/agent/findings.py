"""What the playbook found, and the templated conclusion that cites it.

The cause is chosen by a fixed ranking an on-call engineer would recognise: a deploy just before the first
change point (with what it changed), then the deepest downstream service that changed too (with its own
deploy or error signature), then a local cause (traffic, CPU, memory, restarts: the earliest to change),
then an error signature alone. Nothing changed means no incident is visible in what was checked.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.agent.diffs import ABSENT, DeployRecord, KeyChange
from bot.agent.evidence import ChangePoint, LogSignature, moment_from_text, spikes_from_text
from bot.agent.prompts import load_prompt

SIGNIFICANT_STRENGTH = math.log(1.5)  # a shift of at least x1.5 (or to 2/3) counts as a change
SAME_EXCURSION_MINUTES = 10  # a change point this close to a spike's span belongs to that spike
METRIC_LABELS = {
    "p99_latency": "p99 latency",
    "error_rate": "error rate",
    "qps": "traffic",
    "cpu_usage": "CPU usage",
    "memory_usage": "memory",
    "restarts": "restarts",
}
# Local causes, in the order that breaks ties: traffic drives CPU, CPU and memory drive restarts.
LOCAL_CAUSES = (
    ("qps", "a traffic surge"),
    ("cpu_usage", "CPU saturation"),
    ("memory_usage", "memory growth"),
    ("restarts", "container restarts (likely OOM kills)"),
)


@dataclass(frozen=True)
class Recovery:
    """Where a spike came back to, as the tool printed it ("back to ~243 ms by 16:16")."""

    level: str  # "~243 ms"
    at: datetime


@dataclass
class ServiceHealth:
    """Change points per metric of one service; None when the metric could not be read."""

    service: str
    readings: dict[str, list[ChangePoint] | None] = field(default_factory=dict)
    recoveries: dict[str, Recovery] = field(default_factory=dict)  # per metric whose reading is a spike

    def describe(self, metric: str, point: ChangePoint) -> str:
        """One change point of this service in words (a spike says where it came back to)."""
        return describe_change(self.service, metric, point, self.recoveries.get(metric) if point.spike else None)

    def changes(self) -> list[tuple[str, ChangePoint]]:
        """Significant change points of every metric, oldest first."""
        found = [(m, p) for m, points in self.readings.items() for p in points or () if _significant(p)]
        return sorted(found, key=lambda mp: mp[1].at)

    @property
    def strength(self) -> float:
        return max((p.strength for _, p in self.changes()), default=0.0)

    def changed(self, metric: str) -> ChangePoint | None:
        """The earliest significant change of one metric."""
        points = [p for p in self.readings.get(metric) or () if _significant(p)]
        return min(points, key=lambda p: p.at) if points else None


def _significant(point: ChangePoint) -> bool:
    return point.strength >= SIGNIFICANT_STRENGTH


def excursion_from_text(
    observation: str, end: datetime, points: Sequence[ChangePoint]
) -> tuple[ChangePoint, Recovery | None] | None:
    """The spike to report instead of the change points, with where it came back to; None to keep the points.

    A plateau or a decay at fine resolution gives a `change:` line AND a `spike:` line for the same excursion.
    The spike says what matters at 3 a.m., that it came back, so it wins when every significant change
    point falls within its span; a level shift outside every spike keeps the change points.
    """
    recoveries = _recoveries_from_text(observation, end)
    shifts = [p for p in points if _significant(p)]
    for spike in sorted(spikes_from_text(observation, end), key=lambda p: p.strength, reverse=True):
        recovery = recoveries.get(spike.at)
        until = (recovery.at if recovery else spike.at) + timedelta(minutes=SAME_EXCURSION_MINUTES)
        if all(spike.at - timedelta(minutes=SAME_EXCURSION_MINUTES) <= p.at <= until for p in shifts):
            return spike, recovery
    return None


_RECOVERY_RX = re.compile(
    r"^\s*spike:\s*(?P<when>\S+(?:[ T]\d{1,2}:\d{2}\S*)?)\s.*,\s*back to (?P<level>\S.*?) by "
    r"(?P<back>\S+(?:[ T]\d{1,2}:\d{2}\S*)?)\s*$",
    re.MULTILINE,
)


def _recoveries_from_text(observation: str, end: datetime) -> dict[datetime, Recovery]:
    """Each `spike:` line's "back to ~A by HH:MM", keyed by the spike's start as spikes_from_text reads it."""
    found = {}
    for match in _RECOVERY_RX.finditer(observation):
        start, back = moment_from_text(match.group("when"), end), moment_from_text(match.group("back"), end)
        if start is not None and back is not None:
            found[start] = Recovery(match.group("level"), back)
    return found


@dataclass
class Findings:
    """Accumulated evidence of one playbook run (mutable while the run lasts, read once at the end)."""

    window_label: str
    service: str = ""  # the service the question is about
    origin: str = ""  # the deepest downstream service that changed too, when there is one
    health: dict[str, ServiceHealth] = field(default_factory=dict)
    deploys_checked: list[str] = field(default_factory=list)
    late_deploys: list[DeployRecord] = field(default_factory=list)  # in the window but after the change
    deploy: DeployRecord | None = None
    key_changes: list[KeyChange] = field(default_factory=list)
    risky_lines: list[str] = field(default_factory=list)
    signatures: dict[str, list[LogSignature]] = field(default_factory=dict)
    onset_lines: list[str] = field(default_factory=list)  # jobs or batches that started at the onset
    neighbours: list[str] = field(default_factory=list)  # steady siblings of the origin that logged something
    unknowns: list[str] = field(default_factory=list)

    def first_change(self, service: str) -> tuple[str, datetime] | None:
        """(metric, time) of the service's earliest significant change point."""
        health = self.health.get(service)
        changes = health.changes() if health else []
        return (changes[0][0], changes[0][1].at) if changes else None

    def top_signature(self, service: str) -> LogSignature | None:
        found = self.signatures.get(service) or []
        return found[0] if found else None


def conclusion_from_findings(findings: Findings) -> tuple[str, bool]:
    """The cited conclusion text and whether a cause was identified."""
    headline, complete = _headline(findings)
    evidence = _evidence_lines(findings)
    unknowns = _unknown_lines(findings, complete)
    answer = load_prompt(
        "playbook_conclusion",
        headline=headline,
        evidence="\n".join(f"- {line}" for line in evidence) or "- (no tool returned usable data)",
        unknowns="\n".join(f"- {line}" for line in unknowns) or "- nothing specific",
    )
    return answer.strip(), complete


def describe_change(service: str, metric: str, point: ChangePoint, recovery: Recovery | None = None) -> str:
    """A level shift ("went from A to B at HH:MM") or a spike (its level before, its peak, where it came back)."""
    label = METRIC_LABELS.get(metric, metric)
    # only the factor the tool printed: a number computed here would be one no observation backs
    factor = f", {point.factor}" if point.factor and point.ratio >= 1 else ""
    if not point.spike:
        return f"{service} {label} went from {point.before} to {point.after} at {point.at:%H:%M} UTC{factor}"
    back = f"; it recovered to {recovery.level} by {recovery.at:%H:%M} UTC" if recovery else ", then came back"
    return (f"{service} {label} spiked at {point.at:%H:%M} UTC from {point.before} (its level before the spike) "
            f"to a peak of {point.after}{factor}{back}")


def _headline(findings: Findings) -> tuple[str, bool]:
    service = findings.service
    if not any(points is not None for h in findings.health.values() for points in h.readings.values()):
        whose = f"{service}'s" if service else "the services'"
        return f"No conclusion: {whose} metrics could not be read, so the playbook cannot tell what changed.", False
    health = findings.health.get(service)
    changes = health.changes() if health else []
    if not changes and not findings.origin:
        scope = f"{service}'s metrics show" if service else "no service shows"
        return f"No incident found: {scope} no significant change over {findings.window_label}.", False
    symptom = health.describe(*changes[0]) if health and changes else f"{service} itself looks steady"
    origin_first = findings.first_change(findings.origin) if findings.origin else None
    deploy = findings.deploy
    if deploy is not None and not (origin_first and deploy.at and origin_first[1] < deploy.at):
        return f"Likely cause: {_deploy_cause(findings, deploy)}. Symptom: {symptom}.", True
    if findings.origin:
        return f"Likely cause: {_origin_cause(findings)}. Symptom: {symptom}.", True
    return _local_headline(findings, symptom)


def _deploy_cause(findings: Findings, deploy: DeployRecord) -> str:
    when = f" at {deploy.at:%Y-%m-%d %H:%M} UTC" if deploy.at else ""
    what = [f"{c.key} {c.old} → {c.new}" for c in findings.key_changes[:3]] + findings.risky_lines[:2]
    change = f", which changed {'; '.join(what)}" if what else ""
    top = findings.top_signature(deploy.service) or findings.top_signature(findings.service)
    error = f". Top error since: {top.quoted}" if top else ""
    return f"deploy {deploy.service} {deploy.version}{when}{change}{error}"


def _origin_cause(findings: Findings) -> str:
    origin = findings.health[findings.origin]
    change = origin.describe(*origin.changes()[0])
    top = findings.top_signature(origin.service) or findings.top_signature(findings.service)
    error = f"; top error: {top.quoted} ({top.count:,} lines)" if top else ""
    meanwhile = "".join(
        f"; meanwhile {n} (steady metrics) logged: {sig.quoted}"
        for n in findings.neighbours[:2] if (sig := findings.top_signature(n))
    )
    checked = findings.deploys_checked or [findings.service]
    names = checked[0] if len(checked) == 1 else f"{', '.join(checked[:-1])} or {checked[-1]}"
    return f"downstream {origin.service} degraded first ({change}){error}{meanwhile}. No deploy of {names} precedes it"


def _local_headline(findings: Findings, symptom: str) -> tuple[str, bool]:
    health = findings.health[findings.service]
    candidates = [(point.at, rank, what, metric, point) for rank, (metric, what) in enumerate(LOCAL_CAUSES)
                  if (point := health.changed(metric)) is not None and (metric != "qps" or point.ratio > 1)]
    top = findings.top_signature(findings.service)
    error = f" Top error: {top.quoted} ({top.count:,} lines)." if top else ""
    if candidates:
        _, _, what, metric, point = min(candidates)
        cause = health.describe(metric, point)
        also = "" if cause == symptom else f" Symptom: {symptom}."
        if findings.onset_lines:
            also = f" It began as this ran: {findings.onset_lines[0]}.{also}"
        return f"Likely cause: {what} on {findings.service} with no deploy before it ({cause}).{also}{error}", True
    if top is not None:
        return f"Likely cause: {top.quoted} ({top.count:,} errors), with no deploy before it. {symptom}.", True
    return f"Unexplained change: {symptom}; no deploy, downstream change or error cluster explains it.", False


def _evidence_lines(findings: Findings) -> list[str]:
    lines = []
    for service, health in findings.health.items():
        for metric, points in health.readings.items():
            label = METRIC_LABELS.get(metric, metric)
            if points is None:
                lines.append(f"{service} {label}: could not be read (see the step's observation)")
            elif (point := health.changed(metric)) is not None:
                lines.append(health.describe(metric, point))
        if health.readings and not health.changes():
            lines.append(f"{service}: no significant change in {', '.join(health.readings)}")
    lines.extend(_deploy_evidence(findings))
    lines.extend(f"at the onset, {findings.service} logged: {line}" for line in findings.onset_lines)
    for service, signatures in findings.signatures.items():
        lines.extend(
            f"{service} log cluster: {s.count:,}x {s.text}" + (f' (e.g. "{s.example}")' if s.example else "")
            for s in signatures[:2]
        )
    return lines


def _deploy_evidence(findings: Findings) -> list[str]:
    lines = [f"deploy {d.service} {d.version} came after the change, so it is not the cause: {d.line}"
             for d in findings.late_deploys]
    if findings.deploy is None:
        return lines + [f"no deploy of {s} in the hour before its first change" for s in findings.deploys_checked]
    lines.append(f"deploy: {findings.deploy.line}")
    for c in findings.key_changes[:5]:
        verb = "added" if c.old == ABSENT else "removed" if c.new == ABSENT else "changed"
        lines.append(f"{verb} {c.key}: {c.old} → {c.new} ({c.path})")
    lines.extend(f"risky statement: {line}" for line in findings.risky_lines[:3])
    if not findings.key_changes and not findings.risky_lines:
        lines.append(f"the diff of {findings.deploy.version} shows no changed configuration key (a code change?)")
    return lines


def _unknown_lines(findings: Findings, complete: bool) -> list[str]:
    lines = list(findings.unknowns)
    if findings.deploy is not None:
        lines.append("whether reverting the deploy restores the metrics (not verified by the playbook)")
    if complete:
        lines.append("the mechanism linking the cause to the symptom: the playbook matches timing, it does not reason")
    return lines
