"""A reconnect storm: one pod of a caller restarted, and every client it held came back at once.

A broker, a gateway or a connection-holding proxy that loses a pod (OOMKilled, evicted, crashed) drops the sessions on
it; the clients reconnect together on their retry timers and re-send what they buffered. The service behind it then
takes a surge of traffic with no deploy and no change of its own: the surge arrived through the caller. So when the
asked service's traffic rose at the onset, each caller's traffic is read; a caller whose traffic rose at the same
moment and whose pods show a restart (a last termination, a restart count) is the suspect, weighed like any other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta

from bot.playbook.findings import Findings, ServiceHealth, Suspect
from bot.playbook.probes import ProbeRun
from bot.playbook.toolsetprobes import pod_states
from tools.analysis.placement import SURGE_RATIO
from tools.analysis.reasons import Reason
from tools.results import pods_of

AROUND = timedelta(minutes=15)  # the caller's surge within this of the asked service's


def check_reconnect_storm(
    run: ProbeRun, findings: Findings, topology: Mapping[str, Sequence[str]], target: str
) -> None:
    """Append a suspect for a caller of `target` that restarted a pod and surged into it at the onset."""
    traffic = findings.roles.get("traffic")
    health = findings.health.get(target)
    rise = health.changed(traffic) if health is not None and traffic else None
    if traffic is None or rise is None or rise.ratio < SURGE_RATIO or "query_pods" not in run.tools:
        return
    for caller in sorted(c for c, callees in topology.items() if target in callees):
        own = findings.health.setdefault(caller, ServiceHealth(caller))
        if traffic not in own.readings:
            thought = (
                f"{target}'s {traffic} rose at {rise.at:%H:%M} UTC with no change of its own needed: reading what "
                f"{caller}, which calls it, sent then."
            )
            run.read_metric(thought, own, traffic)
        surge = own.changed(traffic)
        if surge is None or surge.ratio < SURGE_RATIO or abs(surge.at - rise.at) > AROUND:
            continue
        restarted = _restarted(run, caller)
        if restarted:
            findings.suspects.append(_suspect(caller, target, restarted, own.describe(traffic, surge)))
            findings.suspects.sort(key=lambda s: -s.score)
            return


def _restarted(run: ProbeRun, caller: str) -> list[str]:
    """How the caller's pods last ended ("OOMKilled exit 137"), when any restarted; [] otherwise."""
    thought = (
        f"{caller}'s traffic into it surged too: a pod of {caller} that restarted drops every client on it, and they "
        "all reconnect at once. Reading its pods' restarts and last terminations."
    )
    step = run.probe(thought, "query_pods", {"namespace": "", "service": caller})
    pods = pods_of(step) if step is not None else None
    if pods is None or not any(p.restarts for p in pods.pods):
        return []
    return pod_states(pods) or ["a restart"]


def _suspect(caller: str, target: str, restarted: list[str], surge: str) -> Suspect:
    suspect = Suspect(
        f"a reconnect storm from {caller}: a pod of {caller} restarted ({', '.join(restarted)}) and its clients "
        f"reconnected at once, re-sending into {target}; no deploy caused this",
        caller,
    )
    suspect.add(
        [
            Reason(2, f"{surge}, at the onset"),
            Reason(3, f"{caller}'s pods show a restart ({', '.join(restarted)}) just before"),
            Reason(2, f"{caller} calls {target}: the surge arrived through it"),
        ]
    )
    return suspect
