"""What CONFIRMS a cause, as opposed to what only lines up in time. Pure: reads the steps' tool observations.

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
from bot.playbook.diffs import KeyChange, key_changes_from_diff
from tools.timerange import CLOCK_PATTERN

RECOVERY_MINUTES = 15  # a recovery this long after a rollback is still "right after" it
SPIKE_SLACK_MINUTES = 2  # change points are pinned to a minute or two: a spike this early still follows the deploy
BEFORE_DEPLOY_MINUTES = 10  # a log window must start this long before the deploy to show a signature was absent

_ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d)?Z"
_RECORD = re.compile(
    rf"^(?P<at>{_ISO}) (?P<service>[\w.-]+)/(?P<version>\S+) (?:\(from (?P<previous>\S+)\) )?by ", re.MULTILINE
)
_DIFF_HEAD = re.compile(rf"^deploy (?P<service>[\w.-]+)/(?P<version>\S+) at (?P<at>{_ISO})")
_WINDOW = re.compile(r"^\S+ of (?P<service>[\w.-]+), (?P<day>\d{4}-\d\d-\d\d) (?P<hhmm>\d\d:\d\d) →", re.MULTILINE)
_STAMP = CLOCK_PATTERN  # HH:MM[:SS], or MM-DD HH:MM[:SS] when the tool's window spans two days
_SIGNATURE = re.compile(rf"^\s*\d+[.)]\s+\d[\d,]*\s*[x×]\s+(?P<text>\S.*?)\s+first (?P<first>{_STAMP})\b")
_EXAMPLE = re.compile(rf"^\s+example:\s+{_STAMP}\s+(?P<level>[A-Z]+)\s+(?P<line>.+)$")
_SPIKE = re.compile(
    rf"^\s*spike:\s*(?P<start>{_STAMP})\b.*,\s*back to (?P<level>\S.*?) by (?P<back>{_STAMP})\s*$", re.MULTILINE
)
_ERRORISH = ("ERROR", "FATAL", "CRITICAL", "WARN", "WARNING")
_IMAGE_KEYS = ("newTag", "tag", "image", "version")
_VERSION = re.compile(r"^v?\d+(?:\.\d+)+")


@dataclass(frozen=True)
class Deploy:
    service: str
    version: str
    at: datetime
    previous: str = ""


@dataclass(frozen=True)
class LogLine:
    """One signature of a query_logs observation: its text and example, when it first appeared, whether that
    first time can be trusted (the window was clustered whole, or the section lists only new signatures)."""

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


def _named_deploy(answer: str, deploys: Sequence[Deploy]) -> Deploy | None:
    """The deploy the answer names first: the cause it states (a runner-up comes later)."""
    found = [(pos, d) for d in deploys if (pos := _position(answer, d.version)) >= 0]
    return min(found, key=lambda pd: pd[0])[1] if found else None


def _position(text: str, version: str) -> int:
    match = re.search(rf"(?<![\w.]){re.escape(version)}(?![\w]|\.\d)", text)
    return match.start() if match else -1


def _by_logs(steps: Sequence[Step], deploy: Deploy) -> str:
    changes = [
        c
        for step in steps
        if step.action == "query_deploy_diff" and _diff_of(step, deploy)
        for c in key_changes_from_diff(step.observation)
    ]
    for line in _log_lines(steps):
        if not _only_after(line, deploy.at):
            continue
        for change in changes:
            named, needle = _names(line.text, change)
            if named:
                when = f"first at {line.first:%H:%M} UTC, {_minutes(line.first - deploy.at)} after the deploy"
                return f'{line.service}\'s error log "{_quote(line.text, needle)}" naming {named} ({when})'
    return ""


def _by_rollback(steps: Sequence[Step], deploy: Deploy, deploys: Sequence[Deploy]) -> str:
    rollbacks = [
        d
        for d in deploys
        if d.service == deploy.service and d.at > deploy.at and deploy.previous and d.version == deploy.previous
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


def _deploys(steps: Sequence[Step]) -> list[Deploy]:
    found: dict[tuple[str, str], Deploy] = {}
    for step in steps:
        if step.action == "query_deploy_records" and step.status == "ok":
            for m in _RECORD.finditer(step.observation):
                deploy = Deploy(m["service"], m["version"], _iso(m["at"]), m["previous"] or "")
                known = found.get((deploy.service, deploy.version))  # a version deployed again is a rollback to it
                found[(deploy.service, deploy.version)] = deploy if known is None or deploy.at < known.at else known
    return list(found.values())


def _diff_of(step: Step, deploy: Deploy) -> bool:
    head = _DIFF_HEAD.match(step.observation)
    return head is not None and (head["service"], head["version"]) == (deploy.service, deploy.version)


def _log_lines(steps: Sequence[Step]) -> Iterator[LogLine]:
    for step in steps:
        window = _WINDOW.search(step.observation) if step.action == "query_logs" and step.status == "ok" else None
        if window is not None:
            start = datetime.fromisoformat(f"{window['day']}T{window['hhmm']}:00+00:00")
            yield from _signatures(step.observation, window["service"], start)


def _signatures(observation: str, service: str, start: datetime) -> Iterator[LogLine]:
    """Each signature of the error and the new-since sections, with its example line (which names more)."""
    section, whole, pending = "", False, None
    for raw in observation.splitlines():
        if example := _EXAMPLE.match(raw):
            if pending is not None and example["level"] in _ERRORISH:
                yield LogLine(service, _message(example["line"]), *pending)
            pending = None
        elif (sig := _SIGNATURE.match(raw)) and section:
            pending = (_clock(start, sig["first"]), start, whole, section == "new")
        elif not raw.startswith(" "):
            section = _section(raw)
            whole, pending = raw.rstrip().endswith("all):"), None


def _section(header: str) -> str:
    if header.startswith("new signatures ("):
        return "new"
    is_errors = header.startswith("top ") and "signatures (" in header and "WARN" not in header.split("(")[0]
    return "errors" if is_errors else ""


def _recoveries(steps: Sequence[Step], service: str) -> Iterator[tuple[str, datetime, str, datetime]]:
    """(metric, spike start, level it came back to, when) for each spike of the service that came back."""
    for step in steps:
        if step.action != "query_metrics" or step.status != "ok" or step.args.get("service") != service:
            continue
        window = _WINDOW.search(step.observation)
        if window is None:
            continue
        start = datetime.fromisoformat(f"{window['day']}T{window['hhmm']}:00+00:00")
        metric = str(step.args.get("metric", "")).replace("_", " ")
        for m in _SPIKE.finditer(step.observation):
            yield metric, _clock(start, m["start"]), m["level"], _clock(start, m["back"])


def _clock(start: datetime, stamp: str) -> datetime:
    """[MM-DD ]HH:MM[:SS] inside a window that began at `start`: a bare time earlier than the start is the next day,
    a dated one earlier than the start's day is next year (a window across New Year)."""
    day, _, hhmm = stamp.rpartition(" ")
    parts = [int(p) for p in hhmm.split(":")]
    at = start.replace(hour=parts[0], minute=parts[1], second=parts[2] if len(parts) > 2 else 0)
    if day:
        month, _, mday = day.partition("-")
        at = at.replace(month=int(month), day=int(mday))
        return at.replace(year=at.year + 1) if at < start - timedelta(days=1) else at
    return at + timedelta(days=1) if at < start - timedelta(minutes=1) else at


def _iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _minutes(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    return f"{minutes} min" if minutes < 120 else f"{minutes // 60} h"


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _message(line: str) -> str:
    """An example line without its service, host, logger and trace id: what the application said."""
    line = re.sub(r"\s+trace=\w+$", "", line)
    return line.split(": ", 1)[1] if re.match(r"^\S+ \S+ [\w.$-]+: ", line) else line


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
