"""FakeKubeAPI: a Kubernetes API server stand-in over real HTTP, speaking the real JSON, used via a real kubeconfig.

It serves the read paths opsbot uses (pods, events, deployments, replicasets under /api/v1 and /apis/apps/v1),
filters by `labelSelector` (equality terms) and `limit` (with a `continue` token when more exist), requires the
kubeconfig's bearer token (401 otherwise), answers 403 Forbidden with a real Status object for namespaces the
"Role" does not cover, 404 NotFound for unknown objects, and can be told to fail (429 + Retry-After, 500) or be slow.
The object builders (`pod`, `event`, `deployment`, `replicaset`) write the same JSON the API server returns.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

TOKEN = "fake-serviceaccount-token"
_PATHS = {
    ("api/v1", "pods"): ("PodList", "v1"),
    ("api/v1", "events"): ("EventList", "v1"),
    ("apis/apps/v1", "deployments"): ("DeploymentList", "apps/v1"),
    ("apis/apps/v1", "replicasets"): ("ReplicaSetList", "apps/v1"),
}


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def status_object(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


@dataclass
class _Failure:
    status: int
    times: int
    retry_after: int | None = None


@dataclass
class FakeKubeAPI:
    """Objects by (namespace, resource); `forbidden` namespaces answer 403 like an RBAC denial."""

    objects: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    forbidden: set[str] = field(default_factory=set)
    delay_s: float = 0.0
    requests: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._failures: list[_Failure] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._server.block_on_close = False
        threading.Thread(target=self._server.serve_forever, daemon=True, name="fake-kube").start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def add(self, namespace: str, resource: str, *items: dict[str, Any]) -> None:
        self.objects.setdefault((namespace, resource), []).extend(items)

    def fail(self, status: int, *, times: int = 1, retry_after: int | None = None) -> None:
        """Answer the next `times` requests with `status` (a Status object body)."""
        self._failures.append(_Failure(status, times, retry_after))

    def write_kubeconfig(self, path: Path, *, token: str = TOKEN, namespace: str = "default") -> Path:
        """A real kubeconfig (JSON is valid YAML) whose current context points at this server."""
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "opsbot", "user": {"token": token}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "opsbot", "namespace": namespace}}],
        }
        path.write_text(json.dumps(config))
        return path

    def answer(self, method: str, raw_path: str, auth: str) -> tuple[int, dict[str, Any], dict[str, str]]:
        """(status, JSON body, headers) for one request."""
        self.requests.append(f"{method} {raw_path}")
        if self.delay_s:
            time.sleep(self.delay_s)
        if auth != f"Bearer {TOKEN}":
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
        for (group, resource), (kind, version) in _PATHS.items():
            head = f"{group}/namespaces/"
            if not path.startswith(head):
                continue
            ns, _, rest = path[len(head):].partition("/")
            plural, _, name = rest.partition("/")
            if plural != resource:
                continue
            api_group = "apps" if group.startswith("apis/apps") else ""
            if ns in self.forbidden:
                user, verb = "system:serviceaccount:ops:opsbot", "get" if name else "list"
                return 403, status_object(403, "Forbidden", f'{resource} is forbidden: User "{user}" cannot {verb} '
                                          f'resource "{resource}" in API group "{api_group}" in the namespace "{ns}"')
            items = self.objects.get((ns, resource), [])
            if name:
                found = [i for i in items if i["metadata"]["name"] == name]
                kind_name = f"{resource}.{api_group}" if api_group else resource
                return (200, found[0]) if found else (404, status_object(404, "NotFound",
                                                                         f'{kind_name} "{name}" not found'))
            return 200, _listed(kind, version, items, query)
        return 404, status_object(404, "NotFound", "the server could not find the requested resource")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status, body, headers = fake.answer("GET", self.path, self.headers.get("Authorization", ""))
                payload = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        return Handler


def _listed(kind: str, version: str, items: list[dict[str, Any]], query: dict[str, list[str]]) -> dict[str, Any]:
    selector = query.get("labelSelector", [""])[0]
    wanted = dict(term.split("=", 1) for term in selector.split(",") if "=" in term)
    matched = [i for i in items if all(i["metadata"].get("labels", {}).get(k) == v for k, v in wanted.items())]
    limit = int(query.get("limit", ["0"])[0] or 0)
    metadata: dict[str, Any] = {"resourceVersion": "1000"}
    if limit and len(matched) > limit:
        matched, metadata["continue"] = matched[:limit], "fake-continue-token"
    return {"kind": kind, "apiVersion": version, "metadata": metadata, "items": matched}


def container_status(name: str, *, ready: bool = True, restarts: int = 0, waiting: str = "",
                     waiting_message: str = "", last_reason: str = "", last_exit: int = 0,
                     last_finished: datetime | None = None, image: str = "app:1") -> dict[str, Any]:
    """A containerStatuses entry; `waiting="CrashLoopBackOff"`, `last_reason="OOMKilled"` as a kubelet reports."""
    state: dict[str, Any] = {"waiting": {"reason": waiting, "message": waiting_message}} if waiting else {
        "running": {"startedAt": "2026-01-01T00:00:00Z"}}
    last: dict[str, Any] = {}
    if last_reason:
        finished = iso(last_finished) if last_finished else "2026-01-01T00:00:00Z"
        last = {"terminated": {"reason": last_reason, "exitCode": last_exit, "startedAt": finished,
                               "finishedAt": finished}}
    return {"name": name, "ready": ready, "restartCount": restarts, "image": image, "imageID": "",
            "state": state, "lastState": last}


def pod(name: str, labels: dict[str, str], statuses: list[dict[str, Any]], *, phase: str = "Running",
        node: str = "node-1", namespace: str = "default") -> dict[str, Any]:
    containers = [{"name": s["name"], "image": s["image"]} for s in statuses]
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels, "uid": f"uid-{name}"},
            "spec": {"containers": containers, "nodeName": node},
            "status": {"phase": phase, "containerStatuses": statuses}}


def event(name: str, obj_kind: str, obj_name: str, reason: str, message: str, at: datetime, *,
          type_: str = "Warning", count: int = 1, namespace: str = "default") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace},
            "involvedObject": {"kind": obj_kind, "name": obj_name, "namespace": namespace},
            "reason": reason, "message": message, "type": type_, "count": count,
            "firstTimestamp": iso(at), "lastTimestamp": iso(at)}


def deployment(name: str, labels: dict[str, str], *, namespace: str = "default", revision: int = 1) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels,
                         "annotations": {"deployment.kubernetes.io/revision": str(revision)}},
            "spec": {"selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {"containers": []}}}}


def replicaset(deployment_name: str, revision: int, labels: dict[str, str], containers: list[dict[str, Any]],
               created: datetime, *, change_cause: str = "", replicas: int = 0, ready: int = 0,
               namespace: str = "default") -> dict[str, Any]:
    """A ReplicaSet owned by the Deployment; `containers` are pod-spec containers (name, image, env, args...)."""
    annotations = {"deployment.kubernetes.io/revision": str(revision)}
    if change_cause:
        annotations["kubernetes.io/change-cause"] = change_cause
    name = f"{deployment_name}-{revision:x}{'abcdef'[revision % 6]}5d9c"
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels, "annotations": annotations,
                         "creationTimestamp": iso(created),
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment_name,
                                              "uid": f"uid-{deployment_name}", "controller": True}]},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {"containers": containers}}},
            "status": {"replicas": replicas, "readyReplicas": ready}}
