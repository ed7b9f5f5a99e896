"""FakeArgoCD: the part of Argo CD's API server that deploy records use, over real HTTP.

- `GET /api/v1/applications` (`{"items": [...]}`, optionally `?projects=`)
- `GET /api/v1/applications/{name}`: the Application with `spec` (project, source, destination) and `status`
  (`history` of successful syncs, oldest first as Argo CD keeps it; `operationState` of the last operation)

Bearer auth is checked on every request (Argo CD's "invalid session" 401 otherwise). An app that does not exist is a
403 "permission denied", as Argo CD answers to avoid telling which apps exist. Faults are scripted with `fail_next`.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from tests.fakes.restserver import FakeRestAPI, Reply

REPO_URL = "https://git.example.internal/platform/deploys.git"


class FakeArgoCD(FakeRestAPI):
    def __init__(self, token: str = "argocd-test-token") -> None:
        super().__init__(token)
        self.apps: dict[str, dict[str, Any]] = {}
        self.route("/api/v1/applications", self._list)
        self.route("/api/v1/applications/(?P<name>[^/]+)", self._get)

    def add_app(self, name: str, *, project: str, namespace: str, path: str, chart: str = "") -> None:
        source: dict[str, Any] = {"repoURL": REPO_URL, "targetRevision": "main"}
        source |= {"chart": chart} if chart else {"path": path}
        self.apps[name] = {
            "metadata": {"name": name, "namespace": "argocd"},
            "spec": {
                "project": project,
                "source": source,
                "destination": {"server": "https://kubernetes.default.svc", "namespace": namespace},
            },
            "status": {"history": [], "sync": {"status": "Synced"}, "health": {"status": "Healthy"}},
        }

    def sync(self, name: str, revision: str, at: datetime, who: str = "", started: datetime | None = None) -> None:
        """A successful sync to `revision` started at `started` (default: `at`'s minute) and finished at `at`
        (appended to the history, as Argo CD does)."""
        app = self.apps[name]
        history = app["status"]["history"]
        initiated = {"username": who} if who else {"automated": True}
        history.append(
            {
                "id": len(history),
                "revision": revision,
                "deployStartedAt": _iso(started or at.replace(second=0)),
                "deployedAt": _iso(at),
                "source": dict(app["spec"]["source"]),
                "initiatedBy": initiated,
            }
        )
        app["status"]["operationState"] = _operation("Succeeded", revision, at, initiated)
        app["status"]["sync"] = {"status": "Synced", "revision": revision}

    def rollback(self, name: str, history_id: int, at: datetime, who: str, started: datetime | None = None) -> None:
        """`argocd app rollback <name> <id>`: a sync to that history entry's revision, appended as a new entry."""
        revision = self.apps[name]["status"]["history"][history_id]["revision"]
        self.sync(name, revision, at, who, started)

    def fail_sync(self, name: str, revision: str, at: datetime, who: str = "") -> None:
        """A sync that failed: not in the history, only in the last operation's state."""
        initiated = {"username": who} if who else {"automated": True}
        self.apps[name]["status"]["operationState"] = _operation("Failed", revision, at, initiated)

    def unauthorized(self) -> Reply:
        message = "invalid session: token signature is invalid"
        return 401, {"error": message, "code": 16, "message": message}, {}

    def _list(self, m: re.Match[str], q: dict[str, str]) -> Reply:
        wanted = q.get("projects")
        items = [a for a in self.apps.values() if wanted in (None, a["spec"]["project"])]
        return 200, {"metadata": {"resourceVersion": "1"}, "items": items}, {}

    def _get(self, m: re.Match[str], q: dict[str, str]) -> Reply:
        app = self.apps.get(m["name"])
        if app is None:
            message = f"permission denied: applications, get, default/{m['name']}"
            return 403, {"error": message, "code": 7, "message": message}, {}
        return 200, app, {}


def _operation(phase: str, revision: str, at: datetime, initiated: dict[str, Any]) -> dict[str, Any]:
    return {
        "operation": {"sync": {"revision": revision}, "initiatedBy": initiated},
        "phase": phase,
        "message": "successfully synced" if phase == "Succeeded" else "one or more objects failed to apply",
        "startedAt": _iso(at.replace(second=0)),
        "finishedAt": _iso(at),
        "syncResult": {"revision": revision},
    }


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
