"""Runtime flags tied to what the runtime itself logs: a GC flag changed inside an options string, and GC pauses since.

A JVM or Go runtime reports its collections in its own log (`[gc] GC(42) Pause Full ... 1312ms`), usually at INFO or
DEBUG, not as an error: an errors-first read never sees it. When a deploy suspect changed a runtime flag (split out of
`JAVA_TOOL_OPTIONS=-Xmx6g -XX:+UseParallelGC`, tools/analysis/changeclass.py), the deployed service's lines of every
level that began after the deploy and were absent the hour before are read; one that shows what the flag governs (a GC
pause, a heap run out) ties the flag to the symptom. A flag whose runtime logs nothing new is left as it was scored.
"""

from __future__ import annotations

from datetime import timedelta

import tools.analysis.changeclass as changeclass
from bot.playbook.evidence import LogSignature, new_signatures_in
from bot.playbook.findings import Findings, Suspect
from bot.playbook.probes import ProbeRun, iso_from_moment
from tools.analysis.configdiff import KeyChange
from tools.analysis.reasons import Reason

RUNTIME_SHOWS = changeclass.EXPLAINS[changeclass.RUNTIME] & (changeclass.SPECIFIC | {changeclass.MEMORY})
BASELINE = timedelta(hours=1)  # the lines before the deploy that a new line must be absent from
SHOWN_POINTS = 3  # the mechanism, seen in the service's own runtime: as strong as a changed pool's pending connections


def weigh_runtime_flags(run: ProbeRun, findings: Findings) -> None:
    """Each deploy suspect that changed a runtime flag: +SHOWN_POINTS when its service's lines since the deploy, at
    any level, newly show GC pauses or a heap run out."""
    if "query_logs" not in run.tools:
        return
    weighed = False
    for suspect in findings.suspects:
        flags = _runtime_flags(suspect)
        if suspect.deploy is None or not flags:
            continue
        shown = _shown_since_deploy(run, suspect)
        if shown is not None:
            names = ", ".join(dict.fromkeys(changeclass.last_part(c.key) for c in flags[:2]))
            why = f"{suspect.service}'s own runtime lines since the deploy show what {names} governs: {shown.quoted}"
            suspect.add([Reason(SHOWN_POINTS, why)])
            weighed = True
    if weighed:
        findings.suspects.sort(key=lambda s: -s.score)


def _runtime_flags(suspect: Suspect) -> list[KeyChange]:
    return [c for c in changeclass.expanded(suspect.key_changes) if changeclass.class_of(c) == changeclass.RUNTIME]


def _shown_since_deploy(run: ProbeRun, suspect: Suspect) -> LogSignature | None:
    """The biggest signature of the service, any level, new since the deploy, that reports GC or the heap."""
    deploy = suspect.deploy
    if deploy is None:
        return None
    thought = (
        f"{suspect.service} {deploy.version} changed a runtime flag; the runtime reports its collections in its own "
        f"lines (often at INFO), so reading {suspect.service}'s lines of every level that began after the deploy at "
        f"{deploy.at:%H:%M} UTC and were absent the hour before."
    )
    args = {
        "service": suspect.service,
        "level": "",
        "start": iso_from_moment(deploy.at - BASELINE),
        "end": iso_from_moment(run.window.end),
        "onset": iso_from_moment(deploy.at),
    }
    step = run.probe(thought, "query_logs", args)
    found = new_signatures_in(step) if step is not None else []
    shown = [sig for sig in found if changeclass.symptoms_in_text(sig.text) & RUNTIME_SHOWS]
    return max(shown, key=lambda sig: sig.count) if shown else None  # the pauses repeat; a start-up banner does not
