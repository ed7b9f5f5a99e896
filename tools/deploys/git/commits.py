"""GitOps commits as deploys: every commit on the branch that touches a service's folder deploys that service.

History is read along the first parent (the branch Argo CD or Flux follows; a merged pull request is one deploy,
its merge commit), with the committer date as the deploy time. A commit's version is the image tag it sets (read
from both versions of each changed file), else `config@<short sha>`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from tools.analysis.configdiff import FileVersions, KeyChange, is_config, key_changes_from_versions
from tools.deploys.git.cli import GitRepo
from tools.deploys.git.layout import Layout, Place
from tools.deploys.git.versions import version_from_changes

_FORMAT = "--format=%x1e%H%x1f%P%x1f%cI%x1f%an%x1f%s"
_HISTORY = ("--first-parent", "--diff-merges=first-parent", "--name-only", "--no-renames")


@dataclass(frozen=True)
class Commit:
    sha: str
    parent: str  # the first parent; "" for a root commit
    at: datetime
    author: str
    subject: str
    files: tuple[str, ...]


@dataclass(frozen=True)
class FolderChange:
    """One commit's change to one service folder, with what it changed and the version it deploys."""

    commit: Commit
    place: Place
    files: tuple[str, ...]
    key_changes: tuple[KeyChange, ...]
    notes: tuple[str, ...]
    version: str


def log_commits(repo: GitRepo, *args: str, pathspecs: Sequence[str] = ()) -> list[Commit]:
    """`git log` along the first parent with the files each commit changed, newest first; `args` are git's
    options and revisions (built here, never from model text)."""
    out = repo.run("log", _FORMAT, *_HISTORY, *args, "--", *pathspecs)
    commits = []
    for block in out.split("\x1e")[1:]:
        head, _, names = block.partition("\n")
        sha, parents, date, author, subject = head.split("\x1f", 4)
        files = tuple(line for line in names.splitlines() if line.strip())
        at = datetime.fromisoformat(date).astimezone(UTC)
        commits.append(Commit(sha, parents.split(" ")[0] if parents else "", at, author, subject, files))
    return commits


Touched = tuple[Commit, Place, tuple[str, ...]]


def split_by_folder(layout: Layout, commits: Iterable[Commit]) -> tuple[list[Touched], list[Commit]]:
    """(commit, service folder, its files) for every folder each commit touches, and the commits that touch none."""
    touched, outside = [], []
    for commit in commits:
        by_folder: dict[Place, list[str]] = {}
        for path in commit.files:
            place = layout.place(path)
            if place is not None:
                by_folder.setdefault(place, []).append(path)
        if not by_folder:
            outside.append(commit)
        touched += [(commit, place, tuple(files)) for place, files in by_folder.items()]
    return touched, outside


def folder_changes(repo: GitRepo, touched: Sequence[Touched]) -> list[FolderChange]:
    """Each commit's change to each folder with its keys and version; every file version read in one git process."""
    blobs = repo.blobs([s for commit, _, files in touched for s in _specs(commit.parent, commit.sha, files)])
    out = []
    for commit, place, files in touched:
        versions = _versions(blobs, commit.parent, commit.sha, files)
        changes, notes = key_changes_from_versions(
            versions,
            lambda paths, c=commit: folder_diff(repo, c.parent, c.sha, paths),  # type: ignore[misc]
        )
        version = version_from_changes(changes, place.service, commit.sha)
        out.append(FolderChange(commit, place, files, tuple(changes), tuple(notes), version))
    return out


def keys_between(
    repo: GitRepo, old_rev: str, new_rev: str, paths: Sequence[str], diff: str
) -> tuple[list[KeyChange], list[str]]:
    """The keys `paths` changed between two revisions (old_rev "" = the files were new), read whole where they parse."""
    blobs = repo.blobs(_specs(old_rev, new_rev, paths))
    return key_changes_from_versions(_versions(blobs, old_rev, new_rev, paths), diff)


def folder_diff(repo: GitRepo, old_rev: str, new_rev: str, pathspecs: Sequence[str]) -> str:
    """The unified diff of the folders between two revisions (the commit's own change when old_rev is "")."""
    if not old_rev:
        return repo.run("diff-tree", "-p", "--root", "--no-color", "--no-ext-diff", new_rev, "--", *pathspecs)
    return repo.run("diff", "--no-color", "--no-ext-diff", old_rev, new_rev, "--", *pathspecs)


def _specs(old_rev: str, new_rev: str, paths: Iterable[str]) -> list[str]:
    return [f"{rev}:{p}" for p in paths if is_config(p) for rev in (old_rev, new_rev) if rev]


def _versions(blobs: dict[str, str | None], old_rev: str, new_rev: str, paths: Iterable[str]) -> list[FileVersions]:
    return [
        FileVersions(p, blobs.get(f"{old_rev}:{p}") if old_rev else None, blobs.get(f"{new_rev}:{p}"))
        for p in paths
        if is_config(p)
    ]
