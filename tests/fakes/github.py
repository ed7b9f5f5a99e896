"""FakeGitHub: the part of GitHub's REST API that deploy records use, over real HTTP, backed by real git repositories.

- `GET /repos/{owner}/{repo}/deployments` (newest first; `environment`, `sha`, `per_page`, `page`; a Link header
  with rel="next" and rel="last", as GitHub paginates)
- `GET /repos/{owner}/{repo}/deployments/{id}/statuses` (newest first)
- `GET /repos/{owner}/{repo}/compare/{base}...{head}` (shas, tags or branches; commits oldest first, with
  `total_commits`, files with their patch; 404 for a ref the repository lacks), computed by git
- `GET /repos/{owner}/{repo}/commits/{sha}` (one commit with the files it changed)
- `GET /repos/{owner}/{repo}/contents/{path}?ref=` (base64 content; 404 where the file does not exist)

Bearer auth is checked on every request (GitHub's "Bad credentials" 401 otherwise); faults (429 with Retry-After,
5xx, slow replies) are scripted with `fail_next`.
"""

from __future__ import annotations

import base64
import re
import subprocess
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from tests.fakes.restserver import FakeRestAPI, Reply

DOCS = "https://docs.github.com/rest"


@dataclass
class Deployment:
    id: int
    sha: str
    ref: str
    environment: str
    created_at: datetime
    creator: str
    description: str = ""
    payload: dict[str, Any] = field(default_factory=dict)
    statuses: list[tuple[str, datetime]] = field(default_factory=list)  # (state, created_at), oldest first


class FakeGitHub(FakeRestAPI):
    def __init__(self, token: str = "ghp_test") -> None:
        super().__init__(token)
        self.repos: dict[str, Path] = {}
        self.deployments: dict[str, list[Deployment]] = {}
        repo = r"/repos/(?P<repo>[^/]+/[^/]+)"
        self.route(f"{repo}/deployments", self._deployments)
        self.route(rf"{repo}/deployments/(?P<id>\d+)/statuses", self._statuses)
        self.route(rf"{repo}/compare/(?P<base>[^/]+?)\.\.\.(?P<head>[^/]+)", self._compare)
        self.route(rf"{repo}/commits/(?P<sha>[0-9a-f]{{7,40}})", self._commit)
        self.route(f"{repo}/contents/(?P<path>.+)", self._contents)

    def add_repo(self, name: str, path: Path) -> None:
        self.repos[name] = path
        self.deployments.setdefault(name, [])

    def deploy(self, repo: str, sha: str, environment: str, at: datetime, state: str = "success", **kw: Any) -> int:
        """Record a deployment with one status, `state`, a minute after it; returns its id."""
        found = self.deployments[repo]
        deployment = Deployment(
            1000 + len(found), sha, kw.pop("ref", "main"), environment, at, kw.pop("creator", "ci"), **kw
        )
        deployment.statuses.append((state, at.replace(second=30)))
        found.append(deployment)
        return deployment.id

    def unauthorized(self) -> Reply:
        return 401, {"message": "Bad credentials", "documentation_url": DOCS, "status": "401"}, {}

    def _deployments(self, m: re.Match[str], q: dict[str, str]) -> Reply:
        if m["repo"] not in self.repos:
            return _not_found()
        found = sorted(self.deployments[m["repo"]], key=lambda d: d.id, reverse=True)
        found = [d for d in found if q.get("environment") in (None, d.environment) and q.get("sha") in (None, d.sha)]
        per_page, page = min(int(q.get("per_page", 30)), 100), int(q.get("page", 1))
        items = [self._deployment_json(m["repo"], d) for d in found[(page - 1) * per_page : page * per_page]]
        last = max(1, -(-len(found) // per_page))
        link = f"{self.url}/repos/{m['repo']}/deployments?per_page={per_page}&page="
        links = [f'<{link}{page + 1}>; rel="next"', f'<{link}{last}>; rel="last"'] if page < last else []
        return 200, items, {"Link": ", ".join(links)} if links else {}

    def _deployment_json(self, repo: str, d: Deployment) -> dict[str, Any]:
        return {
            "url": f"{self.url}/repos/{repo}/deployments/{d.id}",
            "id": d.id,
            "node_id": f"DE_{d.id}",
            "sha": d.sha,
            "ref": d.ref,
            "task": "deploy",
            "payload": d.payload,
            "original_environment": d.environment,
            "environment": d.environment,
            "description": d.description or None,
            "creator": {"login": d.creator, "id": 1, "type": "User"},
            "created_at": _iso(d.created_at),
            "updated_at": _iso(d.statuses[-1][1] if d.statuses else d.created_at),
            "statuses_url": f"{self.url}/repos/{repo}/deployments/{d.id}/statuses",
            "repository_url": f"{self.url}/repos/{repo}",
            "transient_environment": False,
            "production_environment": d.environment in ("production", "prod"),
        }

    def _statuses(self, m: re.Match[str], q: dict[str, str]) -> Reply:
        found = next((d for d in self.deployments.get(m["repo"], []) if d.id == int(m["id"])), None)
        if found is None:
            return _not_found()
        newest = list(reversed(found.statuses))
        per_page = min(int(q.get("per_page", 30)), 100)
        body = [
            {
                "id": i,
                "state": state,
                "description": "",
                "environment": found.environment,
                "created_at": _iso(at),
                "creator": {"login": found.creator},
                "log_url": "",
                "environment_url": "",
            }
            for i, (state, at) in enumerate(newest[:per_page])
        ]
        return 200, body, {}

    def _compare(self, m: re.Match[str], q: dict[str, str]) -> Reply:
        repo = self.repos.get(m["repo"])
        if repo is None:
            return _not_found()
        base, head = _resolved(repo, unquote(m["base"])), _resolved(repo, unquote(m["head"]))
        if not base or not head:
            return _not_found()
        log = _git(repo, "log", "--reverse", "--format=%H%x1f%an%x1f%aI%x1f%B%x1e", f"{base}..{head}")
        commits = [_commit_json(raw) for raw in filter(str.strip, log.split("\x1e"))]
        files = [
            self._file(repo, base, head, line) for line in _git(repo, "diff", "--name-status", base, head).splitlines()
        ]
        body = {
            "status": "ahead",
            "ahead_by": len(commits),
            "behind_by": 0,
            "total_commits": len(commits),
            "commits": commits,
            "files": files,
        }
        return 200, body, {}

    def _commit(self, m: re.Match[str], q: dict[str, str]) -> Reply:
        repo = self.repos.get(m["repo"])
        sha = _resolved(repo, m["sha"]) if repo is not None else ""
        if repo is None or not sha:
            return _not_found()
        raw = _git(repo, "log", "-1", "--format=%H%x1f%an%x1f%aI%x1f%B", sha)
        parent = _git(repo, "rev-list", "--parents", "-n", "1", sha).split()[1:]
        old = parent[0] if parent else _git(repo, "hash-object", "-t", "tree", "/dev/null").strip()
        lines = _git(repo, "diff", "--name-status", old, sha).splitlines()
        return 200, {**_commit_json(raw), "files": [self._file(repo, old, sha, line) for line in lines]}, {}

    def _file(self, repo: Path, base: str, head: str, line: str) -> dict[str, Any]:
        code, name = line.split("\t", 1)
        status = {"A": "added", "D": "removed", "M": "modified"}.get(code[0], "modified")
        patch = _git(repo, "diff", "--no-color", base, head, "--", name)
        hunks = patch[patch.find("@@") :] if "@@" in patch else ""
        added = sum(1 for x in hunks.splitlines() if x.startswith("+"))
        removed = sum(1 for x in hunks.splitlines() if x.startswith("-"))
        return {
            "filename": name,
            "status": status,
            "additions": added,
            "deletions": removed,
            "changes": added + removed,
            "patch": hunks.rstrip("\n"),
        }

    def _contents(self, m: re.Match[str], q: dict[str, str]) -> Reply:
        repo = self.repos.get(m["repo"])
        if repo is None:
            return _not_found()
        done = subprocess.run(
            ["git", "-C", str(repo), "show", f"{q.get('ref', 'HEAD')}:{m['path']}"], capture_output=True, check=False
        )
        if done.returncode != 0:
            return _not_found()
        content = base64.b64encode(done.stdout).decode()
        return (
            200,
            {
                "type": "file",
                "encoding": "base64",
                "path": m["path"],
                "name": m["path"].rsplit("/", 1)[-1],
                "size": len(done.stdout),
                "content": content,
            },
            {},
        )


def _commit_json(raw: str) -> dict[str, Any]:
    """A commit as GitHub lists it; the author's login is the git author's name (the stand-in's users)."""
    sha, name, date, message = raw.strip("\n").split("\x1f", 3)
    author = {"name": name, "email": f"{name}@example.com", "date": date}
    return {
        "sha": sha,
        "commit": {"author": author, "committer": author, "message": message.strip()},
        "author": {"login": name, "type": "User"},
    }


def _resolved(repo: Path, ref: str) -> str:
    """The commit a sha, tag or branch names; "" when the repository has no such ref (GitHub's 404)."""
    if ref.startswith("-"):
        return ""
    done = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() if done.returncode == 0 else ""


def _not_found() -> Reply:
    return 404, {"message": "Not Found", "documentation_url": DOCS, "status": "404"}, {}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
