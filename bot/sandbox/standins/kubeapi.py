"""FakeKubeAPI: a Kubernetes API server stand-in over real HTTP, speaking the real JSON, used via a real kubeconfig.

It serves the read paths opsbot uses (pods, events, deployments, replicasets under /api/v1 and /apis/apps/v1,
horizontalpodautoscalers under /apis/autoscaling/v2, and the cluster-scoped /api/v1/nodes),
filters by `labelSelector` (equality terms) and `limit` (with a `continue` token when more exist), requires the
kubeconfig's bearer token (401 otherwise), answers 403 Forbidden with a real Status object for namespaces the
"Role" does not cover, 404 NotFound for unknown objects, and can be told to fail (429 + Retry-After, 500) or be slow.
The tests run it in-process; the sandbox serves a scenario's cluster from a JSON file (bot/sandbox/cluster/objects.py
writes it, bot/sandbox/standins/launch.py serves it).
The objects themselves come from bot/sandbox/standins/kubeobjects.py.
"""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.sandbox.standins.kubeobjects import status_object
from bot.sandbox.standins.server import HttpStandIn, Reply

TOKEN = "fake-serviceaccount-token"
_PATHS = {
    ("api/v1", "pods"): ("PodList", "v1"),
    ("api/v1", "events"): ("EventList", "v1"),
    ("apis/apps/v1", "deployments"): ("DeploymentList", "apps/v1"),
    ("apis/apps/v1", "replicasets"): ("ReplicaSetList", "apps/v1"),
    ("apis/autoscaling/v2", "horizontalpodautoscalers"): ("HorizontalPodAutoscalerList", "autoscaling/v2"),
}
CLUSTER_SCOPED = "api/v1/nodes"  # nodes belong to no namespace; they are stored under namespace ""


def write_kubeconfig(path: Path, server: str, *, token: str = TOKEN, namespace: str = "default") -> Path:
    """A real kubeconfig (JSON is valid YAML) whose current context points at `server` with a bearer token."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "fake",
        "clusters": [{"name": "fake", "cluster": {"server": server}}],
        "users": [{"name": "opsbot", "user": {"token": token}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "opsbot", "namespace": namespace}}],
    }
    path.write_text(json.dumps(config))
    return path


@dataclass
class _Failure:
    status: int
    times: int
    retry_after: int | None = None


@dataclass
class FakeKubeAPI(HttpStandIn):
    """Objects by (namespace, resource); `forbidden` namespaces answer 403 like an RBAC denial."""

    objects: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    forbidden: set[str] = field(default_factory=set)
    delay_s: float = 0.0
    requests: list[str] = field(default_factory=list)
    port: int = 0  # 0: a free port
    token: str = TOKEN

    thread_name = "fake-kube"

    def __post_init__(self) -> None:
        self._failures: list[_Failure] = []
        self.serve(self.port)

    @classmethod
    def from_file(cls, path: Path, *, port: int = 0, token: str = TOKEN) -> FakeKubeAPI:
        """Serve the objects a sandbox wrote (bot/sandbox/cluster/objects.py: {"objects": [[ns, resource, items]]})."""
        raw = json.loads(path.read_text(encoding="utf-8"))
        objects = {(ns, resource): list(items) for ns, resource, items in raw["objects"]}
        return cls(objects=objects, port=port, token=token)

    def add(self, namespace: str, resource: str, *items: dict[str, Any]) -> None:
        self.objects.setdefault((namespace, resource), []).extend(items)

    def fail(self, status: int, *, times: int = 1, retry_after: int | None = None) -> None:
        """Answer the next `times` requests with `status` (a Status object body)."""
        self._failures.append(_Failure(status, times, retry_after))

    def write_kubeconfig(self, path: Path, *, token: str = "", namespace: str = "default") -> Path:
        """A real kubeconfig (JSON is valid YAML) whose current context points at this server."""
        return write_kubeconfig(path, self.url, token=token or self.token, namespace=namespace)

    def reply(self, path: str, headers: Mapping[str, str]) -> Reply:
        if path in ("/readyz", "/healthz", "/livez"):  # anonymous, as the real API server allows them
            return Reply(200, "ok")
        status, body, extra = self.answer("GET", path, headers.get("authorization", ""))
        return Reply(status, body, extra)

    def answer(self, method: str, raw_path: str, auth: str) -> tuple[int, dict[str, Any], dict[str, str]]:
        """(status, JSON body, headers) for one request."""
        self.requests.append(f"{method} {raw_path}")
        if self.delay_s:
            time.sleep(self.delay_s)
        if auth != f"Bearer {self.token}":
            return 401, status_object(401, "Unauthorized", "Unauthorized"), {}
        if self._failures:
            failure = self._failures[0]
            failure.times -= 1
            if failure.times <= 0:
                self._failures.pop(0)
            headers = {"Retry-After": str(failure.retry_after)} if failure.retry_after else {}
            reason = "TooManyRequests" if failure.status == 429 else "InternalError"
            return failure.status, status_object(failure.status, reason, f"fake {reason.lower()}"), headers
        url = urllib.parse.urlsplit(raw_path)
        return (*self._route(url.path.strip("/"), urllib.parse.parse_qs(url.query)), {})

    def _route(self, path: str, query: dict[str, list[str]]) -> tuple[int, dict[str, Any]]:
        if path == CLUSTER_SCOPED or path.startswith(CLUSTER_SCOPED + "/"):
            return self._found("", "nodes", "", path.removeprefix(CLUSTER_SCOPED).strip("/"), ("NodeList", "v1"), query)
        for (group, resource), (kind, version) in _PATHS.items():
            head = f"{group}/namespaces/"
            if not path.startswith(head):
                continue
            ns, _, rest = path[len(head) :].partition("/")
            plural, _, name = rest.partition("/")
            if plural != resource:
                continue
            api_group = group.split("/")[1] if group.startswith("apis/") else ""
            if ns in self.forbidden:
                user, verb = "system:serviceaccount:ops:opsbot", "get" if name else "list"
                return 403, status_object(
                    403,
                    "Forbidden",
                    f'{resource} is forbidden: User "{user}" cannot {verb} '
                    f'resource "{resource}" in API group "{api_group}" in the namespace "{ns}"',
                )
            return self._found(ns, resource, api_group, name, (kind, version), query)
        return 404, status_object(404, "NotFound", "the server could not find the requested resource")

    def _found(
        self, ns: str, resource: str, api_group: str, name: str, kind: tuple[str, str], query: dict[str, list[str]]
    ) -> tuple[int, dict[str, Any]]:
        """One object by name (404 when absent), or the list filtered by the query."""
        items = self.objects.get((ns, resource), [])
        if not name:
            return 200, _listed(kind[0], kind[1], items, query)
        found = [i for i in items if i["metadata"]["name"] == name]
        kind_name = f"{resource}.{api_group}" if api_group else resource
        return (200, found[0]) if found else (404, status_object(404, "NotFound", f'{kind_name} "{name}" not found'))


def _listed(kind: str, version: str, items: list[dict[str, Any]], query: dict[str, list[str]]) -> dict[str, Any]:
    selector = query.get("labelSelector", [""])[0]
    wanted = dict(term.split("=", 1) for term in selector.split(",") if "=" in term)
    matched = [i for i in items if all(i["metadata"].get("labels", {}).get(k) == v for k, v in wanted.items())]
    limit = int(query.get("limit", ["0"])[0] or 0)
    metadata: dict[str, Any] = {"resourceVersion": "1000"}
    if limit and len(matched) > limit:
        matched, metadata["continue"] = matched[:limit], "fake-continue-token"
    return {"kind": kind, "apiVersion": version, "metadata": metadata, "items": matched}
