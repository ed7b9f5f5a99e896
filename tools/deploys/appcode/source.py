"""What every source of application commits shares: the version → ref mapping, the bounds on what is shown, and
which versions a deploy changed its image between.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from tools.base import ToolError
from tools.deploys.git.versions import CONFIG_PREFIX, image_tags
from tools.deploys.records import AppCommit, CodeChanges, DeployDiff

# What a ref built from a version may hold: no leading "-" (an option), no "..", no spaces or shell characters.
_REF_RX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/+@-]{0,127}$")
_SHA_IN_RX = re.compile(r"(?<![0-9a-f])([0-9a-f]{7,40})(?![0-9a-f])")
_RELEASE_RX = re.compile(r"^v?\d+(\.\d+)*([-+][0-9A-Za-z.]+)?$")
_NOT_IMAGE_RX = re.compile(r"^rev\d+$|-config\.\d+$")


class CodeSource(Protocol):
    """The application's commits of one service between two image versions."""

    def changes(self, service: str, old: str, new: str) -> CodeChanges:
        """Commits after `old` up to `new`, newest first (at most the source's maximum); errors in `.error`."""
        ...


@dataclass(frozen=True)
class RefPattern:
    """How an image version names a ref of the application repository: `{version}` (the tag is the version),
    `v{version}` (a tag with a v), `{sha}` (the hex commit id inside the version: `sha-3f2a9c1`, `1.4.0-3f2a9c1`),
    `release/{service}-{version}`."""

    pattern: str = "{version}"

    def ref(self, service: str, version: str) -> str:
        """The ref; a ToolError when the version holds no sha the pattern asks for, or the ref is not a safe one."""
        sha = _SHA_IN_RX.search(version)
        if "{sha}" in self.pattern and sha is None:
            raise ToolError(f"version {version!r} holds no commit id for the ref pattern {self.pattern!r}")
        ref = self.pattern.format(version=version, service=service, sha=sha.group(1) if sha else "")
        if not _REF_RX.match(ref) or ".." in ref:
            raise ToolError(f"{ref!r} (from version {version!r}) is not a ref opsbot reads")
        return ref


def image_change(found: DeployDiff) -> tuple[str, str] | None:
    """(old tag, new tag) when the deploy changed an image tag: read from its image keys, else from its versions
    when both are release versions (v1.4.0, 2.3.1-rc1); None for a configuration-only deploy."""
    for change in found.changed_keys():
        old, new = image_tags(change)
        if old and new and old != new:
            return old, new
    r = found.record
    versions = (r.previous_version, r.version)
    if all(_RELEASE_RX.match(v) and not _NOT_IMAGE_RX.search(v) for v in versions) and r.version != r.previous_version:
        return r.previous_version, r.version
    if all(v and not v.startswith(CONFIG_PREFIX) and _SHA_IN_RX.fullmatch(v) for v in versions):
        return r.previous_version, r.version
    return None


def bounded(
    service: str, old: str, new: str, where: str, commits: Sequence[AppCommit], total: int, max_files: int
) -> CodeChanges:
    """The changes with each commit's files cut to `max_files` (files_total keeps the count)."""
    shown = tuple(
        AppCommit(c.sha, c.at, c.author, c.subject, c.files[:max_files], max(c.files_total, len(c.files)))
        for c in commits
    )
    return CodeChanges(service, old, new, where, shown, max(total, len(shown)))


def failed(service: str, old: str, new: str, where: str, error: str) -> CodeChanges:
    """Changes that could not be read, and why (the diff is still shown)."""
    return CodeChanges(service, old, new, where, error=error)
