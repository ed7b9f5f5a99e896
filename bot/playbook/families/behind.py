"""Data left behind by an operation: the asked service is healthy, its neighbours say what they read is behind.

A replica whose replay someone paused, a snapshot someone froze, a sync someone stopped: nothing fails, every metric
stays flat, and the services that read the data say it is old ("replica snapshot behind primary", "replay lag above
60 s", "not visible on replica yet"). Those warnings, new since the window began, date the onset, and an operation a
named actor ran near them just before it (operations.py) is the cause; no deploy is needed, and none is blamed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import tools.analysis.ranking as ranking
from bot.playbook.families.operations import check_operations
from bot.playbook.findings import Findings
from bot.playbook.probes import ProbeRun
from tools.results import logs_of, signatures_of

_BEHIND_RX = re.compile(
    r"\b(?:stale|lag|lagging|behind|older than|freshness|not visible|out of date|outdated|not replayed)\b",
    re.IGNORECASE,
)
NEAR_HOPS = 3  # the data flows further than the calls: the store the asked service's backend reads
NEW_AFTER_MINUTES = 30  # a warning first seen this long after the window began is new in it


def check_behind(run: ProbeRun, findings: Findings, topology: Mapping[str, Sequence[str]], target: str) -> None:
    """Warnings near `target` that say data is behind, new in the window: an operation just before their onset."""
    if "query_logs" not in run.tools:
        return
    near = [s for s in ranking.neighbourhood(topology, target, hops=NEAR_HOPS) if s != target]
    thought = (
        f"{target} looks healthy, yet users see old data: reading the warnings of the services within "
        f"{NEAR_HOPS} hops for lines that say what they read is behind, and since when."
    )
    args = {"service": "*", "level": "ERROR,WARN", "range": run.window.range_arg, "limit": 200}
    step = run.probe(thought, "query_logs", args)
    if step is None or (summary := logs_of(step)) is None:
        return
    found = [*signatures_of(step, "ERROR"), *signatures_of(step, "WARN")]
    behind = [
        s
        for s in found
        if s.example.service in near
        and (s.first_at - summary.window.start).total_seconds() > NEW_AFTER_MINUTES * 60
        and _BEHIND_RX.search(s.template)
    ]
    if not behind:
        return
    first = min(behind, key=lambda s: s.first_at)
    operation = check_operations(run, set(near), first.first_at)
    if operation is not None:
        findings.operation = operation
        findings.behind = f'{first.example.service} logs since {first.first_at:%H:%M} UTC: "{first.example.message}"'
