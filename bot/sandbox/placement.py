"""Where a service's pods run, minute by minute: each pod's name, version, node, zone and lifetime.

One roster feeds the per-pod series, the log lines pinned to pods and the Kubernetes stand-in, so a pod's name,
version and node agree in all three. A pod is one slot of the Deployment (0..replicas-1) in one ReplicaSet
revision on one node; a new pod takes the slot when a rollout reaches it, when its node is drained or evicted
(NotReady past the toleration), or when the autoscaler adds the slot again. Names follow Kubernetes:
`<deployment>-<replicaset hash>-<5 characters>`.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, replace

from bot.sandbox.cluster import Node
from bot.sandbox.deployrepo import baseline_deploys
from bot.sandbox.scenario import Scenario
from bot.sandbox.standins.kubeobjects import replicaset_name

PODS_WITHOUT_CLUSTER = 3  # a per-pod service's pods when neither it nor a [kubernetes] block says how many
_LETTERS = "bcdfghjklmnpqrstvwxz2456789"


@dataclass(frozen=True)
class Revision:
    """One ReplicaSet revision of a Deployment: a deploy, numbered from 1 in deploy order."""

    number: int
    version: str
    at_minutes: int
    pods: int | None = None  # a canary: only slots below this run it


@dataclass(frozen=True)
class Pod:
    """One pod over its lifetime: minutes [first, end) of the signals' index; unreachable in [lost, found)."""

    service: str
    slot: int
    name: str
    revision: int
    version: str
    node: str
    zone: str
    namespace: str
    first: int
    end: int
    lost: int | None = None  # from here its node is NotReady: the pod exists but nobody reaches or scrapes it...
    found: int | None = None  # ...until its node is back (None: it never came back while the pod lived)

    def alive(self, index: int) -> bool:
        return self.first <= index < self.end

    def reachable(self, index: int) -> bool:
        unreachable = self.lost is not None and self.lost <= index < (self.found or self.end)
        return self.alive(index) and not unreachable


def pod_suffix(service: str, slot: int, generation: int = 0) -> str:
    """A pod name's random-looking 5-character suffix, stable per service, slot and re-creation."""
    key = f"{service}/{slot}" if generation == 0 else f"{service}/{slot}/{generation}"
    number = zlib.crc32(key.encode())
    return "".join(_LETTERS[(number >> (5 * k)) % len(_LETTERS)] for k in range(5))


def pod_count(scenario: Scenario, service: str) -> int:
    """The service's pods: its own `replicas`, else its [[kubernetes.pods]] group's, else the block's default."""
    svc = scenario.service(service)
    if "replicas" in svc.signals:
        return int(svc.signals["replicas"])
    if scenario.kubernetes is not None:
        return scenario.kubernetes.group(service).replicas
    return PODS_WITHOUT_CLUSTER


def revisions(scenario: Scenario, service: str, until_minutes: int) -> list[Revision]:
    """The service's revisions up to `until_minutes` (relative to the incident), oldest first, as the deploy
    repository orders them; a stuck rollout (`on_new_version`) makes the newest a canary on the affected pods."""
    deploys = sorted([*baseline_deploys(scenario), *scenario.deploys], key=lambda d: d.at_minutes)
    mine = [d for d in deploys if d.service == service and d.at_minutes <= until_minutes]
    out = [Revision(i, d.version, d.at_minutes, d.pods) for i, d in enumerate(mine, start=1)]
    group = scenario.kubernetes.group(service) if scenario.kubernetes else None
    if out and group is not None and group.on_new_version and 0 < group.hit() < group.replicas:
        newest = out[-1]
        out[-1] = Revision(newest.number, newest.version, newest.at_minutes, group.hit())
    return out


def revision_at(history: list[Revision], slot: int, rel: int) -> Revision | None:
    """The revision slot `slot` runs at minute `rel`: the newest deploy that reached it (a canary reaches few)."""
    current = None
    for revision in history:
        if revision.at_minutes > rel:
            break
        if revision.pods is None or slot < revision.pods:
            current = revision
    return current


@dataclass
class _Slot:
    pod: Pod
    generation: int


def roster(scenario: Scenario, service: str, rels: list[int], replicas: list[int]) -> list[Pod]:
    """Every pod the service had over the minutes `rels` (relative to the incident), `replicas[i]` at a time."""
    history = revisions(scenario, service, rels[-1] if rels else 0)
    namespace, nodes = scenario.namespace_of(service), scenario.nodes
    live: dict[int, _Slot] = {}
    done: list[Pod] = []
    made: dict[tuple[int, int], int] = {}  # pods created per (slot, revision): a re-created pod gets a new name
    for index, rel in enumerate(rels):
        for slot in [s for s in live if s >= replicas[index]]:  # scaled down
            done.append(_ended(live.pop(slot).pod, index))
        for slot in range(replicas[index]):
            revision = revision_at(history, slot, rel)
            held = live.get(slot)
            stays = held is not None and not _node(nodes, held.pod.node).down_at(rel)
            node = _node(nodes, held.pod.node) if held is not None and stays else _place(nodes, slot, rel)
            if revision is None or node is None:
                continue
            if held and held.pod.revision == revision.number and held.pod.node == node.name:
                _mark_lost(live, slot, node, rel, index)
                continue
            if held:
                done.append(_ended(held.pod, index))
            generation = made.get((slot, revision.number), 0)
            made[(slot, revision.number)] = generation + 1
            name = f"{replicaset_name(service, revision.number)}-{pod_suffix(service, slot, generation)}"
            pod = Pod(service, slot, name, revision.number, revision.version, node.name, node.zone, namespace, index, 0)
            live[slot] = _Slot(pod, generation)
            _mark_lost(live, slot, node, rel, index)
    return done + [_ended(s.pod, len(rels)) for s in live.values()]


def pods_at(pods: list[Pod], index: int) -> list[Pod]:
    """The pods alive at minute `index`, by slot."""
    return sorted((p for p in pods if p.alive(index)), key=lambda p: p.slot)


def _ended(pod: Pod, index: int) -> Pod:
    return replace(pod, end=index)


def _mark_lost(live: dict[int, _Slot], slot: int, node: Node, rel: int, index: int) -> None:
    """Record when the pod's node stops answering (NotReady) and when it answers again."""
    held = live[slot]
    if node.unreachable_at(rel) and (held.pod.lost is None or held.pod.found is not None):
        live[slot] = _Slot(replace(held.pod, lost=index, found=None), held.generation)
    elif not node.unreachable_at(rel) and held.pod.lost is not None and held.pod.found is None:
        live[slot] = _Slot(replace(held.pod, found=index), held.generation)


def _node(nodes: tuple[Node, ...], name: str) -> Node:
    return next(n for n in nodes if n.name == name)


def _place(nodes: tuple[Node, ...], slot: int, rel: int) -> Node | None:
    """The slot's own node (slot i on node i mod n) when it can take pods, else the next one that can."""
    usable = [n for n in nodes if not n.down_at(rel)]
    if not usable:
        return None
    preferred = nodes[slot % len(nodes)]
    return preferred if preferred in usable else usable[slot % len(usable)]
