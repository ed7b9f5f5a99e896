"""GitDeploys: deploy records from a deploy repository, read with the real `git` CLI, as the team keeps them.

- **Tags**: when tags match `tag_pattern` (`{service}/{version}`), each one whose commit touches the service's folder
  is a deploy (annotated or lightweight; tools/deploys/git/tags.py).
- **GitOps commits**: when no tag matches (or `tag_pattern` is empty), every commit that touches a service's folder
  (`service_path`: `envs/{env}/{service}`, ...) is a deploy of that service in that environment; its version is the
  image tag it sets, else `config@<short sha>` (tools/deploys/git/commits.py).

What is left out is said, never dropped silently: a tag pattern that matches no tag, commits outside every service
folder, tags whose commit changes nothing in the service's folder.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

from tools.base import ToolError
from tools.deploys.git.cli import GitRepo
from tools.deploys.git.commits import (
    Commit,
    FolderChange,
    Touched,
    folder_changes,
    folder_diff,
    keys_between,
    log_commits,
    split_by_folder,
)
from tools.deploys.git.layout import Layout, Place
from tools.deploys.git.tags import Tag, TagPattern, TagScan, previous_tag, scan_tags
from tools.deploys.query import DeployRead, Finding, ReadsDeploys
from tools.deploys.records import DeployDiff, DeployRecord
from tools.timerange import iso_z

MAX_WINDOW_COMMITS = 2_000  # commits read for one window; more are reported as not read
MAX_SERVICE_HISTORY = 200  # a service's newest commits searched for a version's diff
MAX_LOOKBACK_COMMITS = 500  # commits before a window searched for the versions its folders had
_EXAMPLES = 3


class GitDeploys(ReadsDeploys):
    """A DeploySource over a local clone of the deploy repository."""

    def __init__(
        self,
        repo_path: str | Path,
        tag_pattern: str = "{service}/{version}",
        service_path: str = "services/{service}",
        *,
        timeout_s: float = 10.0,
    ) -> None:
        self.repo = GitRepo(repo_path, timeout_s=timeout_s)
        self.tag_pattern = TagPattern(tag_pattern) if tag_pattern.strip() else None
        self.layout = Layout(service_path)

    def describe(self) -> str:
        """Where the deploy records come from."""
        return f"the git deploy repository {self.repo.path}"

    @property
    def service_setting(self) -> str:
        """The setting that decides which services have deploys: the tag pattern when tags are read, else the
        folder layout."""
        try:
            return "deploys.tag_pattern" if self._tags()[0] is not None else "deploys.service_path"
        except ToolError:
            return "deploys.git_repo"

    def services(self) -> list[str]:
        """Every service with a deploy tag; in a repository read by commits, every service folder on the branch."""
        scan, _ = self._tags()
        if scan is not None:
            return sorted({t.service for t in scan.tags})
        return sorted({p.service for p in self.folders()})

    def folders(self) -> list[Place]:
        """The service folders on the checked-out branch (HEAD)."""
        names = self.repo.run("ls-tree", "-r", "--name-only", "HEAD").splitlines()
        return list(dict.fromkeys(p for name in names if (p := self.layout.place(name)) is not None))

    def versions(self, service: str) -> list[str]:
        """The service's versions, newest first."""
        scan, _ = self._tags()
        if scan is not None:
            return [t.version for t in scan.tags if t.service == service]
        return list(dict.fromkeys(c.version for c in self._history(service)))

    def read(self, service: str | None, start: datetime, end: datetime) -> DeployRead:
        """Deploys in [start, end), newest first, and what was not read as a deploy."""
        scan, note = self._tags()
        found = self._read_tags(scan, service, start, end) if scan else self._read_commits(service, start, end)
        return DeployRead(found.records, (*((note,) if note else ()), *found.notes))

    def diff(self, service: str, version: str, environments: Sequence[str] = ()) -> DeployDiff | None:
        """The deploy's change to the service's folder, its keys read from both versions of each file."""
        scan, _ = self._tags()
        if scan is not None:
            return self._tag_diff(scan, service, version)
        history = self._history(service)
        matches = [i for i, c in enumerate(history) if c.version == version]
        if not matches:
            return None
        wanted = {e.lower() for e in environments}
        index = next((i for i in matches if history[i].place.environment.lower() in wanted), matches[0])
        change = history[index]
        before = _previous_in(history, index) or self._previous_change(change)
        text = folder_diff(self.repo, change.commit.parent, change.commit.sha, [f":(literal){change.place.folder}"])
        return DeployDiff(_record(change, before), text, change.key_changes, change.notes)

    def check(self) -> list[Finding]:
        """The repository, the tags the pattern matches, the folders the layout matches."""
        from tools.deploys.git.discovery import check_repository

        return check_repository(self)

    def tag_scan(self) -> TagScan | None:
        """Every tag the pattern matches (None when tag_pattern is empty)."""
        return scan_tags(self.repo, self.tag_pattern) if self.tag_pattern is not None else None

    def _tags(self) -> tuple[TagScan | None, str]:
        """The deploy tags when any tag matches the pattern; otherwise None and why commits are read instead."""
        scan = self.tag_scan()
        if scan is None or scan.tags:
            return scan, ""
        assert self.tag_pattern is not None
        seen = f"{len(scan.all_names)} tags, e.g. {', '.join(scan.all_names[:_EXAMPLES])}" if scan.all_names else "none"
        return None, (
            f"no tag matches tag_pattern {self.tag_pattern.pattern!r} (tags in the repository: {seen}), so every "
            f"commit that touches a service folder ({self.layout}) is read as a deploy"
        )

    def _read_tags(self, scan: TagScan, service: str | None, start: datetime, end: datetime) -> DeployRead:
        out, idle = [], []
        for i, tag in enumerate(scan.tags):
            if (service is None or tag.service == service) and start <= tag.at < end:
                previous = previous_tag(scan.tags, i)
                files = self._tag_files(tag, previous)
                if files or previous is None:
                    out.append(_tag_record(tag, previous, files, self._environment(files)))
                else:
                    idle.append(f"{tag.service}/{tag.version}")
        notes = []
        if idle:
            many = len(idle) > 1
            notes.append(
                f"{len(idle)} tag{'s' if many else ''} in this window change{'' if many else 's'} nothing in "
                f"{'their' if many else 'its'} service's folder ({self.layout}), so "
                f"{'they are not deploys' if many else 'it is not a deploy'}: {', '.join(idle[:_EXAMPLES])}"
            )
        return DeployRead(tuple(out), tuple(notes))

    def _tag_diff(self, scan: TagScan, service: str, version: str) -> DeployDiff | None:
        index = next((i for i, t in enumerate(scan.tags) if t.service == service and t.version == version), None)
        if index is None:
            return None
        tag, previous = scan.tags[index], previous_tag(scan.tags, index)
        files = self._tag_files(tag, previous)
        old = previous.commit if previous else ""
        text = folder_diff(self.repo, old, tag.commit, self.layout.pathspecs(service))
        changes, notes = keys_between(self.repo, old or _parent(self.repo, tag.commit), tag.commit, files, text)
        record = _tag_record(tag, previous, files, self._environment(files))
        return DeployDiff(record, text, tuple(changes), tuple(notes))

    def _tag_files(self, tag: Tag, previous: Tag | None) -> tuple[str, ...]:
        specs = self.layout.pathspecs(tag.service)
        if previous is None:
            out = self.repo.run("diff-tree", "--root", "--no-commit-id", "--name-only", "-r", tag.commit, "--", *specs)
        else:
            out = self.repo.run("diff", "--name-only", previous.commit, tag.commit, "--", *specs)
        return tuple(line for line in out.splitlines() if line)

    def _environment(self, files: Sequence[str]) -> str:
        places = {p.environment for f in files if (p := self.layout.place(f)) is not None}
        return places.pop() if len(places) == 1 else ""

    def _read_commits(self, service: str | None, start: datetime, end: datetime) -> DeployRead:
        window = [f"--since={iso_z(start)}", f"--until={iso_z(end)}", f"--max-count={MAX_WINDOW_COMMITS}", "HEAD"]
        commits = [c for c in log_commits(self.repo, *window) if start <= c.at < end]
        touched, outside = split_by_folder(self.layout, commits)
        changes = folder_changes(self.repo, [t for t in touched if service in (None, t[1].service)])
        records = self._with_previous(changes, start)
        notes = []
        if outside and (service is None or not records):
            notes.append(self._outside_note(outside))
        if len(commits) >= MAX_WINDOW_COMMITS:
            notes.append(f"only the newest {MAX_WINDOW_COMMITS} commits of this window were read; narrow the window")
        return DeployRead(tuple(records), tuple(notes))

    def _with_previous(self, changes: list[FolderChange], start: datetime) -> list[DeployRecord]:
        """Records newest first, each with the version its folder had before (looked up before the window)."""
        by_place: dict[Place, list[FolderChange]] = {}
        for change in changes:
            by_place.setdefault(change.place, []).append(change)
        earlier = self._changes_before(list(by_place), start)
        records = []
        for place, folder in by_place.items():
            for i, change in enumerate(folder):
                before = folder[i + 1] if i + 1 < len(folder) else earlier.get(place)
                records.append(_record(change, before))
        return sorted(records, key=lambda r: r.at, reverse=True)

    def _changes_before(self, places: list[Place], start: datetime) -> dict[Place, FolderChange]:
        """Each folder's newest change before `start`: one `git log` over all the folders, one read of their files."""
        if not places:
            return {}
        specs = [f":(literal){p.folder}" for p in places]
        until = f"--until={iso_z(start - timedelta(seconds=1))}"
        found = log_commits(self.repo, until, f"--max-count={MAX_LOOKBACK_COMMITS}", "HEAD", pathspecs=specs)
        touched, _ = split_by_folder(self.layout, found)
        first: dict[Place, Touched] = {}
        for commit, place, files in touched:
            if place in places:
                first.setdefault(place, (commit, place, files))
        return {c.place: c for c in folder_changes(self.repo, list(first.values()))}

    def _previous_change(self, change: FolderChange) -> FolderChange | None:
        """The commit before `change` that touched the same folder."""
        if not change.commit.parent:
            return None
        found = log_commits(self.repo, "-1", change.commit.parent, pathspecs=[f":(literal){change.place.folder}"])
        touched, _ = split_by_folder(self.layout, found)
        same = [t for t in touched if t[1] == change.place]
        return folder_changes(self.repo, same)[0] if same else None

    def _history(self, service: str) -> list[FolderChange]:
        commits = log_commits(
            self.repo, f"--max-count={MAX_SERVICE_HISTORY}", "HEAD", pathspecs=self.layout.pathspecs(service)
        )
        touched, _ = split_by_folder(self.layout, commits)
        return folder_changes(self.repo, [t for t in touched if t[1].service == service])

    def _outside_note(self, outside: list[Commit]) -> str:
        examples = "; ".join(
            f"{c.sha[:7]} {c.subject[:60]!r} ({', '.join(c.files[:2]) or 'no files'})" for c in outside[:_EXAMPLES]
        )
        return (
            f"not a deploy of any service: {len(outside)} commit{'s' if len(outside) != 1 else ''} in this window "
            f"touch{'' if len(outside) != 1 else 'es'} no service folder "
            f"({self.layout}), e.g. {examples}"
        )


def _previous_in(history: list[FolderChange], index: int) -> FolderChange | None:
    place = history[index].place
    return next((c for c in history[index + 1 :] if c.place == place), None)


def _parent(repo: GitRepo, commit: str) -> str:
    """The commit's first parent, "" for a root commit."""
    parents = repo.run("rev-list", "--parents", "-n", "1", commit).split()
    return parents[1] if len(parents) > 1 else ""


def _record(change: FolderChange, before: FolderChange | None) -> DeployRecord:
    c = change.commit
    return DeployRecord(
        service=change.place.service,
        version=change.version,
        at=c.at,
        author=c.author,
        summary=c.subject,
        commit=c.sha,
        previous_version=before.version if before else "",
        files=change.files,
        environment=change.place.environment,
    )


def _tag_record(tag: Tag, previous: Tag | None, files: tuple[str, ...], environment: str) -> DeployRecord:
    before = previous.version if previous else ""
    return DeployRecord(
        tag.service, tag.version, tag.at, tag.author, tag.summary, tag.commit, before, files, environment=environment
    )
