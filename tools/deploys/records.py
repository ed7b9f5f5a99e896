"""What the deploy tools read, as frozen values: a deploy record, a deploy's diff, and the two tools' results; and
the text the model reads, rendered from them.

A DeploySource (tools/deploys/query.py) returns DeployRecord and DeployDiff; query_deploy_records returns a
DeployList and query_deploy_diff a DiffReport (the diff as the model saw it, with the configuration keys it
changed, old → new, and the risky statements it adds, read by tools/analysis/configdiff.py). Code reads these;
`record_line` quotes a deploy exactly as the text shows it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar

from tools.analysis.configdiff import KeyChange
from tools.base import ToolData
from tools.timerange import TimeWindow, iso_z


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


@dataclass(frozen=True)
class DeployDiff:
    record: DeployRecord
    diff: str  # unified diff of the service's folder against the previous deploy


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

    def of_version(self, version: str) -> DeployRecord | None:
        """The listed record of `version` (the newest, when it was deployed more than once)."""
        return next((r for r in self.records if r.version == version), None)


@dataclass(frozen=True)
class DiffReport(ToolData):
    """One deploy's diff as the model saw it (index lines dropped, cut at the tool's limit) and what it changed.

    `key_changes` and `risky_lines` are read from the diff as shown, so every change code cites is one the
    model's observation shows too."""

    kind: ClassVar[str] = "diff_report"
    record: DeployRecord
    diff: str
    diff_chars: int  # the diff's length before the cut (== len(diff) when nothing was cut)
    key_changes: tuple[KeyChange, ...] = ()
    risky_lines: tuple[str, ...] = ()

    @property
    def truncated(self) -> bool:
        return self.diff_chars > len(self.diff)


def render_diff(report: DiffReport) -> str:
    """A header (time, author, summary, files), then the diff, with a note when it was cut."""
    r = report.record
    lines = [f"deploy {r.service}/{r.version} at {iso_z(r.at)} by {r.author}: {r.summary}"]
    lines.append(f"diff against {r.previous_version or 'the commit before it'}, files: {', '.join(r.files) or 'none'}")
    if not report.diff:
        lines.append("(the deploy changed nothing in the service's folder)")
    elif report.truncated:
        lines += [report.diff, f"… diff truncated: showing {len(report.diff):,} of {report.diff_chars:,} characters"]
    else:
        lines.append(report.diff)
    return "\n".join(lines)


def render_deploys(found: DeployList) -> str:
    """A header with the count, then one line per deploy; for an empty window, the latest deploy before it."""
    return "\n".join([deploys_heading(found), *(record_line(r) for r in found.records)])


def deploys_heading(found: DeployList) -> str:
    """The text's first line: `deploys of order, <window>: 2 found, newest first`, or `...: none.` and the latest
    deploy before the window (for an empty window, the whole text)."""
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
    commit = f"; commit {r.commit[:10]}" if r.commit else ""
    return f"{record_head(r)}; files: {files or 'none'}{commit}"


def record_head(r: DeployRecord) -> str:
    """A record's line up to its files: `2026-11-28T15:02:00Z order/v2.8.1 (from v2.8.0) by li.wei: <summary>`."""
    previous = f" (from {r.previous_version})" if r.previous_version else ""
    return f"{iso_z(r.at)} {r.service}/{r.version}{previous} by {r.author}: {r.summary}"
