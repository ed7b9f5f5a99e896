"""What CONFIRMS a cause, as opposed to what only lines up in time. Pure: reads the data of the steps' tools.

A careful SRE calls a cause confirmed only on evidence that would look different if the cause were wrong:
- the logs: an error signature that appears only AFTER the suspect deploy (its first line comes after the deploy,
  in a window that starts well before it and was clustered whole; or it is listed as new since an onset that
  follows the deploy) AND names what that deploy changed: a changed key by its own compound name
  (`commandTimeout` in `RedisCommandTimeoutException`), or a changed dependency address (`http://rates:8080/v1/rates`);
- a rollback: a later deploy took the service back to the version before the suspect one, and the symptom came
  back to its level within RECOVERY_MINUTES after that rollback (not before it).
Timing, a suspect's score, the model's or the playbook's own words: none of these confirm. The confirmation is
about the cause the answer names first (its deploy version); evidence about another deploy confirms nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.engine.types import Step, Trace
from tools.analysis.configdiff import KeyChange
from tools.deploys.records import DeployRecord
from tools.logs.summary import LogSummary, SignatureBlock
from tools.metrics.series import value_text
from tools.results import deploys_of, diff_of, logs_of, series_of

RECOVERY_MINUTES = 15  # a recovery this long after a rollback is still "right after" it
SPIKE_SLACK_MINUTES = 2  # change points are pinned to a minute or two: a spike this early still follows the deploy
BEFORE_DEPLOY_MINUTES = 10  # a log window must start this long before the deploy to show a signature was absent

_ERRORISH = ("ERROR", "FATAL", "CRITICAL", "WARN", "WARNING")
_IMAGE_KEYS = ("newTag", "tag", "image", "version")
_VERSION = re.compile(r"^v?\d+(?:\.\d+)+")


@dataclass(frozen=True)
class LogLine:
    """One signature query_logs found: its example's message, when it first appeared, whether that first time can
    be trusted (the window was clustered whole, or the block lists only signatures new since an onset)."""

    service: str
    text: str
    first: datetime
    window_start: datetime
    whole: bool
    new_since: bool


def confirmation_from_trace(trace: Trace) -> str:
    """What confirms the answer's cause, in words ("" when nothing does, which is the usual case)."""
    if not trace.complete or not trace.steps:
        return ""
    deploys = _deploys(trace.steps)
    suspect = _named_deploy(trace.answer, deploys)
    if suspect is None:
        return ""
    return _by_logs(trace.steps, suspect) or _by_rollback(trace.steps, suspect, deploys)


def _named_deploy(answer: str, deploys: Sequence[DeployRecord]) -> DeployRecord | None:
    """The deploy the answer names first: the cause it states (a runner-up comes later)."""
    found = [(pos, d) for d in deploys if (pos := _position(answer, d.version)) >= 0]
    return min(found, key=lambda pd: pd[0])[1] if found else None


def _position(text: str, version: str) -> int:
    match = re.search(rf"(?<![\w.]){re.escape(version)}(?![\w]|\.\d)", text)
    return match.start() if match else -1


def _by_logs(steps: Sequence[Step], deploy: DeployRecord) -> str:
    changes = [c for step in steps for c in _key_changes(step, deploy)]
    for line in _log_lines(steps):
        if not _only_after(line, deploy.at):
            continue
        for change in changes:
            named, needle = _names(line.text, change)
            if named:
                when = f"first at {line.first:%H:%M} UTC, {_minutes(line.first - deploy.at)} after the deploy"
                return f'{line.service}\'s error log "{_quote(line.text, needle)}" naming {named} ({when})'
    return ""


def _by_rollback(steps: Sequence[Step], deploy: DeployRecord, deploys: Sequence[DeployRecord]) -> str:
    rollbacks = [
        d
        for d in deploys
        if d.service == deploy.service
        and d.at > deploy.at
        and deploy.previous_version
        and d.version == deploy.previous_version
    ]
    for rollback in sorted(rollbacks, key=lambda d: d.at):
        for metric, start, level, back in _recoveries(steps, deploy.service):
            began_after_deploy = start >= deploy.at - timedelta(minutes=SPIKE_SLACK_MINUTES)
            if began_after_deploy and start < rollback.at <= back <= rollback.at + timedelta(minutes=RECOVERY_MINUTES):
                return (
                    f"the rollback to {rollback.version} at {rollback.at:%H:%M} UTC: {deploy.service} {metric} "
                    f"back to {level} by {back:%H:%M} UTC"
                )
    return ""


def _only_after(line: LogLine, deploy_at: datetime) -> bool:
    if line.first < deploy_at:
        return False
    return line.new_since or (line.whole and line.window_start <= deploy_at - timedelta(minutes=BEFORE_DEPLOY_MINUTES))


def _names(text: str, change: KeyChange) -> tuple[str, str]:
    """The changed key or address as the log line names it, and the words that name it (("", "") when it does not)."""
    leaf = re.split(r"[.\[\]]", change.key.strip("]"))[-1] or change.key
    if leaf in _IMAGE_KEYS or _VERSION.match(change.new):
        return "", ""  # a log naming the new version proves the deploy happened, not that it broke anything
    words = [w for w in re.split(r"[_\-]|(?<=[a-z0-9])(?=[A-Z])", leaf) if w]
    if len(words) >= 2 and _squash(leaf) in _squash(text):
        return change.key, leaf
    new = change.new.strip("'\" ")
    if len(new) >= 5 and re.search(r"[/:]", new) and new in text:  # an address: a URL, host:port, a path
        return f"{change.key} = {new}", new
    return "", ""


def _deploys(steps: Sequence[Step]) -> list[DeployRecord]:
    found: dict[tuple[str, str], DeployRecord] = {}
    for step in steps:
        listed = deploys_of(step) if step.status == "ok" else None
        for deploy in listed.records if listed else ():
            known = found.get((deploy.service, deploy.version))  # a version deployed again is a rollback to it
            found[(deploy.service, deploy.version)] = deploy if known is None or deploy.at < known.at else known
    return list(found.values())


def _key_changes(step: Step, deploy: DeployRecord) -> tuple[KeyChange, ...]:
    """What the step's diff changed, when it is the diff of `deploy`."""
    report = diff_of(step)
    if report is None or (report.record.service, report.record.version) != (deploy.service, deploy.version):
        return ()
    return report.key_changes


def _log_lines(steps: Sequence[Step]) -> Iterator[LogLine]:
    """Each error signature (and each signature new since an onset) of the steps' query_logs, with its example."""
    for step in steps:
        summary = logs_of(step) if step.status == "ok" else None
        if summary is None:
            continue
        errors = summary.signatures
        if errors is not None and "WARN" not in errors.levels:
            yield from _signatures(summary, errors, new_since=False)
        if summary.onset is not None and summary.onset.new is not None:
            yield from _signatures(summary, summary.onset.new, new_since=True)


def _signatures(summary: LogSummary, block: SignatureBlock, *, new_since: bool) -> Iterator[LogLine]:
    for sig in block.top:
        if sig.example.level in _ERRORISH:
            service = summary.service or sig.example.service
            yield LogLine(service, sig.example.message, sig.first_at, summary.window.start, block.whole, new_since)


def _recoveries(steps: Sequence[Step], service: str) -> Iterator[tuple[str, datetime, str, datetime]]:
    """(metric, spike start, level it came back to, when) for each spike of the service that came back."""
    for step in steps:
        series = series_of(step) if step.status == "ok" else None
        if series is None or series.service != service:
            continue
        metric = series.metric.replace("_", " ")
        for spike in series.spikes:
            yield metric, spike.start, f"~{value_text(spike.after, series.unit)}", spike.back_at


def _minutes(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    return f"{minutes} min" if minutes < 120 else f"{minutes // 60} h"


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _quote(text: str, needle: str, max_chars: int = 90) -> str:
    """The message, cut to `max_chars` so that the words naming the change stay in it."""
    if len(text) <= max_chars:
        return text
    found = text.lower().find(needle.lower())
    end = found + len(needle)
    if found < 0 or end <= max_chars - 1:
        return text[: max_chars - 1] + "…"
    start = min(end + 20, len(text)) - (max_chars - 1)
    return "…" + text[start : start + max_chars - 1]
