"""GitHubDeploys: deploy records from the GitHub Deployments API, one repository per service.

A record is a deployment (`GET /repos/{repo}/deployments`, newest first, pages followed) with its latest status
(`.../deployments/{id}/statuses`, newest first) and environment; its rollout started at the first `in_progress`
status (else when the deployment was created) and finished at the first `success`. Its version is `payload.version`,
else a ref that reads as a version (v1.4.0), else the short sha. Its diff is the compare API between the previous
successful deployment to the same environment and this one (`GET /repos/{repo}/compare/{base}...{head}`: commits and
each file's patch); configuration files are read whole at both shas (`GET /repos/{repo}/contents/{path}?ref=`) for
full key paths.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from tools.analysis.configdiff import FileVersions, is_config, key_changes_from_versions
from tools.base import ToolError
from tools.deploys.query import DeployRead, Finding, ReadsDeploys
from tools.deploys.records import DeployDiff, DeployRecord
from tools.deploys.rest import RestClient

DEPLOYED = frozenset({"success", "inactive"})  # inactive: a successful deploy that a newer one replaced
MAX_STATUSES = 50  # deployments of one window whose status is read (a request each)
MAX_CONFIG_FILES = 10  # config files read whole per diff; others give their hunks' keys
_VERSION_REF_RX = re.compile(r"^v?\d+(\.\d+)*([-+][0-9A-Za-z.]+)?$")
_SAFE_RX = re.compile(r"[^A-Za-z0-9._+@-]")


class GitHubDeploys(ReadsDeploys):
    """A DeploySource over GitHub deployments; `repos` maps each service to its `owner/repo`."""

    service_setting = "deploys.github.repos"

    def __init__(self, client: RestClient, repos: Mapping[str, str], *, max_pages: int = 5) -> None:
        self.client = client
        self.repos = dict(repos)
        self.max_pages = max_pages

    def describe(self) -> str:
        return f"GitHub deployments of {', '.join(sorted(set(self.repos.values()))) or 'no repository'}"

    def services(self) -> list[str]:
        return sorted(self.repos)

    def read(self, service: str | None, start: datetime, end: datetime) -> DeployRead:
        """Deployments created in [start, end), newest first, each with its latest status."""
        records, notes = [], []
        for name in [service] if service else self.services():
            found, more = self._deployments(name)
            inside = [i for i, d in enumerate(found) if start <= _time(d["created_at"]) < end]
            for i in inside[:MAX_STATUSES]:  # one status request each
                statuses = self._statuses(name, found[i])
                record = self._record(name, found[i], _previous(found, i), _state(statuses))
                started, finished = _rollout(found[i], statuses)
                records.append(replace(record, started=started, finished=finished))
            if len(inside) > MAX_STATUSES:
                notes.append(f"{name}: only the newest {MAX_STATUSES} of {len(inside)} deployments were read")
            if more and found and _time(found[-1]["created_at"]) > start:
                notes.append(f"{name}: only the newest {len(found)} deployments were read ({self.max_pages} pages)")
        return DeployRead(tuple(sorted(records, key=lambda r: r.at, reverse=True)), tuple(notes))

    def versions(self, service: str) -> list[str]:
        return list(dict.fromkeys(_version(d) for d in self._deployments(service)[0]))

    def diff(self, service: str, version: str, environments: Sequence[str] = ()) -> DeployDiff | None:
        """The commits and files between the previous successful deployment to the same environment and this one."""
        found, _ = self._deployments(service)
        matches = [i for i, d in enumerate(found) if _version(d) == version]
        if not matches:
            return None
        wanted = {e.lower() for e in environments}
        index = next((i for i in matches if str(found[i].get("environment", "")).lower() in wanted), matches[0])
        head, base = found[index], self._base(service, found, index)
        record = self._record(service, head, base, _state(self._statuses(service, head)))
        if base is None:
            return DeployDiff(record, "", (), ("the first deployment to this environment: nothing earlier to compare",))
        return self._compare(service, record, base["sha"], head["sha"])

    def check(self) -> list[Finding]:
        """Each repository answers and records deployments."""
        findings = []
        for service, repo in sorted(self.repos.items()):
            try:
                found, _ = self._deployments(service)
            except ToolError as exc:
                findings.append(Finding("deploys.github.repos", f"{service} = {repo}", str(exc), ok=False))
                continue
            envs = sorted({str(d.get("environment", "")) for d in found})
            evidence = f"{len(found)} deployments read, environments: {', '.join(envs) or 'none'}"
            findings.append(Finding("deploys.github.repos", f"{service} = {repo}", evidence, ok=bool(found)))
        return findings

    def _deployments(self, service: str) -> tuple[list[dict[str, Any]], bool]:
        repo = self.repos[service]
        items, more = self.client.pages(
            f"/repos/{repo}/deployments",
            {"per_page": 100},
            what=f"listing deployments of {repo}",
            max_pages=self.max_pages,
        )
        return sorted(items, key=lambda d: _time(d["created_at"]), reverse=True), more

    def _statuses(self, service: str, deployment: dict[str, Any]) -> list[dict[str, Any]]:
        """The deployment's statuses, newest first (one page: its rollout's in_progress and success are there)."""
        repo = self.repos[service]
        return list(
            self.client.get(
                f"/repos/{repo}/deployments/{deployment['id']}/statuses",
                {"per_page": 100},
                what=f"reading the status of deployment {deployment['id']} of {repo}",
            )
        )

    def _base(self, service: str, found: list[dict[str, Any]], index: int) -> dict[str, Any] | None:
        """The newest earlier deployment to the same environment that went out (success or inactive)."""
        env = found[index].get("environment")
        for d in found[index + 1 :]:
            if d.get("environment") == env and _state(self._statuses(service, d)) in DEPLOYED:
                return d
        return None

    def _record(self, service: str, d: dict[str, Any], before: dict[str, Any] | None, status: str) -> DeployRecord:
        creator = d.get("creator") or {}
        return DeployRecord(
            service=service,
            version=_version(d),
            at=_time(d["created_at"]),
            author=str(creator.get("login", "")),
            summary=str(d.get("description") or f"{d.get('task', 'deploy')} {d.get('ref', '')}").strip(),
            commit=str(d.get("sha", "")),
            previous_version=_version(before) if before else "",
            environment=str(d.get("environment", "")),
            status=status,
        )

    def _compare(self, service: str, record: DeployRecord, base: str, head: str) -> DeployDiff:
        repo = self.repos[service]
        reply = self.client.get(f"/repos/{repo}/compare/{base}...{head}", what=f"comparing {base[:7]}...{head[:7]}")
        files = list(reply.get("files") or [])
        commits = [
            f"  {c['sha'][:7]} {str(c['commit']['message']).splitlines()[0][:80]} ({c['commit']['author']['name']})"
            for c in reply.get("commits") or []
        ]
        text = "\n".join([f"commits {base[:7]}...{head[:7]} ({len(commits)}):", *commits, *map(_file_diff, files)])
        config = [f["filename"] for f in files if is_config(f["filename"]) and f.get("status") != "removed"]
        versions = [self._versions(repo, path, base, head) for path in config[:MAX_CONFIG_FILES]]
        changes, notes = key_changes_from_versions(versions, text)
        names = tuple(f["filename"] for f in files)
        return DeployDiff(replace(record, files=names), text, tuple(changes), tuple(notes))

    def _versions(self, repo: str, path: str, base: str, head: str) -> FileVersions:
        return FileVersions(path, self._content(repo, path, base), self._content(repo, path, head))

    def _content(self, repo: str, path: str, ref: str) -> str | None:
        try:
            where = f"/repos/{repo}/contents/{quote(path)}"  # a file name may hold spaces or '#'
            reply = self.client.get(where, {"ref": ref}, what=f"reading {path} at {ref[:7]}")
        except ToolError as exc:
            if "HTTP 404" in str(exc):
                return None  # the file did not exist at that commit
            raise
        if reply.get("encoding") != "base64":
            return None
        return base64.b64decode(reply.get("content", "")).decode("utf-8", errors="replace")


def _state(statuses: list[dict[str, Any]]) -> str:
    """The latest status' state ("pending" before the first status)."""
    return str(statuses[0].get("state", "")) if statuses else "pending"


def _rollout(deployment: dict[str, Any], statuses: list[dict[str, Any]]) -> tuple[datetime | None, datetime | None]:
    """started: the first in_progress status (else the deployment's creation); finished: the first success."""
    oldest_first = list(reversed(statuses))
    running = next((s for s in oldest_first if s.get("state") == "in_progress"), None)
    done = next((s for s in oldest_first if s.get("state") == "success"), None)
    started = _time(running["created_at"]) if running else _time(deployment["created_at"])
    return (started if done or running else None), (_time(done["created_at"]) if done else None)


def _file_diff(f: dict[str, Any]) -> str:
    name = f["filename"]
    old = f"a/{f.get('previous_filename', name)}" if f.get("status") != "added" else "/dev/null"
    new = f"b/{name}" if f.get("status") != "removed" else "/dev/null"
    patch = f.get("patch") or "(no patch: binary or too large)"
    return f"diff --git a/{f.get('previous_filename', name)} b/{name}\n--- {old}\n+++ {new}\n{patch}"


def _version(d: dict[str, Any]) -> str:
    payload = d.get("payload")
    if isinstance(payload, dict) and isinstance(payload.get("version"), str) and payload["version"].strip():
        return _SAFE_RX.sub("-", payload["version"].strip())[:64]
    ref = str(d.get("ref", ""))
    if _VERSION_REF_RX.match(ref):
        return ref
    return str(d.get("sha", ""))[:7]


def _previous(found: list[dict[str, Any]], index: int) -> dict[str, Any] | None:
    env = found[index].get("environment")
    return next((d for d in found[index + 1 :] if d.get("environment") == env), None)


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
