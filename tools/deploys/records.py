"""What the deploy tools read, as frozen values: a deploy record, a deploy's diff, and the two tools' results; and
the text the model reads, rendered from them.

A DeploySource (tools/deploys/query.py) returns DeployRecord and DeployDiff; query_deploy_records returns a
DeployList and query_deploy_diff a DiffReport (the diff as the model saw it, with the configuration keys it
changed, old → new, and the risky statements it adds, read by tools/analysis/configdiff.py). Code reads these;
`record_line` quotes a deploy exactly as the text shows it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import ClassVar

from tools.analysis.configdiff import KeyChange, key_changes_from_diff
from tools.base import ToolData
from tools.timerange import TimeWindow, iso_z

_WORD_RX = re.compile(r"[A-Za-z][A-Za-z0-9_]+")


@dataclass(frozen=True)
class DeployRecord:
    service: str
    version: str
    at: datetime
    author: str
    summary: str
    commit: str = ""
    previous_version: str = ""
    files: tuple[str, ...] = ()
    environment: str = ""  # as the source records it ("" = the source does not record one)
    status: str = ""  # the source's own word for the outcome (success, failure, Succeeded ...; "" = not recorded)
    # The rollout as it happened, where the source records it (Argo CD's deployStartedAt / deployedAt, a deploy
    # index's fields, the ReplicaSets' scaling): None = not recorded.
    started: datetime | None = None
    finished: datetime | None = None
    action: str = ""  # "" = a deploy; "rollback" (back to an earlier version) or "restart" (same version again)
    rolled_back_at: datetime | None = None  # a later deploy went back to the version before this one


@dataclass(frozen=True)
class AppCommit:
    """One commit of the application's own repository between two image versions."""

    sha: str
    at: datetime
    author: str
    subject: str
    files: tuple[str, ...] = ()  # the first few it changed
    files_total: int = 0  # how many it changed in all


@dataclass(frozen=True)
class CodeChanges:
    """The application's commits behind an image bump: from `old` to `new` (the image tags), newest first."""

    service: str
    old: str
    new: str
    where: str  # the repository read, for the text: "git /srv/src/order", "GitHub acme/order"
    commits: tuple[AppCommit, ...] = ()  # newest first, at most the tool's maximum
    total: int = 0  # commits between the two versions, shown or not
    error: str = ""  # why they could not be read (a missing tag, an unreachable API)


@dataclass(frozen=True)
class DeployDiff:
    record: DeployRecord
    diff: str  # unified diff of the service's folder against the previous deploy
    # The keys it changed with their full paths, read from both versions of each file; None = the source could not
    # read the files, so the keys come from the diff's hunks (DeployDiff.changed_keys).
    key_changes: tuple[KeyChange, ...] | None = None
    notes: tuple[str, ...] = ()  # how the keys were read where not whole, what could not be read

    def changed_keys(self) -> tuple[KeyChange, ...]:
        """The full-path changes when the source read both versions, else those the hunks show."""
        return self.key_changes if self.key_changes is not None else tuple(key_changes_from_diff(self.diff))


@dataclass(frozen=True)
class DeployList(ToolData):
    """The deploys of one service (None: every service) in a window, newest first; when there were none, the
    newest one before the window (or why that could not be read)."""

    kind: ClassVar[str] = "deploy_list"
    service: str | None
    window: TimeWindow
    records: tuple[DeployRecord, ...]  # newest first, at most the tool's maximum
    total: int  # found in the window, shown or not
    latest_before: DeployRecord | None = None  # read only when the window has none
    earlier_error: str = ""  # why the deploys before the window could not be read
    notes: tuple[str, ...] = ()  # what the source left out and why: filtered environments, failed deploys, commits

    def of_version(self, version: str) -> DeployRecord | None:
        """The listed record of `version` (the newest, when it was deployed more than once)."""
        return next((r for r in self.records if r.version == version), None)


@dataclass(frozen=True)
class DiffReport(ToolData):
    """One deploy's diff as the model saw it (index lines dropped, cut at the tool's limit) and what it changed.

    `key_changes` carry full paths read from both versions of each file where the source could (the text lists them
    above the diff), else the keys the diff as shown gives; `risky_lines` are read from the diff as shown. So every
    change code cites is one the model's observation shows too. `notes` say where keys came from hunks."""

    kind: ClassVar[str] = "diff_report"
    record: DeployRecord
    diff: str
    diff_chars: int  # the diff's length before the cut (== len(diff) when nothing was cut)
    key_changes: tuple[KeyChange, ...] = ()
    risky_lines: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    whole_files: bool = False  # key_changes were read from both versions of each file, not from the hunks
    code: CodeChanges | None = None  # the application's commits when the deploy changed the image tag

    @property
    def truncated(self) -> bool:
        return self.diff_chars > len(self.diff)


def render_diff(report: DiffReport) -> str:
    """A header (time, author, summary, files), then the diff, with a note when it was cut."""
    r = report.record
    lines = [f"deploy {r.service}/{r.version} at {iso_z(r.at)} by {r.author}: {r.summary}"]
    lines.append(f"diff against {r.previous_version or 'the commit before it'}, files: {', '.join(r.files) or 'none'}")
    if report.whole_files and report.key_changes:
        lines.append("changed keys (full paths, read from both versions of each file):")
        lines += [f"  {c.key}: {c.old} → {c.new}" + (f" ({c.path})" if c.path else "") for c in report.key_changes]
    lines += [f"note: {n}" for n in report.notes]
    lines += code_lines(report.code) if report.code is not None else []
    if not report.diff:
        lines.append("(the deploy changed nothing in the service's folder)")
    elif report.truncated:
        lines += [report.diff, f"… diff truncated: showing {len(report.diff):,} of {report.diff_chars:,} characters"]
    else:
        lines.append(report.diff)
    return "\n".join(lines)


def code_commits(report: DiffReport) -> tuple[AppCommit, ...]:
    """The application commits a deploy's image bump brought, newest first (() when none were read)."""
    return report.code.commits if report.code is not None else ()


def commits_mentioning(report: DiffReport, words: Iterable[str]) -> tuple[AppCommit, ...]:
    """The image bump's commits whose subject or files name one of `words` (a class, a setting, a module from the
    evidence: `DiscountService`, `expireAfterWrite`), newest first; words of under 4 characters are ignored."""
    wanted = {w.lower() for w in words if len(w) >= 4}
    if not wanted:
        return ()
    found = []
    for c in code_commits(report):
        tokens = {t.lower() for t in _WORD_RX.findall(" ".join((c.subject, *c.files)))}
        if wanted & tokens:
            found.append(c)
    return tuple(found)


def code_lines(code: CodeChanges) -> list[str]:
    """`code from v1.4.0 to v1.5.0 (git ...): 3 commits, newest first`, a line per commit, then what was left out."""
    head = f"code from {code.old} to {code.new} ({code.where})"
    if code.error:
        return [f"{head}: could not be read: {code.error}"]
    if not code.commits:
        return [f"{head}: no commits between the two versions"]
    lines = [f"{head}: {code.total} commit{'s' if code.total != 1 else ''}, newest first"]
    for c in code.commits:
        lines.append(f"  {c.sha[:7]} {iso_z(c.at)} {c.author}: {c.subject}")
        more = f" +{c.files_total - len(c.files)} more" if c.files_total > len(c.files) else ""
        lines.append(f"    files: {', '.join(c.files) or 'none'}{more}")
    if code.total > len(code.commits):
        lines.append(f"  … {code.total - len(code.commits)} older commits not shown")
    return lines


def render_deploys(found: DeployList) -> str:
    """A header with the count, then one line per deploy (for an empty window, the latest deploy before it), then
    what the source's filters and layout left out."""
    notes = [f"note: {n}" for n in found.notes]
    return "\n".join([deploys_heading(found), *(record_line(r) for r in found.records), *notes])


def deploys_heading(found: DeployList) -> str:
    """The text's first line: `deploys of order, <window>: 2 found, newest first`, or `...: none.` and the latest
    deploy before the window."""
    head = f"deploys of {found.service or 'every service'}, {found.window.describe()}"
    if not found.records:
        return f"{head}: none.{_before_text(found)}"
    more = f" (showing the newest {len(found.records)})" if found.total > len(found.records) else ""
    return f"{head}: {found.total} found, newest first{more}"


def _before_text(found: DeployList) -> str:
    if found.earlier_error:
        return f" Earlier deploys could not be read: {found.earlier_error}"
    r = found.latest_before
    if r is None:
        return " There are no earlier deploys either."
    return f" The latest before it: {release_at(r)}."


def release_at(r: DeployRecord) -> str:
    """`order/v2.8.1 at 2026-11-28T15:02:00Z`."""
    return f"{r.service}/{r.version} at {iso_z(r.at)}"


def record_line(r: DeployRecord) -> str:
    """`2026-11-28T15:02:00Z order/v2.8.1 (from v2.8.0) by li.wei: <summary>; files: ...; commit <sha>`."""
    files = ", ".join(r.files[:6]) + (f" +{len(r.files) - 6} more" if len(r.files) > 6 else "")
    labelled = (("environment", r.environment), ("status", r.status))
    where = "".join(f"; {name} {value}" for name, value in labelled if value)
    commit = f"; commit {r.commit[:10]}" if r.commit else ""
    return f"{record_head(r)}; files: {files or 'none'}{where}{rollout_text(r)}{commit}"


def rollout_text(r: DeployRecord) -> str:
    """`; rolled out 14:02 → 14:09 (7 min); rolled back at 14:20` (UTC, as the line's time), as recorded."""
    parts = []
    if r.action:
        parts.append(f"a {r.action}" + (f" to {r.version}" if r.action == "rollback" else ""))
    if r.started is not None and r.finished is not None:
        minutes = (r.finished - r.started).total_seconds() / 60
        parts.append(f"rolled out {_clock(r.started)} → {_clock(r.finished)} ({minutes:.0f} min)")
    elif r.started is not None:
        parts.append(f"rollout started {_clock(r.started)}, no finish recorded")
    elif r.finished is not None:
        parts.append(f"rollout finished {_clock(r.finished)}")
    if r.rolled_back_at is not None:
        parts.append(f"rolled back at {_clock(r.rolled_back_at)}")
    return "".join(f"; {p}" for p in parts)


def _clock(moment: datetime) -> str:
    """`14:02` (UTC); a rollout that spans midnight still reads right beside the line's full ISO time."""
    return moment.astimezone(UTC).strftime("%H:%M")


def with_rollbacks(records: tuple[DeployRecord, ...]) -> tuple[DeployRecord, ...]:
    """Records (newest first) with rollbacks marked: a deploy back to the version an earlier deploy replaced, from
    the version that deploy brought, is a rollback, and the earlier one was rolled back at its time."""
    out = list(records)
    for i, newer in enumerate(out):
        for j in range(i + 1, len(out)):
            older = out[j]
            if older.service != newer.service or older.environment != newer.environment:
                continue
            if older.version == newer.previous_version and older.previous_version == newer.version:
                out[i] = replace(newer, action=newer.action or "rollback")
                if older.rolled_back_at is None:
                    out[j] = replace(older, rolled_back_at=newer.at)
            break  # only the deploy just before it in the same place can be the one rolled back
    return tuple(out)


def record_head(r: DeployRecord) -> str:
    """A record's line up to its files: `2026-11-28T15:02:00Z order/v2.8.1 (from v2.8.0) by li.wei: <summary>`."""
    previous = f" (from {r.previous_version})" if r.previous_version else ""
    return f"{iso_z(r.at)} {r.service}/{r.version}{previous} by {r.author}: {r.summary}"
