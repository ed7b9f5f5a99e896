"""Which services a model-free diagnosis looks at: the ones it knows of, the entry service when the question
names none (a scan of every service's golden signals, the changed one closest to users first), and the path down
the dependencies that changed too, to the deepest (the origin). bot/playbook/diagnosis.py checks each of them.
A dependency changed when it got slower, failed more, or stopped serving: its traffic collapsed or its series
stopped (no samples), which is how a crashlooping dependency or a consumer that stopped consuming looks. When
several changed, the walk follows the most telling change (a stop over a x2 rise over a x1.5-2 wobble; a near-zero
error ratio that wobbled does not count), the earliest of that kind first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from bot.playbook.evidence import service_from_text
from bot.playbook.findings import GOLDEN_ROLES, STRONG, Findings, ServiceHealth
from bot.playbook.probes import ProbeRun
from tools.results import services_of

MAX_DOWNSTREAM_DEPTH = 3
MAX_SCANNED_SERVICES = 20  # no service named: scan this many (3 queries each), the ones users call first
DOWNSTREAM_ROLES = ("latency", "errors")  # what a caller feels of a dependency (its traffic when they look steady)


def known_services(run: ProbeRun, text: str, topology: Mapping[str, Sequence[str]]) -> list[str]:
    """The topology's services; when the question names none of them, also those list_services reports."""
    services = list(dict.fromkeys([*topology, *(d for ds in topology.values() for d in ds)]))
    if (services and service_from_text(text, services)) or "list_services" not in run.tools:
        return services
    thought = "The question names no configured service; listing the services Prometheus holds metrics for."
    step = run.probe(thought, "list_services", {})
    return list(dict.fromkeys([*services, *(services_of(step) if step is not None else ())]))


def entry_service(
    run: ProbeRun,
    findings: Findings,
    services: Sequence[str],
    topology: Mapping[str, Sequence[str]],
    why: str = "The question names no service",
    *,
    chosen: bool = False,
) -> str | None:
    """No service named: scan the services' golden signals; start from the changed one closest to users.

    Users feel the most upstream symptom; the dependency walk then goes down to where it started. Among
    services no other changed service calls, the one that changed most wins. `chosen`: the services were picked for
    this scan (several named, or the neighbours of a steady asked service), so None when none changed.
    """
    called_at_all = {d for ds in topology.values() for d in ds}
    scanned = sorted(services, key=lambda s: s in called_at_all)[:MAX_SCANNED_SERVICES]  # entry points first
    if len(scanned) < len(services) and not chosen:
        findings.unknowns.append(
            f"no service was named, so {len(scanned)} of {len(services)} services were "
            "scanned (the ones nothing else calls first); name the service to check another"
        )
    metrics = [findings.roles[role] for role in GOLDEN_ROLES if role in findings.roles]
    for service in scanned:
        health = findings.health.setdefault(service, ServiceHealth(service))
        for metric in metrics:
            run.read_metric(f"{why}; scanning {service}'s {metric}.", health, metric)
    changed = {h.service for h in findings.health.values() if h.changes()}
    called = {d for caller in changed for d in topology.get(caller, ())}
    ranked = sorted(changed, key=lambda s: (s in called, -findings.health[s].strength))
    if chosen:  # the services were chosen for the scan (named, or the asked one's neighbours): no note on the choice
        return ranked[0] if ranked else None
    known = ", ".join(services[:8]) + (", …" if len(services) > 8 else "")
    if ranked:  # the scan chose the service: say so, the user may mean another
        findings.unknowns.append(
            f"whether this is the service you meant: the question names none I know ({known}), "
            f"so this is what a scan found; name one to check it"
        )
        return ranked[0]
    findings.unknowns.append(
        f"the question names no service I know ({known}) and none of them shows a change "
        "point; name the service to check it"
    )
    return None


def follow_downstream(
    run: ProbeRun, findings: Findings, topology: Mapping[str, Sequence[str]], service: str
) -> list[str]:
    """Walk down the dependencies that changed too: the path below `service`, deepest (the origin) last."""
    path: list[str] = []
    current, seen = service, {service}
    for _ in range(MAX_DOWNSTREAM_DEPTH):
        changed = []
        for downstream in topology.get(current, ()):
            if downstream in seen:
                continue
            seen.add(downstream)
            if _check_dependency(run, findings, current, downstream):
                changed.append(findings.health[downstream])
        if not changed:
            break
        current = min(changed, key=lambda h: _walk_rank(findings, h)).service
        path.append(current)
    return path


def _walk_rank(findings: Findings, health: ServiceHealth) -> tuple[int, datetime, float]:
    """Which changed dependency to follow (smallest first): the most telling change, then the earliest change of
    that kind, then the biggest. Noise can move a healthy dependency x1.5 a little before the real origin stops."""
    weighed = [(findings.weight(metric, point), point.at) for metric, point in health.changes()]
    top = max(weight for weight, _ in weighed)
    return -top, min(at for weight, at in weighed if weight == top), -health.strength


def _check_dependency(run: ProbeRun, findings: Findings, caller: str, downstream: str) -> bool:
    """Whether `downstream` changed the way `caller` feels it: its latency and errors first; when they show no rise
    and no stop, or only a weak one, its traffic, since a dependency that stopped serving shows mostly there (to ~0,
    or no samples) while the few requests it still gets make its latency and errors noisy."""
    health = findings.health.setdefault(downstream, ServiceHealth(downstream))
    for role in DOWNSTREAM_ROLES:
        metric = findings.roles.get(role)
        if metric is not None and metric not in health.readings:
            run.read_metric(f"{caller} calls {downstream}; checking its {metric}.", health, metric)
    traffic = findings.roles.get("traffic")
    if findings.felt_weight(downstream) >= STRONG or traffic is None or traffic in health.readings:
        return findings.felt(downstream)
    seen = "only a small rise" if findings.felt(downstream) else "no rise"
    thought = (
        f"{downstream}'s latency and errors show {seen}; checking its {traffic}: a dependency that stopped "
        f"serving (pods down, a consumer that stopped consuming) shows it as traffic collapsing, while "
        f"{caller} sees the errors."
    )
    run.read_metric(thought, health, traffic)
    return findings.felt(downstream)
