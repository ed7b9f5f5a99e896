"""Reading deploys out of tool observations: deploy records, and what a deploy's diff changed.

What a diff changed (config keys, risky statements) is read in tools/analysis/configdiff.py, which find_changes
shares. Lenient on purpose, like bot/playbook/evidence.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from bot.playbook.evidence import ISO_TIME_RX, moment_from_text

# Re-exported: what a diff changed is read in tools/analysis/configdiff.py now; code that reads it from here
# keeps working.
from tools.analysis.configdiff import ABSENT, KeyChange, key_changes_from_diff, risky_lines_from_diff

__all__ = ["ABSENT", "DeployRecord", "KeyChange", "deploys_from_text", "key_changes_from_diff", "risky_lines_from_diff"]


@dataclass(frozen=True)
class DeployRecord:
    service: str
    version: str
    at: datetime | None
    line: str  # the observation line it came from, cited in the conclusion


_VERSION_RX = re.compile(r"(?<![\w.])v?\d+\.\d+(?:\.\d+)*(?:[-+][0-9A-Za-z.]+)?(?![\w.])")


def deploys_from_text(observation: str, service: str, now: datetime) -> list[DeployRecord]:
    """One record per observation line that carries a version, oldest first."""
    records = []
    for line in observation.splitlines():
        version = _version_in(line, service)
        if version is None:
            continue
        at = moment_from_text(line, now)
        records.append(DeployRecord(service, version, at, line.strip()))
    unique = {(r.version, r.at): r for r in records}
    return sorted(unique.values(), key=lambda r: r.at or datetime.min.replace(tzinfo=UTC))


def _version_in(line: str, service: str) -> str | None:
    tagged = re.search(rf"{re.escape(service)}/(\S+?)(?=[\s,;)]|$)", line)
    if tagged:
        return tagged.group(1)
    line_without_times = ISO_TIME_RX.sub(" ", line)
    match = _VERSION_RX.search(line_without_times)
    return match.group() if match else None
