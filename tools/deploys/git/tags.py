"""Deploy tags: annotated and lightweight tags whose name matches the tag pattern (`{service}/{version}`).

An annotated tag's date, tagger and message are the deploy's (an `author: ...` line in the message names the author);
a lightweight tag has none of its own, so its commit's committer date, author and subject stand in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from tools.deploys.git.cli import GitRepo

# refname, object type, tagger date, tagger, peeled commit, object, committer date, author, contents
_FIELDS = (
    "%(refname)%1f%(objecttype)%1f%(taggerdate:iso-strict)%1f%(taggername)%1f%(*objectname)%1f%(objectname)"
    "%1f%(committerdate:iso-strict)%1f%(authorname)%1f%(contents)%1e"
)
_AUTHOR_LINE = re.compile(r"^author:\s*(.+)$", re.MULTILINE | re.IGNORECASE)


@dataclass(frozen=True)
class Tag:
    ref: str
    service: str
    version: str
    at: datetime
    author: str
    summary: str
    commit: str
    annotated: bool


@dataclass(frozen=True)
class TagScan:
    """The deploy tags, newest first, and every tag name the repository has (to say why none matched)."""

    tags: tuple[Tag, ...]
    all_names: tuple[str, ...]


class TagPattern:
    """`{service}/{version}` as regexes over `refs/tags/...`. Where a separator could also sit inside a service name
    (`order-api-v1.2.0` under `{service}-{version}`), a version that starts with a digit (or v and a digit) wins:
    service `order-api`, version `v1.2.0`; otherwise the longest service name does."""

    def __init__(self, pattern: str) -> None:
        if pattern.count("{service}") != 1 or pattern.count("{version}") != 1:
            raise ValueError(f"tag_pattern {pattern!r} needs {{service}} and {{version}} once each")
        self.pattern = pattern
        literal = re.escape(pattern).replace(r"\{service\}", "{service}").replace(r"\{version\}", "{version}")
        self._rx = [
            re.compile("^refs/tags/" + literal.format(service=service, version=version) + "$")
            for service, version in (
                (r"(?P<service>[A-Za-z0-9._-]+?)", r"(?P<version>v?\d[^/]*)"),
                (r"(?P<service>[A-Za-z0-9._-]+)", r"(?P<version>[^/]+)"),
            )
        ]

    def match(self, ref: str) -> tuple[str, str] | None:
        """(service, version) of a tag ref, or None."""
        for rx in self._rx:
            found = rx.match(ref)
            if found:
                return found.group("service"), found.group("version")
        return None


def scan_tags(repo: GitRepo, pattern: TagPattern) -> TagScan:
    """Every tag that matches `pattern`, newest first, with the names of all tags."""
    out = repo.run("for-each-ref", f"--format={_FIELDS}", "refs/tags/")
    tags, names = [], []
    for raw in out.split("\x1e"):
        parts = raw.strip("\n").split("\x1f")
        if len(parts) != 9:
            continue
        names.append(parts[0].removeprefix("refs/tags/"))
        match = pattern.match(parts[0])
        tag = _tag(parts, *match) if match else None
        if tag is not None:
            tags.append(tag)
    return TagScan(tuple(sorted(tags, key=lambda t: t.at, reverse=True)), tuple(names))


def _tag(parts: list[str], service: str, version: str) -> Tag | None:
    ref, kind, tag_date, tagger, peeled, obj, commit_date, author, message = parts
    if kind == "tag" and peeled:  # annotated, pointing at a commit
        found = _AUTHOR_LINE.search(message)
        who = found.group(1).strip() if found else tagger
        return Tag(ref, service, version, _utc(tag_date), who, _subject(message), peeled, True)
    if kind == "commit":  # lightweight: the commit speaks for it
        return Tag(ref, service, version, _utc(commit_date), author, _subject(message), obj, False)
    return None  # a tag of a tree or a blob is no deploy


def _subject(message: str) -> str:
    text = message.strip()
    return text.splitlines()[0] if text else ""


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def previous_tag(tags: tuple[Tag, ...], index: int) -> Tag | None:
    """The service's tag before tags[index] (tags are newest first)."""
    service = tags[index].service
    return next((t for t in tags[index + 1 :] if t.service == service), None)
