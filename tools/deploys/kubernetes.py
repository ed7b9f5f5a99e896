"""KubernetesDeploys: deploy records from the cluster itself, one per Deployment rollout revision.

A revision's ReplicaSet carries what rolled out: when (its creation time), the images, and the change-cause
annotation. Its "diff" compares the pod template with the previous revision's (images, env, args, resources).
A version is named `rev<N>` after the Deployment's revision number; its environment is the namespace.

What the objects say of the rollout itself: `kubectl rollout restart` stamps the template with
`kubectl.kubernetes.io/restartedAt` (a restart: same images, started then); `kubectl rollout undo` brings an old
ReplicaSet back under a new revision number and lists its old numbers in `deployment.kubernetes.io/revision-history`
(a rollback); the Deployment's `Progressing` condition with reason `NewReplicaSetAvailable` says when the current
revision finished rolling out. Older revisions' finish times are not kept by the API.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from kubernetes.client import ApiClient, AppsV1Api

from tools.deploys.query import DeployRead, ReadsDeploys
from tools.deploys.records import DeployDiff, DeployRecord
from tools.kubernetes.api import CHANGE_CAUSE, images_of, kube_request, revision_of, rollout_revisions

RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"  # set on the pod template by `kubectl rollout restart`
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"  # the old revisions of a ReplicaSet brought back


class KubernetesDeploys(ReadsDeploys):
    """A DeploySource over the Deployments of the allowed namespaces (a service is a Deployment's name)."""

    service_setting = "kubernetes.namespaces"

    def __init__(self, api: ApiClient, namespaces: list[str], *, timeout_s: float = 10.0) -> None:
        self.apps = AppsV1Api(api)
        self.namespaces = list(namespaces)
        self.timeout_s = timeout_s

    def describe(self) -> str:
        """Where the deploy records come from."""
        return f"Kubernetes Deployments in {', '.join(self.namespaces)}"

    def services(self) -> list[str]:
        """Every Deployment name in the allowed namespaces."""
        return sorted({name for name, _ in self._deployments()})

    def read(self, service: str | None, start: datetime, end: datetime) -> DeployRead:
        """Rollout revisions created in [start, end), newest first."""
        found = [r for name, ns in self._deployments() if service in (None, name) for r in self._records(name, ns)]
        return DeployRead(tuple(sorted((r for r in found if start <= r.at < end), key=lambda r: r.at, reverse=True)))

    def versions(self, service: str) -> list[str]:
        """`rev<N>`, newest first."""
        return [
            r.version for r in self.records(service, datetime(1970, 1, 1, tzinfo=UTC), datetime(9999, 1, 1, tzinfo=UTC))
        ]

    def diff(self, service: str, version: str, environments: Sequence[str] = ()) -> DeployDiff | None:
        """The pod-template change a revision rolled out, against the revision before it (in one of
        `environments`, the namespaces, first)."""
        wanted = {e.lower() for e in environments}
        places = sorted(self._deployments(), key=lambda d: d[1].lower() not in wanted)
        for name, ns in places:
            if name != service:
                continue
            revisions = rollout_revisions(self.apps, ns, name, self.timeout_s)
            for i, rs in enumerate(revisions):
                if f"rev{revision_of(rs)}" == version:
                    before = revisions[i + 1] if i + 1 < len(revisions) else None
                    return DeployDiff(_record(name, ns, rs, before), _template_diff(name, before, rs))
        return None

    def _deployments(self) -> list[tuple[str, str]]:
        """(name, namespace) of every Deployment in the allowed namespaces."""
        return [(str(d.metadata.name), ns) for ns in self.namespaces for d in self._listed(ns) if d.metadata]

    def _listed(self, ns: str) -> list[Any]:
        reply = kube_request(
            f"listing deployments in {ns}",
            lambda: self.apps.list_namespaced_deployment(ns, _request_timeout=self.timeout_s),
        )
        return list(reply.items or [])

    def _records(self, name: str, ns: str) -> list[DeployRecord]:
        revisions = rollout_revisions(self.apps, ns, name, self.timeout_s)
        records = [
            _record(name, ns, rs, revisions[i + 1] if i + 1 < len(revisions) else None)
            for i, rs in enumerate(revisions)
        ]
        if records:  # the current revision: started with its ReplicaSet, finished when the Deployment says so
            current = revisions[0]
            finish = self._finished(name, ns, current)
            records[0] = replace(records[0], started=current.metadata.creation_timestamp, finished=finish)
        return records

    def _finished(self, name: str, ns: str, current: Any) -> datetime | None:
        """When the current revision finished rolling out (the Deployment's Progressing condition), else None."""
        dep = kube_request(
            f"reading deployment {name} in {ns}",
            lambda: self.apps.read_namespaced_deployment(name, ns, _request_timeout=self.timeout_s),
        )
        for c in (dep.status.conditions if dep.status else None) or []:
            if (
                c.type == "Progressing"
                and c.reason == "NewReplicaSetAvailable"
                and current.metadata.name in (c.message or "")
            ):
                return c.last_update_time
        return None


def _record(name: str, namespace: str, rs: Any, before: Any | None) -> DeployRecord:
    cause = (rs.metadata.annotations or {}).get(CHANGE_CAUSE, "") or "(no change-cause recorded)"
    restarted = _restarted_at(rs)
    restart = restarted is not None and before is not None and restarted != _restarted_at(before)
    restart = restart and images_of(rs) == images_of(before)
    rollback = bool((rs.metadata.annotations or {}).get(REVISION_HISTORY))
    return DeployRecord(
        service=name,
        version=f"rev{revision_of(rs)}",
        at=rs.metadata.creation_timestamp,
        author="(not recorded)",
        summary=f"{cause}; images {images_of(rs)}",
        commit=rs.metadata.name,
        previous_version=f"rev{revision_of(before)}" if before is not None else "",
        files=(f"deployment/{name}",),
        environment=namespace,
        action="rollback" if rollback else "restart" if restart else "",
    )


def _restarted_at(rs: Any) -> str | None:
    template = rs.spec.template if rs.spec else None
    annotations = (template.metadata.annotations if template and template.metadata else None) or {}
    return annotations.get(RESTARTED_AT)


def _template_diff(name: str, before: Any | None, after: Any) -> str:
    """A unified diff of the two pod specs as sorted JSON lines (what `kubectl rollout history` would compare)."""
    old, new = _spec_lines(before), _spec_lines(after)
    lines = difflib.unified_diff(old, new, f"a/deployment/{name}", f"b/deployment/{name}", lineterm="", n=2)
    body = "\n".join(lines)
    return f"diff --git a/deployment/{name} b/deployment/{name}\n{body}" if body else ""


def _spec_lines(rs: Any | None) -> list[str]:
    if rs is None or rs.spec is None or rs.spec.template is None:
        return []
    spec = ApiClient().sanitize_for_serialization(rs.spec.template.spec)
    return json.dumps(spec, indent=1, sort_keys=True).splitlines()
