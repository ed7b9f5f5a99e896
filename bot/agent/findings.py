"""What the playbook found, and the templated conclusion that cites it.

The cause is chosen by a fixed ranking an on-call engineer would recognise: a deploy just before the first
change point (with the keys it changed), then a downstream service that changed too, then saturation or
restarts, then a traffic surge, then an error signature alone. Nothing found means no incident is visible.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime

from bot.agent.evidence import ChangePoint, DeployRecord, KeyChange, LogSignature
from bot.agent.prompts import load_prompt

SIGNIFICANT_STRENGTH = math.log(1.5)  # a shift of at least x1.5 (or to 2/3) counts as a change
METRIC_LABELS = {
    "p99_latency": "p99 latency",
    "error_rate": "error rate",
    "qps": "traffic",
    "cpu_usage": "CPU usage",
    "memory_usage": "memory",
    "restarts": "restarts",
}


@dataclass
class ServiceHealth:
    """Change points per metric of one service; None when the metric could not be read."""

    service: str
    readings: dict[str, list[ChangePoint] | None] = field(default_factory=dict)

    def changes(self) -> list[tuple[str, ChangePoint]]:
        """Significant change points of every metric, oldest first."""
        found = [(m, p) for m, points in self.readings.items() for p in points or () if _significant(p)]
        return sorted(found, key=lambda mp: mp[1].at)

    @property
    def strength(self) -> float:
        return max((p.strength for _, p in self.changes()), default=0.0)

    def changed(self, metric: str) -> ChangePoint | None:
        """The strongest significant change of one metric."""
        points = [p for p in self.readings.get(metric) or () if _significant(p)]
        return max(points, key=lambda p: p.strength) if points else None


def _significant(point: ChangePoint) -> bool:
    return point.strength >= SIGNIFICANT_STRENGTH


@dataclass
class Findings:
    """Accumulated evidence of one playbook run (mutable while the run lasts, read once at the end)."""

    window_label: str
    service: str = ""
    health: dict[str, ServiceHealth] = field(default_factory=dict)
    deploys_checked: list[str] = field(default_factory=list)
    deploy: DeployRecord | None = None
    key_changes: list[KeyChange] = field(default_factory=list)
    signatures: list[LogSignature] = field(default_factory=list)
    unknowns: list[str] = field(default_factory=list)

    def first_change(self, service: str) -> tuple[str, datetime] | None:
        """(metric, time) of the service's earliest significant change point."""
        health = self.health.get(service)
        changes = health.changes() if health else []
        return (changes[0][0], changes[0][1].at) if changes else None

    def changed_downstream(self) -> list[ServiceHealth]:
        """Downstream services (every checked service but the target) that changed, strongest first."""
        others = [h for s, h in self.health.items() if s != self.service and h.changes()]
        return sorted(others, key=lambda h: -h.strength)


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


def _describe_change(service: str, metric: str, point: ChangePoint) -> str:
    label = METRIC_LABELS.get(metric, metric)
    factor = f", x{point.ratio:.1f}" if not math.isinf(point.ratio) and point.ratio >= 1 else ""
    return f"{service} {label} went from {point.before} to {point.after} at {point.at:%H:%M} UTC{factor}"


def _headline(findings: Findings) -> tuple[str, bool]:
    service = findings.service
    health = findings.health.get(service)
    changes = health.changes() if health else []
    if not service or (not changes and not findings.changed_downstream()):
        scope = f"{service}'s" if service else "the services'"
        return (f"No incident found: {scope} metrics show no significant change over {findings.window_label}.", False)
    symptom = _describe_change(service, *changes[0]) if changes else f"{service} looks steady itself"
    if findings.deploy is not None:
        return _deploy_headline(findings, findings.deploy, symptom), True
    for downstream in findings.changed_downstream():
        change = _describe_change(downstream.service, *downstream.changes()[0])
        return f"Likely cause: downstream {downstream.service} degraded ({change}); {symptom}. " \
               f"No deploy of {service} precedes it.", True
    return _local_headline(findings, symptom)


def _deploy_headline(findings: Findings, deploy: DeployRecord, symptom: str) -> str:
    when = f" at {deploy.at:%Y-%m-%d %H:%M} UTC" if deploy.at else ""
    keys = "; ".join(f"{c.key} {c.old} → {c.new}" for c in findings.key_changes[:3])
    change = f", which changed {keys}" if keys else ""
    top = f" Top error: {findings.signatures[0].quoted}" if findings.signatures else ""
    return f"Likely cause: deploy {deploy.service} {deploy.version}{when}{change}. Symptom: {symptom}.{top}"


def _local_headline(findings: Findings, symptom: str) -> tuple[str, bool]:
    health = findings.health[findings.service]
    for metric, what in (("restarts", "restarts (likely OOM kills)"), ("memory_usage", "memory growth"),
                         ("cpu_usage", "CPU saturation")):
        if health.changed(metric):
            return f"Likely cause: {what} on {findings.service}, with no deploy before it. {symptom}.", True
    surge = health.changed("qps")
    if surge is not None and surge.ratio > 1:
        return (f"Likely cause: a traffic surge with no deploy: {_describe_change(findings.service, 'qps', surge)}. "
                f"{symptom}.", True)
    if findings.signatures:
        top = findings.signatures[0]
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
                lines.append(_describe_change(service, metric, point))
        if health.readings and not health.changes():
            lines.append(f"{service}: no significant change in {', '.join(health.readings)}")
    lines.extend(_deploy_evidence(findings))
    lines.extend(
        f"error log cluster: {s.count:,}x {s.text}" + (f' (e.g. "{s.example}")' if s.example else "")
        for s in findings.signatures[:3]
    )
    return lines


def _deploy_evidence(findings: Findings) -> list[str]:
    if findings.deploy is None:
        return [f"no deploy of {s} in the hour before the first change" for s in findings.deploys_checked]
    lines = [f"deploy: {findings.deploy.line}"]
    lines.extend(f"changed {c.key}: {c.old} → {c.new} ({c.path})" for c in findings.key_changes[:5])
    if not findings.key_changes:
        lines.append(f"the diff of {findings.deploy.version} shows no changed configuration key (a code change?)")
    return lines


def _unknown_lines(findings: Findings, complete: bool) -> list[str]:
    lines = list(findings.unknowns)
    if findings.deploy is not None:
        lines.append("whether reverting the deploy restores the metrics (not verified by the playbook)")
    if complete:
        lines.append("the mechanism linking the cause to the symptom: the playbook matches timing, it does not reason")
    return lines
