"""What the playbook found: change points per service and metric, deploys, log signatures, what is unknown.

The playbook reads metrics by role, not by name: an operator's catalogue says which entry is the latency,
the error rate, the traffic and so on (`role` on each entry), so renamed metrics still get diagnosed. The
conclusion written from these findings is in bot/playbook/verdict.py.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.playbook.evidence import (
    ChangePoint,
    Gap,
    LogSignature,
    Recovery,
    change_points_of,
    gap_of,
    spikes_of,
    stops_of,
)
from bot.playbook.families.hypotheses import NodeFault, Operation, Staleness, StatusAnswered
from tools.analysis.configdiff import KeyChange
from tools.analysis.ranking import Reason
from tools.deploys.records import DeployRecord
from tools.metrics.series import UNKNOWN, MetricSeries

SIGNIFICANT_STRENGTH = math.log(1.5)  # a shift of at least x1.5 (or to 2/3) counts as a change
COLLAPSE_RATIO = 0.2  # traffic that falls to this fraction of its level (or less) collapsed: it stopped serving
STRONG_STRENGTH = math.log(2)  # a rise of x2 or more is a strong change; x1.5-2 is weak (noise can do that)
ERROR_RATIO_FLOOR = 0.005  # an error ratio that stays under 0.5 % of requests is noise a caller does not feel
# How telling one change of a dependency is (Findings.weight): the walk follows the most telling change first.
NOT_FELT, WEAK, STRONG, STOPPED = 0, 1, 2, 3
SAME_EXCURSION_MINUTES = 10  # a change point this close to a spike's span belongs to that spike
# The metric roles a catalogue entry may have (bot/config/backends.py MetricTemplate.role lists the same values).
GOLDEN_ROLES = ("latency", "errors", "traffic")
SATURATION_ROLES = ("cpu", "memory", "restarts")
ROLES = (*GOLDEN_ROLES, *SATURATION_ROLES)
# Local causes, in the order that breaks ties: traffic drives CPU, CPU and memory drive restarts.
LOCAL_CAUSES = (
    ("traffic", "a traffic surge"),
    ("cpu", "CPU saturation"),
    ("memory", "memory growth"),
    ("restarts", "container restarts (likely OOM kills)"),
)


@dataclass
class ServiceHealth:
    """Change points per metric of one service; None when the metric could not be read."""

    service: str
    readings: dict[str, list[ChangePoint] | None] = field(default_factory=dict)
    recoveries: dict[str, Recovery] = field(default_factory=dict)  # per metric whose reading is a spike
    silent: set[str] = field(default_factory=set)  # metrics whose query returned no samples at all in the window
    gaps: dict[str, Gap] = field(default_factory=dict)  # metrics that stopped with the collection, not the service
    unmeasured: set[str] = field(default_factory=set)  # metrics its catalogue says it does not measure: not read
    capped: dict[str, str] = field(default_factory=dict)  # metric -> its reading at a histogram's top bucket

    def record(self, metric: str, series: MetricSeries) -> None:
        """One metric's reading: its change points and a stop, or the spike when the series came back (see
        excursion); a series that stopped with the collection is a gap, not a change of the service."""
        points = sorted([*change_points_of(series), *stops_of(series)], key=lambda p: p.at)
        if series.ceiling is not None:  # flat at the cap is no proof of "no change" (tools/metrics/ceiling.py)
            self.capped[metric] = series.ceiling.reading(series.unit)
        if (gap := gap_of(series)) is not None:
            self.gaps[metric] = gap
        found = excursion(spikes_of(series), points)
        if found is None:
            self.readings[metric] = points
            return
        spike, self.recoveries[metric] = found
        self.readings[metric] = [spike]

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


def excursion(
    spikes: Sequence[tuple[ChangePoint, Recovery]], points: Sequence[ChangePoint]
) -> tuple[ChangePoint, Recovery] | None:
    """The spike to report instead of the change points, with where it came back to; None to keep the points.

    A plateau or a decay at fine resolution gives a change point AND a spike for the same excursion. The spike
    says what matters at 3 a.m., that it came back, so it wins when every significant change point falls within
    its span; a level shift outside every spike keeps the change points.
    """
    shifts = [p for p in points if _significant(p)]
    for spike, recovery in sorted(spikes, key=lambda pair: pair[0].strength, reverse=True):
        until = recovery.at + timedelta(minutes=SAME_EXCURSION_MINUTES)
        if all(spike.at - timedelta(minutes=SAME_EXCURSION_MINUTES) <= p.at <= until for p in shifts):
            return spike, recovery
    return None


@dataclass(frozen=True)
class Lookback:
    """The second, wider look at a service that was flat over the window (bot/playbook/onset.py)."""

    label: str  # how far it looked: "the last 7d"
    flat_label: str  # the window that was flat: "the last 24h"
    data_from: datetime | None  # about where the metrics begin (the first summary bucket); None when unread
    onset: str = ""  # "Started 30 h ago (...) and still going on: ..." when it found a lasting change before


@dataclass(frozen=True)
class NodeLoss:
    """Nodes that went away under several services at once, as Kubernetes events report it."""

    at: datetime
    reasons: tuple[str, ...]  # NodeNotReady, TaintManagerEviction ... oldest first
    services: tuple[str, ...]  # whose pods were on them
    zones: tuple[str, ...] = ()  # zones the logs name, if any
    operation: str = ""  # the log line of who took the node out (a drain), when one records it


@dataclass
class Suspect:
    """One candidate cause from the "what changed" step, its score and the evidence for it, in words."""

    what: str
    service: str
    score: int = 0
    why: list[str] = field(default_factory=list)
    deploy: DeployRecord | None = None
    key_changes: list[KeyChange] = field(default_factory=list)
    risky_lines: list[str] = field(default_factory=list)

    def add(self, reasons: Sequence[Reason]) -> None:
        """Weigh the evidence (scored in tools/analysis/ranking.py, which find_changes shares)."""
        for reason in reasons:
            self.score += reason.points
            self.why.append(reason.text)


@dataclass
class Findings:
    """Accumulated evidence of one playbook run (mutable while the run lasts, read once at the end)."""

    window_label: str
    service: str = ""  # the service the question is about (or, when that one is steady, the neighbour diagnosed)
    steady_asked: str = ""  # the asked service, when it looked healthy and a neighbour that changed was diagnosed
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
    roles: dict[str, str] = field(default_factory=dict)  # role -> the catalogue metric the playbook reads for it
    unconfigured: list[str] = field(default_factory=list)  # roles no usable catalogue metric has
    failed_checks: list[str] = field(default_factory=list)  # checks that could not run, each naming its backend
    failed_backends: list[str] = field(default_factory=list)
    suspects: list[Suspect] = field(default_factory=list)  # ranked, best first (bot/playbook/suspects.py)
    time_note: str = ""  # "you said 09:00; the errors start at 09:40" when the user's time is off
    runbook: str = ""  # "Runbook: file.md § Section", the section search_runbooks ranked first
    pod_states: list[str] = field(default_factory=list)  # "OOMKilled exit 137", "CrashLoopBackOff" from query_pods
    pod_summary: str = ""  # "2, 1 not ready, 7 restarts in total"
    pod_service: str = ""  # whose pods those are: the deployed service, else the origin, else the one asked about
    lookback: Lookback | None = None  # the second, wider look when the window was flat (bot/playbook/onset.py)
    log_levels: dict[str, str] = field(default_factory=dict)  # the level each service's signatures were read at
    after_gap: int | None = None  # lines the service logged after a collection gap began (None: not checked)
    behind: str = ""  # a neighbour's line saying what it reads is behind, when an operation left it so (behind.py)
    refused_peer: str = ""  # the host (and callee) a refused credential's lines name (families/peers.py)
    node_loss: NodeLoss | None = None  # nodes gone under several services at the onset (bot/playbook/toolsetprobes.py)
    node_fault: NodeFault | None = None  # one node's pods alone failing (bot/playbook/families/nodefault.py)
    status: StatusAnswered | None = None  # a 4xx the error rate does not count (bot/playbook/families/statuscodes.py)
    stale: Staleness | None = (
        None  # a flat service serving stale data, and its producer (bot/playbook/families/staleness.py)
    )
    operation: Operation | None = (
        None  # an operation a named actor ran at the onset (bot/playbook/families/operations.py)
    )

    def role_of(self, metric: str) -> str:
        """The role the playbook read `metric` as ("" when none)."""
        return next((role for role, name in self.roles.items() if name == metric), "")

    def first_change(self, service: str) -> tuple[str, datetime] | None:
        """(metric, time) of the service's earliest significant change point."""
        health = self.health.get(service)
        changes = health.changes() if health else []
        return (changes[0][0], changes[0][1].at) if changes else None

    def collapsed(self, metric: str, point: ChangePoint) -> bool:
        """Whether a change says the service stopped serving: any series that stopped (no samples since), or
        traffic that fell to COLLAPSE_RATIO of its level or less. A dependency that stops serving shows it so,
        its latency and errors have nothing left to measure."""
        return point.after is None or (self.role_of(metric) == "traffic" and point.ratio <= COLLAPSE_RATIO)

    def weight(self, metric: str, point: ChangePoint) -> int:
        """How telling one significant change of a dependency is for its callers' trouble: STOPPED when it
        stopped serving (a series that stopped, traffic collapsed), STRONG for a rise of x2 or more, WEAK for a
        x1.5-2 rise (noise can do that), NOT_FELT when it got faster or lighter, or when an error ratio stays
        under ERROR_RATIO_FLOOR either side of the change (0.007 % -> 0.012 % is noise of a near-zero ratio)."""
        if self.collapsed(metric, point):
            return STOPPED
        if point.ratio <= 1 or (self.role_of(metric) == "errors" and _tiny_ratio(point)):
            return NOT_FELT
        return STRONG if point.strength >= STRONG_STRENGTH else WEAK

    def felt_weight(self, service: str) -> int:
        """The most telling change of a service (NOT_FELT when it has none)."""
        health = self.health.get(service)
        return max((self.weight(m, p) for m, p in health.changes()), default=NOT_FELT) if health else NOT_FELT

    def felt(self, service: str) -> bool:
        """Whether a dependency changed the way its callers feel: slower, more errors, or it stopped serving
        (a dependency that got faster, or a near-zero error ratio that wobbled, is not it)."""
        return self.felt_weight(service) > NOT_FELT

    def top_signature(self, service: str) -> LogSignature | None:
        found = self.signatures.get(service) or []
        return found[0] if found else None


def _tiny_ratio(point: ChangePoint) -> bool:
    """Whether a change of a ratio in % stays under ERROR_RATIO_FLOOR on both sides."""
    if point.unit != "%" or point.after is None:
        return False
    return point.before / 100 < ERROR_RATIO_FLOOR and point.after / 100 < ERROR_RATIO_FLOOR


def describe_change(service: str, metric: str, point: ChangePoint, recovery: Recovery | None = None) -> str:
    """A level shift ("went from A to B at HH:MM") or a spike (its level before, its peak, where it came back)."""
    label = metric.replace("_", " ")  # the catalogue's own name, as the observation shows it
    # only the factor the tool printed: a number computed here would be one no observation backs
    factor = f", {point.factor}" if point.factor and point.ratio >= 1 else ""
    if point.after is None:
        unsure = " (whether the service or the metrics collection stopped is unknown)" * (point.cause == UNKNOWN)
        return (
            f"{service} {label} stopped at {point.at:%H:%M} UTC: no samples since (last {point.before_text}), "
            f"so no requests were measured{unsure}"
        )
    if not point.spike:
        before, after = point.before_text, point.after_text
        return f"{service} {label} went from {before} to {after} at {point.at:%H:%M} UTC{factor}"
    back = f"; it recovered to {recovery.level} by {recovery.at:%H:%M} UTC" if recovery else ", then came back"
    return (
        f"{service} {label} spiked at {point.at:%H:%M} UTC from {point.before_text} (its level before the spike) "
        f"to a peak of {point.after_text}{factor}{back}"
    )
