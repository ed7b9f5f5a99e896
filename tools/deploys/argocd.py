"""ArgoCDDeploys: deploy records from Argo CD's application history (`GET /api/v1/applications/{name}`).

Each `status.history` entry is a successful sync: its revision, `deployedAt`, source (repoURL, path, chart) and who
started it. An app names its service (and maybe its environment) through `app_pattern` (`{service}`,
`{service}-{env}`); otherwise the environment is the app's destination namespace, project or cluster. A last sync that
failed (`status.operationState`) is a record with its phase, so the filters can say they left it out.

Versions and diffs: with a local clone of the repository behind the apps (`git_repo`), a sync's change is the git diff
of the app's path between the previous sync's revision and its own, keys read whole, and its version the image tag it
set (else `config@<sha>`); without one, the version is the revision (or the chart version) and the diff says which
revisions to compare.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from tools.base import ToolError
from tools.deploys.git.cli import SHA_RX, GitRepo
from tools.deploys.git.commits import folder_diff, keys_between
from tools.deploys.git.versions import version_from_changes
from tools.deploys.query import DeployRead, Finding, ReadsDeploys
from tools.deploys.records import DeployDiff, DeployRecord
from tools.deploys.rest import RestClient

FAILED_PHASES = frozenset({"Failed", "Error"})


@dataclass(frozen=True)
class _Sync:
    """One history entry (or a failed last operation) of one app."""

    app: str
    service: str
    environment: str
    revision: str
    at: datetime
    author: str
    repo_url: str
    path: str
    chart: str
    phase: str  # Succeeded for history entries
    before: _Sync | None = None  # the newest successful sync older than this one
    started: datetime | None = None  # deployStartedAt (at is deployedAt, when the sync finished)
    rollback: bool = False  # back to a revision an older sync (not the one just before) deployed


class ArgoCDDeploys(ReadsDeploys):
    """A DeploySource over the applications an Argo CD API token can read."""

    service_setting = "deploys.argocd.app_pattern"

    def __init__(
        self,
        client: RestClient,
        *,
        app_pattern: str = "{service}",
        environment_from: str = "namespace",
        apps: Sequence[str] = (),
        git: GitRepo | None = None,
    ) -> None:
        if app_pattern.count("{service}") != 1:
            raise ValueError(f"app_pattern {app_pattern!r} needs {{service}} once")
        self.client = client
        self.app_pattern = app_pattern
        self.environment_from = environment_from
        self.apps = list(apps)
        self.git = git
        self._versions: dict[tuple[str, str, str], str] = {}
        body = re.escape(app_pattern).replace(r"\{service\}", "(?P<service>.+?)").replace(r"\{env\}", "(?P<env>.+?)")
        self._rx = re.compile(f"^{body}$")

    def describe(self) -> str:
        return f"Argo CD at {self.client.base_url}"

    def services(self) -> list[str]:
        return sorted({s for _, s, _ in self._named_apps()})

    def read(self, service: str | None, start: datetime, end: datetime) -> DeployRead:
        """Syncs in [start, end), newest first, with the version each one before it had."""
        records = [
            self._record(sync, version, previous)
            for sync, version, previous in self._versioned(service)
            if start <= sync.at < end
        ]
        return DeployRead(tuple(sorted(records, key=lambda r: r.at, reverse=True)))

    def versions(self, service: str) -> list[str]:
        found = sorted(self._versioned(service), key=lambda v: v[0].at, reverse=True)
        return list(dict.fromkeys(version for _, version, _ in found))

    def diff(self, service: str, version: str, environments: Sequence[str] = ()) -> DeployDiff | None:
        """The sync's change: the git diff of the app's path between the two revisions when a clone is configured."""
        wanted = {e.lower() for e in environments}
        found = [v for v in self._versioned(service) if v[1] == version]
        if not found:
            return None
        sync, _, previous = next((v for v in found if v[0].environment.lower() in wanted), found[0])
        record, before = self._record(sync, version, previous), sync.before
        if before is None or not self._in_clone(sync, before):
            return DeployDiff(record, "", None, (self._no_clone_note(sync, before),))
        assert self.git is not None
        text = folder_diff(self.git, before.revision, sync.revision, [f":(literal){sync.path}"])
        files = self._files(before, sync)
        changes, notes = keys_between(self.git, before.revision, sync.revision, files, text)
        return DeployDiff(replace(record, files=tuple(files)), text, tuple(changes), tuple(notes))

    def _versioned(self, service: str | None) -> list[tuple[_Sync, str, str]]:
        """(sync, its version, the version before it) of every sync of the service's apps (None: every app)."""
        out = []
        for app, name, env in self._named_apps():
            if service not in (None, name):
                continue
            syncs = self._syncs(app, name, env)
            versions = {_key(s): self._version(s) for s in syncs}
            out += [(s, versions[_key(s)], versions[_key(s.before)] if s.before else "") for s in syncs]
        return out

    def check(self) -> list[Finding]:
        """The API answers; the app pattern names services; each app has history."""
        try:
            named = self._named_apps()
        except ToolError as exc:
            return [Finding("deploys.argocd.url", self.client.base_url, str(exc), ok=False)]
        if not named:
            return [Finding("deploys.argocd.app_pattern", self.app_pattern, "matches none of the apps", ok=False)]
        apps = ", ".join(f"{a} ({s}{'/' + e if e else ''})" for a, s, e in named[:6])
        return [Finding("deploys.argocd.app_pattern", self.app_pattern, f"{len(named)} apps: {apps}")]

    def _named_apps(self) -> list[tuple[str, str, str]]:
        """(app, service, environment from the name or "") of every app the pattern reads."""
        names = self.apps or [
            str(item["metadata"]["name"])
            for item in self.client.get("/api/v1/applications", what="listing applications").get("items") or []
        ]
        return [(n, m.group("service"), m.groupdict().get("env") or "") for n in names if (m := self._rx.match(n))]

    def _syncs(self, app: str, service: str, env_from_name: str) -> list[_Sync]:
        """The app's syncs, newest first; a failed last operation first when it is newer than the history."""
        body = self.client.get(f"/api/v1/applications/{app}", what=f"reading application {app}")
        spec, status = body.get("spec") or {}, body.get("status") or {}
        env = env_from_name or self._environment(spec)
        syncs = [_from_history(app, service, env, h) for h in status.get("history") or []]
        failed = _failed_operation(app, service, env, spec, status.get("operationState") or {})
        if failed is not None and all(s.at < failed.at for s in syncs):
            syncs.append(failed)
        syncs.sort(key=lambda s: s.at, reverse=True)
        return [replace(s, before=_before(syncs, i), rollback=_is_rollback(syncs, i)) for i, s in enumerate(syncs)]

    def _environment(self, spec: dict[str, Any]) -> str:
        destination = spec.get("destination") or {}
        if self.environment_from == "project":
            return str(spec.get("project", ""))
        if self.environment_from == "cluster":
            return str(destination.get("name") or destination.get("server") or "")
        return str(destination.get("namespace", ""))

    def _record(self, sync: _Sync, version: str, previous: str) -> DeployRecord:
        where = sync.chart or f"{sync.repo_url} {sync.path}".strip()
        return DeployRecord(
            service=sync.service,
            version=version,
            at=sync.at,
            author=sync.author,
            summary=f"{sync.app} synced to {sync.revision[:12]} ({where})",
            commit=sync.revision,
            previous_version=previous,
            environment=sync.environment,
            status=sync.phase,
            started=sync.started,
            finished=sync.at if sync.phase == "Succeeded" else None,
            action="rollback" if sync.rollback else "",
        )

    def _version(self, sync: _Sync) -> str:
        """The chart version; the image tag the sync set (with a clone: read from the change since the sync before,
        or from the files themselves for the first sync); else the short revision."""
        if sync.chart or not SHA_RX.match(sync.revision):
            return re.sub(r"[^A-Za-z0-9._+-]", "-", sync.revision)[:64]
        before = sync.before
        key = (before.revision if before else "", sync.revision, sync.path)
        if key not in self._versions:  # a sync's revisions never change: its version is read once
            self._versions[key] = self._read_version(sync)
        return self._versions[key]

    def _read_version(self, sync: _Sync) -> str:
        before = sync.before
        if self.git is None or not self._in_clone(sync, *([before] if before else [])):
            return sync.revision[:7]
        if before is None:
            listed = self.git.run("ls-tree", "-r", "--name-only", sync.revision, "--", f":(literal){sync.path}")
            changes, _ = keys_between(self.git, "", sync.revision, listed.splitlines(), "")
        else:
            changes, _ = keys_between(self.git, before.revision, sync.revision, self._files(before, sync), "")
        return version_from_changes(changes, sync.service, sync.revision)

    def _files(self, before: _Sync, sync: _Sync) -> list[str]:
        assert self.git is not None
        out = self.git.run("diff", "--name-only", before.revision, sync.revision, "--", f":(literal){sync.path}")
        return [line for line in out.splitlines() if line]

    def _in_clone(self, *syncs: _Sync) -> bool:
        """Every sync's revision is a commit of the configured clone (a chart source has none)."""
        if self.git is None or any(s.chart or not s.path or not SHA_RX.match(s.revision) for s in syncs):
            return False
        try:
            for sync in syncs:
                self.git.run("cat-file", "-e", f"{sync.revision}^{{commit}}")
        except ToolError:
            return False
        return True

    def _no_clone_note(self, sync: _Sync, before: _Sync | None) -> str:
        if before is None:
            return f"the first sync in {sync.app}'s history: nothing earlier to compare"
        where = "is not configured (deploys.argocd.git_repo)"
        if self.git is not None:
            where = f"at {self.git.path} lacks them (fetch it)"
        return (
            f"{sync.app} went from revision {before.revision[:12]} to {sync.revision[:12]} of {sync.repo_url} "
            f"{sync.path or sync.chart}; the change is not shown: a clone of that repository {where}"
        )


def _from_history(app: str, service: str, env: str, h: dict[str, Any]) -> _Sync:
    source = h.get("source") or (h.get("sources") or [{}])[0]
    revision = str(h.get("revision") or (h.get("revisions") or [""])[0])
    who = h.get("initiatedBy") or {}
    author = str(who.get("username") or ("automated sync" if who.get("automated") else "unknown"))
    return _Sync(
        app,
        service,
        env,
        revision,
        _time(h.get("deployedAt") or h.get("deployStartedAt")),
        author,
        str(source.get("repoURL", "")),
        str(source.get("path", "")),
        str(source.get("chart", "")),
        "Succeeded",
        started=_time(h["deployStartedAt"]) if h.get("deployStartedAt") else None,
    )


def _failed_operation(app: str, service: str, env: str, spec: dict[str, Any], op: dict[str, Any]) -> _Sync | None:
    if op.get("phase") not in FAILED_PHASES or not op.get("startedAt"):
        return None
    revision = str(((op.get("operation") or {}).get("sync") or {}).get("revision", ""))
    who = (op.get("operation") or {}).get("initiatedBy") or {}
    source = spec.get("source") or {}
    author = str(who.get("username") or "automated sync")
    return _Sync(
        app,
        service,
        env,
        revision or "(unknown)",
        _time(op["startedAt"]),
        author,
        str(source.get("repoURL", "")),
        str(source.get("path", "")),
        str(source.get("chart", "")),
        str(op["phase"]),
        started=_time(op["startedAt"]),
    )


def _before(syncs: list[_Sync], index: int) -> _Sync | None:
    """The newest successful sync older than syncs[index] (syncs are newest first)."""
    return next((s for s in syncs[index + 1 :] if s.phase == "Succeeded"), None)


def _is_rollback(syncs: list[_Sync], index: int) -> bool:
    """A successful sync to a revision that an older sync deployed, other than the one just before it (Argo CD's
    rollback appends the old history entry's revision again)."""
    sync, before = syncs[index], _before(syncs, index)
    if sync.phase != "Succeeded" or before is None or before.revision == sync.revision:
        return False
    return any(s.revision == sync.revision and s.phase == "Succeeded" for s in syncs[index + 1 :])


def _key(sync: _Sync) -> tuple[datetime, str, str]:
    return sync.at, sync.revision, sync.phase


def _time(text: Any) -> datetime:
    return datetime.fromisoformat(str(text).replace("Z", "+00:00")).astimezone(UTC)
