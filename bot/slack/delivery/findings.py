"""What a step FOUND, in the words people use in an incident channel. Pure: reads each fact from the step's data.

"diff: hikari.maximumPoolSize 50 → 200", "logs: 256× HikariPool-1 - Connection is not available, from 15:05",
"order p99 latency 202 ms → 1,221 ms at 15:07 (x6.1)": findings, not queries. Numbers are printed as the text
prints them (tools/metrics/series.py's value_text and factor_text). Times are read relative to the deploy the run
found ("3 min after the deploy"). A step without data (a text-only tool's, a trace stored before results carried
data) or with data of another kind keeps its first telling line, quoted, so nothing is ever hidden, only shortened.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from bot.engine.types import Step
from tools.deploys.records import DeployList, DiffReport, deploys_heading
from tools.logs.summary import LogSummary, Signature
from tools.metrics.series import MetricSeries, factor_text, value_text
from tools.results import deploys_of, diff_of, logs_of, series_of


@dataclass(frozen=True)
class Finding:
    text: str
    kind: str  # change | steady | deploy | diff | logs | quiet | failed | other
    at: str = ""  # HH:MM when the finding has a time
    version: str = ""  # the deploy a deploy or diff finding is about
    # What the next step names: the metric ("order p99 latency"), the rollback ("order v2.8.1 to v2.8.0"), the key
    subject: str = ""


def finding_from_step(step: Step, deploy_at: str = "", version: str = "") -> Finding:
    """One line on what the step found; `deploy_at` (HH:MM) makes its time relative to the deploy, and a list of
    deploys shows the one of `version` (the cause the answer names) when it lists it, else the newest."""
    lines = [line.strip() for line in step.observation.splitlines() if line.strip()]
    if step.status not in ("ok", "no_data"):  # honest: a check that failed found nothing either way
        return Finding(f"not checked ({step.status}): {(lines or ['no detail'])[0]}", "failed")
    if series := series_of(step):
        return _metric(series, step.status, deploy_at)
    if found := deploys_of(step):
        return _deploys(found, version)
    if report := diff_of(step):
        diffed = str(step.args.get("version", "")).rsplit("/", 1)[-1]
        if not report.key_changes:
            return Finding("diff: no config change", "quiet", version=diffed)
        key = _short_key(report.key_changes[0].key)
        return Finding("diff: " + "; ".join(key_changes_text(report)[:2]), "diff", version=diffed, subject=key)
    if summary := logs_of(step):
        return _logs(summary, step, deploy_at)
    return Finding((lines or [step.status])[0], "other")


def deploy_time(steps: Sequence[Step], version: str = "") -> str:
    """HH:MM of the deploy of `version` (the cause the answer names), else of the first deploy a step found."""
    found = [r for s in steps if (listed := deploys_of(s)) for r in listed.records]
    named = [r for r in found if version and r.version == version]
    return _clock((named or found)[0].at) if found else ""


def key_changes_text(report: DiffReport) -> list[str]:
    """ "hikari.maximumPoolSize 50 → 200" per changed key (its nearest parent kept; the full path is in the trace),
    in the diff report's order: keys changed by hand first, image tags and versions (which repeat the deploy) last."""
    return [f"{_short_key(c.key)} {c.old} → {c.new}" for c in report.key_changes]


def relative(at: str, deploy_at: str) -> str:
    """ "15:07 (5 min after the deploy)", or just "15:07" without a deploy time."""
    if not at or not deploy_at:
        return at
    minutes = (_minutes(at) - _minutes(deploy_at) + 720) % 1440 - 720  # 23:58 → 00:03 is 5 min, not -1,435
    if minutes == 0:
        return f"{at} (at the deploy)"
    side = "after" if minutes > 0 else "before"
    return f"{at} ({abs(minutes)} min {side} the deploy)"


def _metric(series: MetricSeries, status: str, deploy_at: str) -> Finding:
    subject = f"{series.service} {series.metric.replace('_', ' ')}"
    if series.changes:
        change, unit = series.changes[0], series.unit
        at = f"{change.at:%H:%M}"
        shift = f"{value_text(change.before, unit)} → {value_text(change.after, unit)} ({factor_text(change.ratio)})"
        return Finding(f"{subject} {shift} at {relative(at, deploy_at)}", "change", at, subject=subject)
    quiet = not (series.spikes or series.trends or series.sawtooth or series.stop)
    if series.stats is not None and series.checked and quiet:  # the text says "change: none detected"
        return Finding(f"{subject}: steady", "steady")
    return Finding(f"{subject}: {status}", "other")


def _deploys(found: DeployList, version: str) -> Finding:
    deploy = (found.of_version(version) if version else None) or (found.records[0] if found.records else None)
    if deploy is None:
        return Finding(deploys_heading(found), "quiet")  # none in the window, and the latest before it
    release = f"{deploy.service} {deploy.version}"
    came_from = f" (from {deploy.previous_version})" if deploy.previous_version else ""
    at = _clock(deploy.at)
    text = f"deploy: {release}{came_from} at {at} by {deploy.author}: {deploy.summary.strip()}"
    back_to = f" to {deploy.previous_version}" if deploy.previous_version else ""
    return Finding(text, "deploy", at, deploy.version, subject=f"{release}{back_to}")


def _logs(summary: LogSummary, step: Step, deploy_at: str) -> Finding:
    service = str(step.args.get("service", ""))
    top = _top_signature(summary)
    if top is None:
        quiet = summary.total == 0
        return Finding(
            f"{service} logs: no {step.args.get('level', 'matching')} lines"
            if quiet
            else f"{service} logs: {summary.total:,} lines",
            "quiet",
        )
    first = f"{top.first_at:%H:%M}"
    message = _short(top.example.message or top.template)
    return Finding(f"{service} logs: {top.count:,}× {message}, from {relative(first, deploy_at)}", "logs", first)


def _top_signature(summary: LogSummary) -> Signature | None:
    """The biggest signature of the first block the text lists: errors (or the asked levels), warnings, new ones."""
    new = summary.onset.new if summary.onset is not None else None
    return next((b.top[0] for b in (summary.signatures, summary.warnings, new) if b is not None and b.top), None)


def _short_key(key: str) -> str:
    """`spring.datasource.hikari.maximumPoolSize` -> `hikari.maximumPoolSize`, `images[registry/x/order].newTag` ->
    `images.newTag` (a list item's name, often an image or a host, says nothing here); `env FEATURE_X` as it is."""
    parts: list[str] = [""]
    depth = 0
    for char in key:
        depth += (char == "[") - (char == "]")
        if char == "." and depth == 0:
            parts.append("")
        elif depth == 0 and char != "]":
            parts[-1] += char
    return ".".join(parts[-2:])


def _short(message: str, limit: int = 60) -> str:
    """The head of a log message: up to the first comma or parenthesis past 20 chars, at most `limit`."""
    cuts = [i for i in (message.find(",", 20), message.find("(", 20)) if i >= 0]
    head = message[: min(cuts)] if cuts else message
    return head.strip() if len(head) <= limit else head[: limit - 1].rstrip() + "…"


def _clock(moment: datetime) -> str:
    """HH:MM in UTC, as a deploy record's time is printed (tools.timerange.iso_z)."""
    return f"{moment.astimezone(UTC):%H:%M}"


def _minutes(hhmm: str) -> int:
    hours, _, minutes = hhmm.partition(":")
    return int(hours) * 60 + int(minutes)
