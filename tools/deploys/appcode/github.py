"""GitHubCode: the application's commits from GitHub's compare API, one repository per service.

`GET /repos/{repo}/compare/{base}...{head}` lists the commits oldest first (GitHub gives at most 250 and counts
them all in `total_commits`); the files of each shown commit come from `GET /repos/{repo}/commits/{sha}`, one
request each, so only the newest `max_commits` are read.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from tools.base import ToolError
from tools.deploys.appcode.source import RefPattern, bounded, failed
from tools.deploys.records import AppCommit, CodeChanges
from tools.deploys.rest import RestClient


class GitHubCode:
    """A CodeSource over GitHub repositories: `repos` maps a service to `owner/repo`, else `repo_pattern`
    (`acme/{service}`) names it."""

    def __init__(
        self,
        client: RestClient,
        repos: Mapping[str, str],
        repo_pattern: str = "",
        refs: RefPattern | None = None,
        *,
        max_commits: int = 10,
        max_files: int = 8,
    ) -> None:
        self.client = client
        self.repos = dict(repos)
        self.repo_pattern = repo_pattern
        self.refs = refs or RefPattern()
        self.max_commits, self.max_files = max_commits, max_files

    def changes(self, service: str, old: str, new: str) -> CodeChanges:
        """The compare between the two versions' refs, newest first, each shown commit with its files."""
        repo = self.repos.get(service) or (self.repo_pattern.format(service=service) if self.repo_pattern else "")
        if not repo:
            return failed(service, old, new, "GitHub", f"no application repository is configured for {service}")
        where = f"GitHub {repo}"
        try:
            base, head = (quote(self.refs.ref(service, v), safe="") for v in (old, new))
            reply = self.client.get(f"/repos/{repo}/compare/{base}...{head}", what=f"comparing {old}...{new}")
            listed = list(reversed(reply.get("commits") or []))[: self.max_commits]
            commits = [self._commit(repo, c) for c in listed]
        except ToolError as exc:
            return failed(service, old, new, where, str(exc))
        total = int(reply.get("total_commits") or len(commits))
        return bounded(service, old, new, where, commits, total, self.max_files)

    def _commit(self, repo: str, listed: dict[str, Any]) -> AppCommit:
        sha = str(listed["sha"])
        detail = self.client.get(f"/repos/{repo}/commits/{sha}", what=f"reading commit {sha[:7]} of {repo}")
        files = tuple(str(f["filename"]) for f in detail.get("files") or [])
        info = listed.get("commit") or {}
        author = info.get("author") or {}
        login = (listed.get("author") or {}).get("login")
        subject = str(info.get("message", "")).splitlines()[0] if info.get("message") else ""
        who = str(login or author.get("name", ""))
        return AppCommit(sha, _time(author.get("date")), who, subject, files, len(files))


def _time(text: Any) -> datetime:
    return datetime.fromisoformat(str(text).replace("Z", "+00:00")).astimezone(UTC)
