"""GitDeploys: deploy records from a GitOps repository, read with the real `git` CLI.

A deploy is an annotated tag named by `tag_pattern` (default `{service}/{version}`) whose commit touches
the service's folder; the tagger date is the deploy time and the tag message is `summary` plus an
`author: ...` line. Only ref names that git itself listed are ever passed back to git, after `--`-safe
validation, so model text cannot become a git option or path.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from tools.base import ToolError
from tools.deploys.records import DeployDiff, DeployRecord

_FIELDS = "%(refname)%1f%(objecttype)%1f%(taggerdate:iso-strict)%1f%(taggername)%1f%(*objectname)%1f%(contents)%1e"
_AUTHOR_LINE = re.compile(r"^author:\s*(.+)$", re.MULTILINE | re.IGNORECASE)


@dataclass(frozen=True)
class _Tag:
    ref: str
    service: str
    version: str
    at: datetime
    author: str
    summary: str
    commit: str


class GitDeploys:
    """A DeploySource over a local clone of the GitOps repository."""

    def __init__(
        self,
        repo_path: str | Path,
        tag_pattern: str = "{service}/{version}",
        service_path: str = "services/{service}",
        *,
        timeout_s: float = 10.0,
    ) -> None:
        if "{service}" not in tag_pattern or "{version}" not in tag_pattern:
            raise ValueError(f"tag_pattern {tag_pattern!r} needs {{service}} and {{version}}")
        self.repo_path = Path(repo_path)
        self.tag_pattern = tag_pattern
        self.service_path = service_path
        self.timeout_s = timeout_s
        literal = re.escape(tag_pattern).replace(r"\{service\}", "{service}").replace(r"\{version\}", "{version}")
        self._tag_rx = re.compile(
            "^refs/tags/" + literal.format(service=r"(?P<service>[A-Za-z0-9._-]+)", version=r"(?P<version>[^/]+)") + "$"
        )

    def describe(self) -> str:
        """Where the deploy records come from."""
        return "the git deploy repository"

    def services(self) -> list[str]:
        """Every service with a deploy tag."""
        return sorted({t.service for t in self._tags()})

    def versions(self, service: str) -> list[str]:
        """The service's tagged versions, newest first."""
        return [t.version for t in self._tags() if t.service == service]

    def records(self, service: str | None, start: datetime, end: datetime) -> list[DeployRecord]:
        """Tags in [start, end) whose commit touches the service's folder, newest first."""
        tags = self._tags()
        out = []
        for i, tag in enumerate(tags):
            if (service is None or tag.service == service) and start <= tag.at < end:
                previous = _previous(tags, i)
                files = self._files(tag, previous)
                if files or previous is None:
                    out.append(_record(tag, previous, files))
        return out

    def diff(self, service: str, version: str) -> DeployDiff | None:
        """`git diff <previous tag> <tag> -- <service folder>` (or the tag commit's own change for the first)."""
        tags = self._tags()
        index = next((i for i, t in enumerate(tags) if t.service == service and t.version == version), None)
        if index is None:
            return None
        tag, previous = tags[index], _previous(tags, index)
        folder = self.service_path.format(service=service)
        if previous is None:
            text = self._git("diff-tree", "-p", "--root", "--no-color", "--no-ext-diff", tag.commit, "--", folder)
        else:
            text = self._git("diff", "--no-color", "--no-ext-diff", previous.ref, tag.ref, "--", folder)
        return DeployDiff(_record(tag, previous, self._files(tag, previous)), text)

    def _files(self, tag: _Tag, previous: _Tag | None) -> tuple[str, ...]:
        folder = self.service_path.format(service=tag.service)
        if previous is None:
            out = self._git("diff-tree", "--root", "--no-commit-id", "--name-only", "-r", tag.commit, "--", folder)
        else:
            out = self._git("diff", "--name-only", previous.ref, tag.ref, "--", folder)
        return tuple(line for line in out.splitlines() if line)

    def _tags(self) -> list[_Tag]:
        """Annotated deploy tags, newest first (by tagger date)."""
        out = self._git("for-each-ref", "--sort=-taggerdate", f"--format={_FIELDS}", "refs/tags/")
        tags = []
        for raw in out.split("\x1e"):
            parts = raw.strip("\n").split("\x1f")
            if len(parts) != 6 or parts[1] != "tag":
                continue  # lightweight tags are not deploys
            match = self._tag_rx.match(parts[0])
            if match:
                tags.append(_tag_from_parts(parts, match.group("service"), match.group("version")))
        return sorted(tags, key=lambda t: t.at, reverse=True)

    def _git(self, *args: str) -> str:
        if not (self.repo_path / ".git").exists() and not (self.repo_path / "HEAD").exists():
            raise ToolError(f"the deploy repository {self.repo_path} does not exist or is not a git repository.")
        env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
        command = ["git", "-C", str(self.repo_path), "-c", "core.quotepath=off", "--no-pager", *args]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=self.timeout_s, env=env, check=False)
        except subprocess.TimeoutExpired as exc:
            raise ToolError(f"git did not answer within {self.timeout_s:g} s in {self.repo_path}.") from exc
        except OSError as exc:
            raise ToolError(f"cannot run git: {exc}") from exc
        if done.returncode != 0:
            raise ToolError(f"git {args[0]} failed in {self.repo_path}: {done.stderr.strip()[:400]}")
        return done.stdout


def _tag_from_parts(parts: list[str], service: str, version: str) -> _Tag:
    ref, _, date, tagger, commit, message = parts
    moment = datetime.fromisoformat(date).astimezone(UTC)
    author = _AUTHOR_LINE.search(message)
    summary = message.strip().splitlines()[0] if message.strip() else ""
    return _Tag(ref, service, version, moment, author.group(1).strip() if author else tagger, summary, commit)


def _previous(tags: list[_Tag], index: int) -> _Tag | None:
    service = tags[index].service
    return next((t for t in tags[index + 1 :] if t.service == service), None)


def _record(tag: _Tag, previous: _Tag | None, files: tuple[str, ...]) -> DeployRecord:
    before = previous.version if previous else ""
    return DeployRecord(tag.service, tag.version, tag.at, tag.author, tag.summary, tag.commit, before, files)
