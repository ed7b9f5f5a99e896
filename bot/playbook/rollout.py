"""Partial rollouts: a deploy that reached some pods only, read per version.

A canary on 1 pod of 8 moves the service-wide error rate by an eighth of its own: the whole barely changes, the pod
went from nothing to failing half its requests. So for each deploy suspect whose service degraded, the degraded golden
signal is read per version (query_metrics by="version"); when the deployed version's pods moved far more than every
other version's, the deploy reached only part of the fleet, and that part is where the symptom lives: the suspect is
weighed up and the answer says it was a canary.
"""

from __future__ import annotations

from datetime import timedelta

from bot.playbook.findings import Findings, Suspect
from bot.playbook.probes import ProbeRun, iso_from_moment
from tools.analysis.reasons import Reason
from tools.metrics.views import PartMove
from tools.results import breakdown_of

APART = 3.0  # the deployed version's level at least this many times every other version's
# Read from this long after the deploy on: by then a full rollout has replaced the older pods, whose series end, so
# only a version still serving beside the deployed one is compared with it.
SETTLED = timedelta(minutes=5)
CANARY_POINTS = 3  # the symptom lives where the deploy went: as telling as a log line naming the change
_SIGNALS = ("errors", "latency")
CANARY_WORDS = "a canary:"  # how the reason begins (is_partial_rollout reads it back)


def weigh_partial_rollouts(run: ProbeRun, findings: Findings) -> None:
    """+CANARY_POINTS for a deploy suspect whose version alone degraded among the service's versions."""
    if "query_metrics" not in run.tools:
        return
    weighed = False
    for suspect in findings.suspects:
        metric = _degraded_signal(findings, suspect)
        if suspect.deploy is None or metric is None:
            continue
        others = _apart(run, suspect, metric)
        if others:
            version = suspect.deploy.version
            why = (
                f"{CANARY_WORDS} only the pods on {version} degraded in {metric}, the pods on {', '.join(others[:3])} "
                "stayed level, so the deploy reached part of the fleet and the symptom lives there"
            )
            suspect.add([Reason(CANARY_POINTS, why)])
            weighed = True
    if weighed:
        findings.suspects.sort(key=lambda s: -s.score)


def _degraded_signal(findings: Findings, suspect: Suspect) -> str | None:
    """The suspect service's golden signal that rose (errors first), or None."""
    health = findings.health.get(suspect.service)
    for role in _SIGNALS:
        metric = findings.roles.get(role)
        point = health.changed(metric) if health is not None and metric else None
        if metric and point is not None and point.ratio > 1:
            return metric
    return None


def _apart(run: ProbeRun, suspect: Suspect, metric: str) -> list[str]:
    """The other versions, when the deployed version's level stands APART above every one of them; [] otherwise."""
    deploy = suspect.deploy
    if deploy is None:
        return []
    start = deploy.at + SETTLED
    if run.window.end - start < SETTLED:
        return []
    thought = (
        f"{suspect.service} {deploy.version} may have reached only some pods (a canary): reading its {metric} per "
        f"version since {start:%H:%M} UTC, when a full rollout has replaced every older pod, since a part of the "
        "fleet that fails moves the whole only a little."
    )
    span = f"{iso_from_moment(start)}/{iso_from_moment(run.window.end)}"
    args = {"service": suspect.service, "metric": metric, "range": span, "by": "version"}
    step = run.probe(thought, "query_metrics", args)
    found = breakdown_of(step) if step is not None else None
    parts = {p.value: p for p in found.parts} if found is not None else {}
    mine = parts.pop(deploy.version, None)
    if mine is None or not parts or not all(_stands_apart(mine, p) for p in parts.values()):
        return []
    return sorted(parts)


def _stands_apart(mine: PartMove, other: PartMove) -> bool:
    return mine.recent > 0 and mine.recent >= APART * max(other.recent, 0.0) and other.recent < mine.recent


def is_partial_rollout(suspect: Suspect) -> bool:
    """Whether the suspect was found to be a deploy that reached part of the fleet."""
    return any(why.startswith(CANARY_WORDS) for why in suspect.why)
