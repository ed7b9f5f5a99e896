"""What a step FOUND, in the words people use in an incident channel. Pure: reads the tools' observation text.

"diff: hikari.maximumPoolSize 50 → 200", "logs: 256× HikariPool-1 - Connection is not available, from 15:05",
"order p99 latency 202 ms → 1,221 ms at 15:07 (x6.1)": findings, not queries. Times are read relative to the
deploy the run found ("3 min after the deploy"). A step whose text this module does not know keeps its first
telling line, so nothing is ever hidden, only shortened.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.engine.types import Step

_DAY = r"(?:\d\d-\d\d )?"  # the date tools.timerange.CLOCK_PATTERN allows (a window over two days)
_CHANGE = re.compile(rf"^change:\s*{_DAY}(\d\d:\d\d)\s+(.+?)\s*->\s*(.+?)(?:\s+\((x[\d.,]+)\))?$", re.MULTILINE)
_NO_CHANGE = re.compile(r"^change:\s*none", re.MULTILINE)
_DEPLOY = re.compile(
    r"^\d{4}-\d\d-\d\dT(\d\d:\d\d):\d\dZ (\S+?)/(\S+) (?:\(from (\S+)\) )?by (\S+?): "
    r"(.*?)(?:; files:|$)",
    re.MULTILINE,
)
_DEPLOY_COUNT = re.compile(r": (\d+) found")
_YAML_KEY = re.compile(r"^([-+ ])(\s*)([\w.-]+):\s*(.*)$")
_LOG_MATCHED = re.compile(r"^matched (\d[\d,]*) lines", re.MULTILINE)
_LOG_TOP = re.compile(rf"^1\. (\d[\d,]*)x (.+?)(?: \[[\w.$]+\])?\s+first {_DAY}(\d\d:\d\d)", re.MULTILINE)
_LOG_EXAMPLE = re.compile(rf"^\s*example: {_DAY}\S+ \S+ \S+ \S+ [\w.$-]+: (.+?)(?: trace=\w+)?$", re.MULTILINE)
_HEAD = re.compile(r"^(\w+) of ([\w.-]+),")


@dataclass(frozen=True)
class Finding:
    text: str
    kind: str  # change | steady | deploy | diff | logs | quiet | failed | other
    at: str = ""  # HH:MM when the finding has a time
    version: str = ""  # the deploy a deploy or diff finding is about


def finding_from_step(step: Step, deploy_at: str = "", version: str = "") -> Finding:
    """One line on what the step found; `deploy_at` (HH:MM) makes its time relative to the deploy, and a list of
    deploys shows the one of `version` (the cause the answer names) when it lists it, else the newest."""
    obs = step.observation
    lines = [line.strip() for line in obs.splitlines() if line.strip()]
    if step.status not in ("ok", "no_data"):  # honest: a check that failed found nothing either way
        return Finding(f"not checked ({step.status}): {(lines or ['no detail'])[0]}", "failed")
    if step.action == "query_metrics":
        return _metric(obs, step, deploy_at)
    if step.action == "query_deploy_records":
        return _deploys(obs, version)
    if step.action == "query_deploy_diff":
        changes = diff_changes(obs)
        diffed = str(step.args.get("version", "")).rsplit("/", 1)[-1]
        if not changes:
            return Finding("diff: no config change", "quiet", version=diffed)
        return Finding("diff: " + "; ".join(changes[:2]), "diff", version=diffed)
    if step.action == "query_logs":
        return _logs(obs, step, deploy_at)
    return Finding((lines or [step.status])[0], "other")


def deploy_time(steps: Sequence[Step], version: str = "") -> str:
    """HH:MM of the deploy of `version` (the cause the answer names), else of the first deploy a step found."""
    found = [m for s in steps if s.action == "query_deploy_records" for m in _DEPLOY.finditer(s.observation)]
    named = [m for m in found if version and m.group(3) == version]
    return (named or found)[0].group(1) if found else ""


def diff_changes(diff: str) -> list[str]:
    """ "hikari.maximumPoolSize 50 → 200" for each changed YAML-style key (its parent key kept); version tags last."""
    parents: list[tuple[int, str]] = []
    removed: dict[str, str] = {}
    changes: list[str] = []
    for line in diff.splitlines():
        if line.startswith(("---", "+++", "@@", "diff ")):
            parents = [(0, line.split("@@")[-1].strip().rstrip(":"))] if line.startswith("@@") else []
            continue
        match = _YAML_KEY.match(line)
        if not match:
            continue
        sign, indent, key, value = match.group(1), len(match.group(2)), match.group(3), match.group(4).strip()
        parents = [(i, k) for i, k in parents if i < indent]
        name = f"{parents[-1][1]}.{key}" if parents and parents[-1][1] else key
        if sign == " " and not value:
            parents.append((indent, key))
        elif sign == "-":
            removed[name] = value
        elif sign == "+" and name in removed:
            changes.append(f"{name} {removed.pop(name)} → {value}")
    return sorted(changes, key=lambda c: "tag" in c.lower().split(" ")[0])


def relative(at: str, deploy_at: str) -> str:
    """ "15:07 (5 min after the deploy)", or just "15:07" without a deploy time."""
    if not at or not deploy_at:
        return at
    minutes = (_minutes(at) - _minutes(deploy_at) + 720) % 1440 - 720  # 23:58 → 00:03 is 5 min, not -1,435
    if minutes == 0:
        return f"{at} (at the deploy)"
    side = "after" if minutes > 0 else "before"
    return f"{at} ({abs(minutes)} min {side} the deploy)"


def _metric(obs: str, step: Step, deploy_at: str) -> Finding:
    head = _HEAD.match(obs)
    metric = (head.group(1) if head else str(step.args.get("metric", "metric"))).replace("_", " ")
    service = head.group(2) if head else str(step.args.get("service", ""))
    if change := _CHANGE.search(obs):
        factor = f" ({change.group(4)})" if change.group(4) else ""
        when = relative(change.group(1), deploy_at)
        text = f"{service} {metric} {change.group(2)} → {change.group(3)}{factor} at {when}"
        return Finding(text, "change", change.group(1))
    if _NO_CHANGE.search(obs):
        return Finding(f"{service} {metric}: steady", "steady")
    return Finding(f"{service} {metric}: {step.status}", "other")


def _deploys(obs: str, version: str = "") -> Finding:
    listed = list(_DEPLOY.finditer(obs))
    deploy = next((m for m in listed if version and m.group(3) == version), listed[0] if listed else None)
    if deploy is None:
        count = _DEPLOY_COUNT.search(obs)
        return Finding("no deploy in the window" if count and count.group(1) == "0" else obs.split("\n")[0], "quiet")
    at, service, version, previous, author, summary = deploy.groups()
    came_from = f" (from {previous})" if previous else ""
    return Finding(
        f"deploy: {service} {version}{came_from} at {at} by {author}: {summary.strip()}", "deploy", at, version
    )


def _logs(obs: str, step: Step, deploy_at: str) -> Finding:
    service = str(step.args.get("service", ""))
    top = _LOG_TOP.search(obs)
    if top is None:
        matched = _LOG_MATCHED.search(obs)
        quiet = not matched or matched.group(1) == "0"
        return Finding(
            f"{service} logs: no {step.args.get('level', 'matching')} lines"
            if quiet
            else f"{service} logs: {matched.group(1) if matched else '?'} lines",
            "quiet",
        )
    count, signature, first = top.groups()
    example = _LOG_EXAMPLE.search(obs)
    message = _short(example.group(1) if example else signature)
    return Finding(f"{service} logs: {count}× {message}, from {relative(first, deploy_at)}", "logs", first)


def _short(message: str, limit: int = 60) -> str:
    """The head of a log message: up to the first comma or parenthesis past 20 chars, at most `limit`."""
    cut = re.search(r"[,(]", message[20:])
    head = message[: 20 + cut.start()] if cut else message
    return head.strip() if len(head) <= limit else head[: limit - 1].rstrip() + "…"


def _minutes(hhmm: str) -> int:
    hours, _, minutes = hhmm.partition(":")
    return int(hours) * 60 + int(minutes)
