"""GitCode: the application's commits from a local clone per service, read with the real `git` CLI.

The clone is the one `repos` names for the service, else `repo_pattern` with `{service}` filled in
(`/srv/src/{service}`). The commits are `git log old..new` along every parent (a merged branch's commits are the
code that shipped), newest first, with the files each one changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from tools.base import ToolError
from tools.deploys.appcode.source import RefPattern, bounded, failed
from tools.deploys.git.cli import GitRepo
from tools.deploys.records import AppCommit, CodeChanges

_FORMAT = "--format=%x1e%H%x1f%aI%x1f%an%x1f%s"


class GitCode:
    """A CodeSource over local clones of the applications' repositories."""

    def __init__(
        self,
        repos: Mapping[str, str],
        repo_pattern: str = "",
        refs: RefPattern | None = None,
        *,
        max_commits: int = 10,
        max_files: int = 8,
        timeout_s: float = 10.0,
    ) -> None:
        self.repos = dict(repos)
        self.repo_pattern = repo_pattern
        self.refs = refs or RefPattern()
        self.max_commits, self.max_files, self.timeout_s = max_commits, max_files, timeout_s

    def repo_of(self, service: str) -> Path | None:
        """The service's clone, None when neither `repos` nor `repo_pattern` names one."""
        named = self.repos.get(service) or (self.repo_pattern.format(service=service) if self.repo_pattern else "")
        return Path(named).expanduser() if named else None

    def changes(self, service: str, old: str, new: str) -> CodeChanges:
        """Commits in `new` that `old` lacks, newest first, at most max_commits."""
        path = self.repo_of(service)
        if path is None:
            return failed(service, old, new, "git", f"no application repository is configured for {service}")
        where = f"git {path.name}"  # the clone's folder name: a local path says nothing the reader needs
        try:
            repo = GitRepo(path, timeout_s=self.timeout_s)
            base, head = (self._commit(repo, service, v) for v in (old, new))
            total = int(repo.run("rev-list", "--count", f"{base}..{head}").strip() or 0)
            listed = repo.run("log", _FORMAT, "--name-only", f"--max-count={self.max_commits}", f"{base}..{head}", "--")
        except ToolError as exc:
            return failed(service, old, new, where, str(exc))
        return bounded(service, old, new, where, _commits(listed), total, self.max_files)

    def _commit(self, repo: GitRepo, service: str, version: str) -> str:
        """The commit a version's ref names (a ToolError naming the ref when the clone lacks it)."""
        ref = self.refs.ref(service, version)
        try:
            return repo.run("rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}").strip()
        except ToolError as exc:
            raise ToolError(f"the repository has no {ref!r} for version {version} (fetch its tags?)") from exc


def _commits(listed: str) -> list[AppCommit]:
    out = []
    for block in listed.split("\x1e")[1:]:
        head, _, names = block.partition("\n")
        sha, date, author, subject = head.split("\x1f", 3)
        files = tuple(line for line in names.splitlines() if line.strip())
        at = datetime.fromisoformat(date).astimezone(UTC)
        out.append(AppCommit(sha, at, author, subject, files, len(files)))
    return out
