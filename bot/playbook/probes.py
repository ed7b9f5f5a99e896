"""The playbook's probes: one tool call each (through `call_tool`, as a Step), read into the Findings.

A `ProbeRun` holds the steps taken so far and emits each one to the observer as it happens. The checks here
are the fixed questions an SRE asks around a change point: which deploys came just before it (and what the
nearest one changed), which errors were logged around it, and which job started at the onset of saturation.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import tools.analysis.changeclass as changeclass
import tools.analysis.ranking as ranking
from bot.engine.types import Step, StepObserver, new_trace_id
from bot.playbook.evidence import LogSignature, deploys_in, log_lines_in, signatures_in
from bot.playbook.findings import Findings, ServiceHealth
from tools.base import Toolbox, call_tool
from tools.logs.summary import LogSummary
from tools.metrics.series import MetricSeries
from tools.results import diff_of, logs_of, series_of

log = logging.getLogger(__name__)

DEPLOYS_BEFORE_MINUTES = 60  # a config change can take a while to bite (pool exhaustion under peak load)
DEPLOYS_AFTER_MINUTES = 10  # listed too, to show a deploy in the window that came after the change
LOGS_AROUND_MINUTES = 30
ONSET_MINUTES = 10
ONSET_QUERY = "started OR starting OR job OR cron OR batch OR reindex OR backfill OR migration"
SATURATION_AROUND_MINUTES = 15  # a saturation signal that rose this close to the onset rose with the symptom
TOOL_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class Window:
    """The time window every metric query uses, as the tool argument and as people read it."""

    range_arg: str  # a duration ("24h") or an ISO interval ("2026-11-28T13:05:00Z/2026-11-28T17:05:00Z")
    label: str
    end: datetime  # the tools print bare HH:MM times; they are resolved against this


# Which backend a tool reads, to name it when a check could not run.
BACKENDS = {
    "query_metrics": "Prometheus",
    "list_services": "Prometheus",
    "query_logs": "the log store",
    "query_deploy_records": "the deploy source",
    "query_deploy_diff": "the deploy source",
}
# A tool error that is about the question, not the backend (a service the logs do not know): not a failed check.
_NOT_A_BACKEND_FAILURE = ("unknown ", "invalid arguments")


@dataclass(frozen=True)
class FailedCheck:
    """A check that could not run: its tool, the backend behind it, what it was for, and the error's first line."""

    tool: str
    backend: str
    subject: str
    error: str

    def describe(self) -> str:
        return f"{self.tool} for {self.subject} could not run ({self.backend} failed: {self.error})"


@dataclass
class ProbeRun:
    """The steps taken so far; each tool call goes through call_tool and is emitted to the observer."""

    tools: Toolbox
    on_step: StepObserver | None
    window: Window
    trace_id: str = field(default_factory=new_trace_id)
    steps: list[Step] = field(default_factory=list)
    failures: list[FailedCheck] = field(default_factory=list)
    timed_out: set[str] = field(default_factory=set)  # tools whose backend timed out in this run: not called again
    unmeasured: Mapping[str, Collection[str]] = field(default_factory=dict)  # service -> metrics it does not measure

    def call(self, thought: str, name: str, args: Mapping[str, Any]) -> str:
        """Run one tool as a Step (see `probe`); the observation text when it answered "ok", else "" (for a reader
        that quotes the text; the playbook reads the step's data)."""
        step = self._run(thought, name, args)
        return step.observation if step.status == "ok" else ""

    def probe(self, thought: str, name: str, args: Mapping[str, Any]) -> Step | None:
        """Run one tool as a Step; the Step when it answered "ok" (read its data with tools/results.py), else None.

        A tool that timed out once is not called again in this run: a slow backend would otherwise cost a full
        timeout on every probe. The skipped probe is still a Step and a failed check, so the answer says what was
        not checked and is labelled partial.
        """
        step = self._run(thought, name, args)
        return step if step.status == "ok" else None

    def read_logs(self, thought: str, args: Mapping[str, Any]) -> LogSummary | None:
        """query_logs as a probe; its summary when it answered "ok", else None."""
        step = self.probe(thought, "query_logs", args)
        return logs_of(step) if step is not None else None

    def _run(self, thought: str, name: str, args: Mapping[str, Any]) -> Step:
        if name in self.timed_out:
            text = f"not checked: {name} timed out earlier in this run"
            self._emit(Step(len(self.steps) + 1, thought, name, dict(args), text, "error"))
            self._record_failure(name, args, text)
            return self.steps[-1]
        started = time.monotonic()
        result = call_tool(self.tools, name, args, timeout_s=TOOL_TIMEOUT_S)
        if result.status == "error" and "timed out" in result.text.lower():
            self.timed_out.add(name)
        elapsed_ms = int((time.monotonic() - started) * 1000)
        step = Step(
            len(self.steps) + 1, thought, name, dict(args), result.text, result.status, elapsed_ms, data=result.data
        )
        log.info(
            "playbook trace_id=%s step=%d tool=%s status=%s ms=%d",
            self.trace_id,
            step.index,
            name,
            result.status,
            elapsed_ms,
        )
        self._emit(step)
        if result.status in ("error", "refused") and not result.text.startswith(_NOT_A_BACKEND_FAILURE):
            self._record_failure(name, args, result.text)
        return step

    def _record_failure(self, name: str, args: Mapping[str, Any], text: str) -> None:
        error = (text.strip().splitlines() or [""])[0][:160]
        subject = str(args.get("service") or args.get("version") or "all services")
        self.failures.append(FailedCheck(name, BACKENDS.get(name, name), subject, error))

    def failed(self) -> bool:
        """Whether the last step's check could not run (an error, not "no data")."""
        return bool(self.steps) and self.steps[-1].status in ("error", "refused")

    def finish(self, thought: str) -> None:
        """The closing step, as the loop ends with one: no tool, the reasoning that concludes."""
        self._emit(Step(len(self.steps) + 1, thought, "finish", {}, "", "ok"))

    def _emit(self, step: Step) -> None:
        self.steps.append(step)
        if self.on_step is not None:
            self.on_step(step)

    def read_metric(self, thought: str, health: ServiceHealth, metric: str) -> MetricSeries | None:
        """query_metrics over the run's window, recorded in `health` (ServiceHealth.record): None when it could not
        be read. A metric with no samples at all is recorded as silent, never as "no change"; one the service's
        catalogue says it does not measure is not queried, and the answer says it was not checked."""
        if metric in self.unmeasured.get(health.service, ()):
            health.unmeasured.add(metric)
            return None
        args = {"service": health.service, "metric": metric, "range": self.window.range_arg}
        step = self.probe(thought, "query_metrics", args)
        series = series_of(step) if step is not None else None
        if series is None:
            silent = self.steps[-1].status == "no_data"
            health.readings[metric] = [] if silent else None
            if silent:
                health.silent.add(metric)
            return None
        health.record(metric, series)
        return series


def iso_from_moment(moment: datetime) -> str:
    """The UTC ISO form the tools take ("2026-11-28T15:05:00Z")."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def check_deploys(
    run: ProbeRun, findings: Findings, service: str, first: tuple[str, datetime], *, what: str = "changed"
) -> None:
    """Deploys in the hour before the first change point (or what else happened then), then the diff of the nearest
    one."""
    if "query_deploy_records" not in run.tools:
        findings.unknowns.append("no deploy tool is configured, so recent changes were not checked")
        return
    metric, at = first
    start, end = at - timedelta(minutes=DEPLOYS_BEFORE_MINUTES), at + timedelta(minutes=DEPLOYS_AFTER_MINUTES)
    thought = (
        f"{service} {metric} {what} at {at:%H:%M} UTC; checking {service}'s deploys in the "
        f"{DEPLOYS_BEFORE_MINUTES} min before it."
    )
    args = {"service": service, "start": iso_from_moment(start), "end": iso_from_moment(end)}
    step = run.probe(thought, "query_deploy_records", args)
    if run.failed():  # not checked is not "no deploy": the verdict names the failed backend instead
        return
    findings.deploys_checked.append(service)
    deploys = [d for d in deploys_in(step, service) if start <= d.at <= end] if step is not None else []
    # Change points sit mid-ramp, so a deploy that caused the change is never after it.
    findings.late_deploys += [d for d in deploys if d.at > at]
    deploys = [d for d in deploys if d.at <= at]
    if not deploys:
        return
    nearest = max(deploys, key=lambda d: d.at)
    findings.deploy = nearest
    if "query_deploy_diff" in run.tools:
        thought = (
            f"{service} {nearest.version} was deployed at {nearest.at:%H:%M}, the last one before the change; "
            "reading its diff."
        )
        diff = run.probe(thought, "query_deploy_diff", {"version": nearest.version, "service": service})
        report = diff_of(diff) if diff is not None else None
        findings.key_changes = changeclass.with_option_lines(report.key_changes, report.diff) if report else []
        findings.risky_lines = list(report.risky_lines) if report else []


def check_logs(
    run: ProbeRun, findings: Findings, service: str, first: tuple[str, datetime] | None, *, why: str = ""
) -> None:
    """Error clusters around the change (the whole window when nothing changed); warnings when no errors."""
    if "query_logs" not in run.tools:
        findings.unknowns.append("no log tool is configured, so error messages were not checked")
        return
    window: dict[str, Any] = {"range": run.window.range_arg}
    where = f"over {run.window.label}"
    if first is not None:
        at = first[1]
        window = {
            "start": iso_from_moment(at - timedelta(minutes=LOGS_AROUND_MINUTES)),
            "end": iso_from_moment(at + timedelta(minutes=LOGS_AROUND_MINUTES)),
        }
        where = f"in the {LOGS_AROUND_MINUTES} min around {at:%H:%M}"
    for level in ("ERROR", "WARN"):
        thought = why + (
            f"Looking for {service}'s error clusters {where}."
            if level == "ERROR"
            else f"{service} logged no errors {where}; its warnings may still name the cause."
        )
        step = run.probe(thought, "query_logs", {"service": service, "level": level, **window})
        found = signatures_in(step, level) if step is not None else []
        if found:
            findings.signatures[service] = _new_first(run, service, level, found, first)
            findings.log_levels[service] = level
            return
        if run.steps[-1].status != "no_data":  # an error (e.g. a service with no logs here): asking again won't help
            return


def _new_first(
    run: ProbeRun, service: str, level: str, found: list[LogSignature], first: tuple[str, datetime] | None
) -> list[LogSignature]:
    """Signatures that appear after the onset and not in the hour before it come first (the background last)."""
    if first is None or len(found) < 2:
        return found
    at = first[1]
    thought = (
        f"Comparing with {service}'s {level} signatures in the hour before {at:%H:%M}: a signature that was "
        "already there is background, not the cause."
    )
    args = {
        "service": service,
        "level": level,
        "start": iso_from_moment(at - timedelta(minutes=90)),
        "end": iso_from_moment(at - timedelta(minutes=LOGS_AROUND_MINUTES)),
    }
    step = run.probe(thought, "query_logs", args)
    before = {s.text for s in signatures_in(step, level)} if step is not None else set()
    return [s for s in found if s.text not in before] + [s for s in found if s.text in before]


def check_onset(run: ProbeRun, findings: Findings, service: str, at: datetime) -> None:
    """Saturation with no deploy: did a job, batch or cron run start just before it?"""
    if "query_logs" not in run.tools:
        return
    start, end = at - timedelta(minutes=ONSET_MINUTES), at + timedelta(minutes=2)
    thought = (
        f"{service} saturated at {at:%H:%M} with no deploy before it; looking for a job, batch or cron "
        f"that started in the {ONSET_MINUTES} min before."
    )
    args = {
        "service": service,
        "query": ONSET_QUERY,
        "start": iso_from_moment(start),
        "end": iso_from_moment(end),
        "limit": 20,
    }
    step = run.probe(thought, "query_logs", args)
    findings.onset_lines = log_lines_in(step)[:3] if step is not None else []


def check_saturation(run: ProbeRun, findings: Findings, service: str, metrics: Sequence[str]) -> None:
    """The catalogue's saturation signals of the service (GC pauses, a pool's pending connections, a queue,
    consumer lag) around its first change; each one that rose with it weighs for a deploy suspect of the service,
    more when the deploy changed what saturated (tools/analysis/ranking.py saturation_reasons)."""
    first = findings.first_change(service)
    if first is None or "query_metrics" not in run.tools:
        return
    health, risen = findings.health.setdefault(service, ServiceHealth(service)), []
    for metric in (m for m in metrics if m not in health.readings):
        thought = f"{service} changed at {first[1]:%H:%M} UTC; checking its {metric}: a saturated resource explains it."
        run.read_metric(thought, health, metric)
        point = health.changed(metric)
        if point and point.ratio > 1 and abs(point.at - first[1]) <= timedelta(minutes=SATURATION_AROUND_MINUTES):
            risen.append((metric, health.describe(metric, point)))
    for suspect in findings.suspects if risen else []:
        if suspect.deploy is not None and suspect.deploy.service == service:
            suspect.add(ranking.saturation_reasons(risen, suspect.key_changes))
    findings.suspects.sort(key=lambda s: -s.score)
