"""The playbook's probes of the optional toolsets: the pods of the service the cause points at (Kubernetes), the
nodes that went away under several services at once (Kubernetes events), and the runbook section that documents the
failure (runbooks). Each runs only when its tool is configured.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta

from bot.playbook.evidence import log_lines_in
from bot.playbook.findings import Findings, NodeLoss
from bot.playbook.probes import ProbeRun, iso_from_moment
from tools.kubernetes.objects import KubeEvent, PodList, pods_summary
from tools.results import events_of, logs_of, pods_of, runbooks_of, signatures_of

# Kubernetes' own reasons for a node that stopped answering or was taken away: what several services breaking in the
# same minute, with no deploy of theirs, most often comes down to.
NODE_REASONS = frozenset({"NodeNotReady", "TaintManagerEviction", "NodeMaintenance", "NodeUnreachable"})
NODES_AROUND = timedelta(minutes=10)
ZONE_LOGS_AFTER = timedelta(minutes=5)
# A pod stopped by the kubelet or evicted: with no rollout, several services' pods stopped at once is a node taken out.
STOP_REASONS = frozenset({"Killing", "Evicted", "Preempting"})
STOPPED_WITHIN = timedelta(minutes=2)
STOPPED_TOGETHER_MIN = 3  # services: two can be a coincidence of restarts
OPERATION_QUERY = "drain OR drained OR cordon OR cordoned OR eviction OR evicted"
_STOPPING_RX = re.compile(r"\b(?:drain|drained|draining|evict|evicted|eviction)\b", re.IGNORECASE)
# A cloud availability zone as logs name it: eu-central-1b (AWS), europe-west1-b (GCP).
_ZONE_RX = re.compile(r"\b(?:[a-z]{2}-[a-z]+-\d[a-z]|[a-z]+-[a-z]+\d-[a-z])\b")

_PLACEHOLDER = re.compile(r"<\w+>|\[[\w.$]+\]")  # a signature's <n>, <uuid> and [exception.Type] carry no words
_PUNCTUATION = ".,:;()'\"[]"


def check_pods(run: ProbeRun, findings: Findings) -> None:
    """The pods (when the Kubernetes toolset is on) of the service the cause points at: the deployed one, else the
    deepest changed dependency, else the one asked about. Restarts, waiting reasons, last terminations."""
    service = findings.deploy.service if findings.deploy else findings.origin or findings.service
    if "query_pods" not in run.tools or not service:
        return
    thought = (
        f"Reading {service}'s pods: restarts, CrashLoopBackOff or an OOMKilled termination "
        "would explain a change the metrics only show the effect of."
    )
    step = run.probe(thought, "query_pods", {"namespace": "", "service": service})
    pods = pods_of(step) if step is not None else None
    if pods is None:
        return
    findings.pod_service = service
    findings.pod_summary = pods_summary(pods)
    findings.pod_states = pod_states(pods)


def check_nodes(run: ProbeRun, findings: Findings, known: Sequence[str] = ()) -> None:
    """Did Kubernetes report the nodes under the degraded services going away at the onset? The pods' NodeNotReady
    and eviction events name the services hit; a zone named in the logs read so far places them. A node carries
    pods of several services, so its loss counts when it took pods of two or more `known` services (the topology's),
    one of them degraded: the walk may have surveyed only the one the question named."""
    first = findings.first_change(findings.service)
    degraded = [s for s in findings.health if findings.first_change(s) is not None]
    if "query_k8s_events" not in run.tools or first is None:
        return
    at = first[1]
    thought = (
        f"{len(degraded)} service(s) changed; a node or a zone that went away breaks several at once with no deploy "
        f"of theirs, so reading Kubernetes events around {at:%H:%M} UTC for nodes that stopped answering."
    )
    args = {"namespace": "", "start": iso_from_moment(at - NODES_AROUND), "end": iso_from_moment(at + NODES_AROUND)}
    step = run.probe(thought, "query_k8s_events", args)
    found = events_of(step) if step is not None else None
    events = found.events if found else ()
    everyone = list(dict.fromkeys([*degraded, *known]))
    lost = [e for e in events if e.reason in NODE_REASONS]
    services = _services_of(lost, everyone)
    operation = ""
    if len(services) < 2 or not set(services) & set(degraded):
        # no node reported gone: were pods of several services stopped together (a drain)? The stopped ones need
        # not be those that degraded (a store that lost its state is steady; its callers fail): then the operation
        # that stopped them must be on record
        lost = stopped_together(events)
        services = _services_of(lost, everyone)
        if len(services) < STOPPED_TOGETHER_MIN:
            return
        operation = _operation_logged(run, min(e.at for e in lost))
        if not operation and not set(services) & set(degraded):
            return
    examples = [sig.quoted for found_sigs in findings.signatures.values() for sig in found_sigs]
    zones = sorted({z for text in examples for z in _ZONE_RX.findall(text)})
    onset = min(e.at for e in lost)
    if not zones and not operation:
        zones = list(_zones_logged(run, onset) or _zones_of_pods(run, {e.object_name for e in lost}, onset))
    findings.node_loss = NodeLoss(
        at=onset,
        reasons=tuple(dict.fromkeys(e.reason for e in sorted(lost, key=lambda e: e.at))),
        services=tuple(services),
        zones=tuple(zones[:2]),
        operation=operation,
    )


def _zones_of_pods(run: ProbeRun, pods: set[str], at: datetime) -> tuple[str, ...]:
    """Where the lost pods ran, from their own lines before they went away (a line carries its pod's placement:
    pod, node and zone fields): the zone most of them were in; () when no line says."""
    if "query_logs" not in run.tools or not pods:
        return ()
    thought = (
        f"Kubernetes lost {len(pods)} pods at {at:%H:%M} UTC; their own lines before then say which nodes and zone "
        "they ran in: reading every service's lines of the minutes before."
    )
    args = {"service": "*", "start": iso_from_moment(at - NODES_AROUND), "end": iso_from_moment(at), "limit": 200}
    summary = run.read_logs(thought, args)
    entries = [line.entry for line in summary.newest] if summary is not None else []
    placed = [dict(e.fields) for e in entries]
    counted = Counter(f["zone"] for f in placed if f.get("pod") in pods and f.get("zone"))
    return tuple(zone for zone, _ in counted.most_common(1))


def _services_of(events: Sequence[KubeEvent], services: Sequence[str]) -> list[str]:
    """The services whose pods the events are about."""
    return sorted({s for s in services for e in events if e.object_name.startswith(f"{s}-")})


def stopped_together(events: Sequence[KubeEvent]) -> list[KubeEvent]:
    """Pods stopped within the same minute or two, of services that were not rolling out then: a rollout stops one
    service's pods, a node drained (or a node's pods evicted) stops every service's at once."""
    stopped = sorted((e for e in events if e.reason in STOP_REASONS and e.object_kind == "Pod"), key=lambda e: e.at)
    if not stopped:
        return []
    rolling = {e.object_name for e in events if e.reason == "ScalingReplicaSet"}
    first = stopped[0].at
    return [
        e
        for e in stopped
        if e.at - first <= STOPPED_WITHIN and not any(e.object_name.startswith(f"{r}-") for r in rolling)
    ]


def _operation_logged(run: ProbeRun, at: datetime) -> str:
    """The line, in any service's logs at any level, that records who drained, cordoned or evicted what; "" when
    none does (the answer then rests on the events alone)."""
    if "query_logs" not in run.tools:
        return ""
    thought = (
        f"Pods of several services were stopped together at {at:%H:%M} UTC with no rollout of theirs; looking in "
        "every service's logs, at any level, for the operation that did it (a drain, a cordon, an eviction)."
    )
    args = {
        "service": "*",
        "query": OPERATION_QUERY,
        "start": iso_from_moment(at - timedelta(minutes=2)),
        "end": iso_from_moment(at + timedelta(minutes=3)),
        "limit": 20,
    }
    step = run.probe(thought, "query_logs", args)
    lines = log_lines_in(step) if step is not None else []
    # a cordon only stops new pods landing; the drain or eviction is what stopped these
    stopping = [line for line in lines if _STOPPING_RX.search(line)]
    return (stopping or lines or [""])[0]


def _zones_logged(run: ProbeRun, at: datetime) -> tuple[str, ...]:
    """The zones every service's errors (else warnings) name in the minutes after the nodes went away: a database
    that lost its primary, a client that lost a peer, say where. Errors first: the zone that failed is named in the
    failures, the one that took over in the notices that follow."""
    if "query_logs" not in run.tools:
        return ()
    window = {"start": iso_from_moment(at - timedelta(minutes=1)), "end": iso_from_moment(at + ZONE_LOGS_AFTER)}
    for level in ("ERROR", "WARN"):
        thought = (
            f"Nodes went away at {at:%H:%M} UTC under several services; reading every service's {level} lines "
            "since then for the zone they name."
        )
        step = run.probe(thought, "query_logs", {"service": "*", "level": level, "limit": 200, **window})
        summary = logs_of(step) if step is not None else None
        entries = [line.entry for line in summary.newest] if summary is not None else []
        entries += [sig.example for sig in signatures_of(step, level)] if step is not None else []
        # a line's own placement (its zone field) is where its pod runs, alive enough to log: not the zone that failed
        alive = {value for e in entries for key, value in e.fields if key == "zone"}
        counted = Counter(z for e in entries for z in _ZONE_RX.findall(e.message) if z not in alive)
        if counted:
            return tuple(zone for zone, _ in counted.most_common(2))
    return ()


def pod_states(pods: PodList) -> list[str]:
    """The telling states of the pods' containers, each once: how each last ended ("OOMKilled exit 137"), then
    what each waits on ("CrashLoopBackOff")."""
    containers = [c for pod in pods.pods for c in pod.containers]
    states = [
        f"{t.reason} exit {t.exit_code}"
        for c in containers
        if (t := c.last_terminated) is not None and t.exit_code is not None
    ]
    states += [c.waiting for c in containers if c.waiting]
    return list(dict.fromkeys(states))


def check_runbooks(run: ProbeRun, findings: Findings, question: str) -> None:
    """The runbook section that best matches the findings, else the question.

    The search takes a dozen terms (stopwords aside), most specific first: the pod states, the changed settings
    (not the image tag every deploy bumps), then the error signature's words.
    """
    if "search_runbooks" not in run.tools:
        return
    # the runbook of the service that was changed (its deploy) or that the question is about, not the origin's
    service = findings.deploy.service if findings.deploy else findings.service
    signature = findings.top_signature(service) or (
        findings.top_signature(findings.origin) if findings.origin else None
    )
    keys = [c.key.rsplit(".", 1)[-1] for c in findings.key_changes if not c.key.endswith("newTag")][:3]
    words = [*(s.split()[0] for s in findings.pod_states), *keys]
    if signature is not None:
        words += [w for w in _PLACEHOLDER.sub(" ", signature.text).split() if any(c.isalnum() for c in w)]
    query = " ".join(dict.fromkeys(w.strip(_PUNCTUATION) for w in words if w.strip(_PUNCTUATION))) or question
    found_any = signature or keys or findings.pod_states
    what = "the pod states, changed settings and error signature found" if found_any else "the question"
    thought = f"Looking for the runbook section that documents this failure, from {what}."
    step = run.probe(thought, "search_runbooks", {"query": query[:300], "service": service})
    found = runbooks_of(step) if step is not None else None
    findings.runbook = found.hits[0].citation if found and found.hits else ""
