"""What the deploy tools read, as frozen values: a deploy record, a deploy's diff, and the two tools' results.

A DeploySource (tools/deploys/query.py) returns DeployRecord and DeployDiff; query_deploy_records returns a
DeployList and query_deploy_diff a DiffReport (the diff as the model saw it, with the configuration keys it
changed, old → new, and the risky statements it adds, read by tools/analysis/configdiff.py). Code reads these;
the model reads the text tools/deploys/query.py renders from them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar

from tools.analysis.configdiff import KeyChange
from tools.base import ToolData
from tools.timerange import TimeWindow


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
