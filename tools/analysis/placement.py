"""Where a changed service sits in an incident: the first to degrade, one that degraded too, the deepest one that
degraded below the asked service, or what every degraded service depends on; and another caller of a shared dependency
whose traffic surged at the onset. A change there explains the symptom better than one in a service the trouble never
reached, and better than the mere fact that it is the service somebody asked about.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from tools.analysis.reasons import Reason

SURGE_RATIO = 1.5  # a caller's traffic at least x1.5 counts as a surge
SURGE_BEFORE = timedelta(minutes=20)  # a surge this long before the onset, or up to SURGE_AFTER after it, counts
SURGE_AFTER = timedelta(minutes=5)


def place_reasons(service: str, target: str, degraded: Sequence[str]) -> list[Reason]:
    """Where the changed service sits in the incident: the first to degrade, one that degraded, or neither."""
    if degraded and service == degraded[0]:
        return [Reason(3, f"{service} degraded first")]
    if service in degraded:
        return [Reason(2, f"{service} degraded too")]
    if service == target:
        return [Reason(1, f"{service} is the service asked about")]
    return [Reason(0, f"{service} is within two hops of {target}")]


def origin_reasons(service: str, target: str, origin: str) -> list[Reason]:
    """A change in the deepest dependency that degraded, below the asked service: the services above it relay its
    errors and timeouts, so the trouble starts where it was changed (a tie with the asked service's own change goes
    to it)."""
    if not origin or service != origin or service == target:
        return []
    return [Reason(1, f"{service} is the deepest service that degraded: the services above it relay its failures")]


def downstream_of(topology: Mapping[str, Sequence[str]], service: str) -> set[str]:
    """Every service `service` depends on, directly or through others."""
    found: set[str] = set()
    frontier = [service]
    while frontier:
        frontier = [c for s in frontier for c in topology.get(s, ()) if c not in found]
        found.update(frontier)
    return found


def shared_dependency_reasons(
    topology: Mapping[str, Sequence[str]], service: str, degraded: Sequence[str]
) -> list[Reason]:
    """A change in what every degraded service depends on explains them all at once; one in a single caller does
    not explain its siblings."""
    others = [s for s in degraded if s != service]
    if len(others) < 2 or not all(service in downstream_of(topology, s) for s in others):
        return []
    return [Reason(2, f"every service that degraded ({', '.join(others[:4])}) depends on {service}")]


def is_surge(ratio: float, at: datetime, onset: datetime) -> bool:
    """A caller's traffic change is a surge that can explain the onset: big enough, and just before it."""
    return ratio >= SURGE_RATIO and onset - SURGE_BEFORE <= at <= onset + SURGE_AFTER


def surge_reasons(caller: str, dependency: str, target: str, change: str) -> list[Reason]:
    """`change` says what the caller's traffic did, in the words the metric tool printed."""
    return [
        Reason(2, change),
        Reason(3, f"{caller} shares {dependency} with {target}, and {dependency} degraded at the onset"),
    ]
