"""One node misbehaving under several services: the new warnings and errors since the onset come from its pods alone.

A node can be at fault without going away: its clock drifts (tokens "not yet valid"), its disk or network degrades,
its kernel stalls. The services on it fail only on that node's pods, while their pods on other nodes stay quiet, so the
service-wide rates move a little and no deploy explains it. The lines since the onset are read per node (a line pinned
to its pod carries the pod's node); a node whose pods of two or more services log lines new since the onset, while no
other node's pods log more than a fraction of that, is the suspect, and what Kubernetes reported about it is quoted.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from bot.playbook.families.hypotheses import NodeFault
from bot.playbook.findings import Findings
from bot.playbook.probes import ProbeRun, iso_from_moment
from bot.playbook.rollout import is_partial_rollout
from tools.logs.summary import Signature
from tools.results import events_of, pods_of

MAX_NODES = 8  # one log read per node
MIN_SERVICES = 2  # one service's pods on one node is a canary or a bad pod, not a node
OTHERS_SHARE = 0.25  # every other node logs at most this fraction of the suspect node's new lines
BASELINE = timedelta(hours=1)
AFTER_ONSET = timedelta(minutes=30)
# Kubernetes records a node's events in "default" (a node has no namespace); "" is the toolset's own namespace.
NODE_EVENT_NAMESPACES = ("default", "")
EVENTS_AROUND = timedelta(minutes=30)  # the onset a user names is a few minutes off


def check_node_fault(run: ProbeRun, findings: Findings, said: datetime | None = None) -> None:
    """Read every node's new lines since the onset (the asked service's first change, else the time the user said:
    a node failing under a few pods may move no service-wide rate); record a node whose pods alone carry them."""
    first = findings.first_change(findings.service)
    onset = first[1] if first is not None else said
    if onset is None or findings.node_loss is not None or any(is_partial_rollout(s) for s in findings.suspects):
        return  # a canary's pod fails on its node too: the deploy that reached part of the fleet explains it
    if not all(t in run.tools for t in ("query_pods", "query_logs")):
        return
    placed = _placement(run)
    nodes = sorted({node for spread in placed.values() for node in spread})
    if len(nodes) < 2:  # one node carries everything: its lines say nothing about it
        return
    new = {node: _new_on(run, node, onset) for node in nodes[:MAX_NODES]}
    counts = {node: sum(s.count for s in found) for node, found in new.items()}
    node = max(counts, key=lambda n: counts[n])
    # a service whose pods all sit on that node (or that runs no pod here) is no witness: only one with quiet pods on
    # other nodes shows that the node, not the service, is at fault
    services = sorted({s.example.service for s in new[node] if len(placed.get(s.example.service, ())) > 1})
    others = max((c for n, c in counts.items() if n != node), default=0)
    if len(services) < MIN_SERVICES or others > OTHERS_SHARE * counts[node]:
        return
    line = max(new[node], key=lambda s: s.count).example.message
    findings.node_fault = NodeFault(node, tuple(services), line, _node_event(run, node, onset), onset)


def _placement(run: ProbeRun) -> dict[str, set[str]]:
    """service -> the nodes its pods run on, from every pod's name (`<service>-<replicaset>-<id>`) and node."""
    thought = (
        "Several services may fail only on one node's pods (a clock that drifted, a disk, a kernel): listing every "
        "pod's node to read the lines since the onset node by node."
    )
    step = run.probe(thought, "query_pods", {"namespace": "", "service": ""})
    pods = pods_of(step) if step is not None else None
    placed: dict[str, set[str]] = {}
    for pod in pods.pods if pods is not None else ():
        if pod.node:
            placed.setdefault(pod.name.rsplit("-", 2)[0], set()).add(pod.node)
    return placed


def _new_on(run: ProbeRun, node: str, onset: datetime) -> Sequence[Signature]:
    """The warning and error signatures of `node`'s pods that began after the onset and were absent the hour
    before."""
    thought = (
        f"Reading the warnings and errors of the pods on {node} that are new since the onset at {onset:%H:%M} UTC."
    )
    args = {
        "service": "*",
        "level": "ERROR,WARN",
        "start": iso_from_moment(onset - BASELINE),
        "end": iso_from_moment(min(onset + AFTER_ONSET, run.window.end)),
        "onset": iso_from_moment(onset),
        "where": f"node={node}",
    }
    summary = run.read_logs(thought, args)
    contrast = summary.onset if summary is not None else None
    return contrast.new.top if contrast is not None and contrast.new is not None else ()


def _node_event(run: ProbeRun, node: str, onset: datetime) -> str:
    """What Kubernetes reported about the node around the onset: "NTPProblem: <message>" ("" when nothing)."""
    if "query_k8s_events" not in run.tools:
        return ""
    thought = f"The new lines come from {node}'s pods alone: reading what Kubernetes reported about {node} then."
    span = {"start": iso_from_moment(onset - EVENTS_AROUND), "end": iso_from_moment(onset + EVENTS_AROUND)}
    for namespace in NODE_EVENT_NAMESPACES:
        step = run.probe(thought, "query_k8s_events", {"namespace": namespace, **span})
        found = events_of(step) if step is not None else None
        about = [e for e in (found.events if found else ()) if e.object_name == node and e.type == "Warning"]
        if about:
            return f"{about[0].reason}: {about[0].message}"
    return ""
