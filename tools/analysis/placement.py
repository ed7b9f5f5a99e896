"""Where a changed service sits in an incident: the first to degrade, one that degraded too, or what every degraded
service depends on. A change there explains the symptom better than one in a service the trouble never reached, and
better than the mere fact that it is the service somebody asked about.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tools.analysis.reasons import Reason


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
