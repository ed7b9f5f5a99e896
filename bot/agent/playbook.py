"""The deterministic diagnosis used when no LLM is configured or reachable.

It calls the same tools as the model, through the same boundary (`call_tool`), in a fixed order an SRE
would follow: the service's golden signals (then saturation), their change points, the deploys just before
the first change and the diff of the nearest one, the error log clusters, then the downstream services,
walking down the ones that changed to the deepest (its deploys, its logs, and what its steady siblings
logged). Saturation with no deploy looks for a job that started at the onset. Every call is a Step with a
Thought explaining why, the trace ends with a finish step like the loop's, and the conclusion says plainly
that no model was involved. Thresholds are constants here, not Settings: the playbook is a fallback.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.agent.diffs import deploys_from_text, key_changes_from_diff, risky_lines_from_diff
from bot.agent.evidence import (
    change_points_from_text,
    known_services_from_text,
    log_lines_from_text,
    moment_from_question,
    service_from_text,
    signatures_from_text,
)
from bot.agent.findings import Findings, ServiceHealth, conclusion_from_findings, excursion_from_text
from bot.agent.types import Question, Step, StepObserver, StopReason, Totals, Trace
from tools.base import Toolbox, call_tool

log = logging.getLogger(__name__)

GOLDEN_METRICS = ("p99_latency", "error_rate", "qps")
SATURATION_METRICS = ("cpu_usage", "memory_usage", "restarts")
DEPLOYS_BEFORE_MINUTES = 60  # a config change can take a while to bite (pool exhaustion under peak load)
DEPLOYS_AFTER_MINUTES = 10  # listed too, to show a deploy in the window that came after the change
LOGS_AROUND_MINUTES = 30
WINDOW_AROUND_HOURS = 2  # around the time the user names; 4 h at 1-minute resolution stays under 288 points
DEFAULT_RANGE = "24h"
MAX_DOWNSTREAM_DEPTH = 3
ONSET_MINUTES = 10
ONSET_QUERY = "started OR starting OR job OR cron OR batch OR reindex OR backfill OR migration"
TOOL_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class Window:
    """The time window every metric query uses, as the tool argument and as people read it."""

    range_arg: str  # a duration ("24h") or an ISO interval ("2026-11-28T13:05:00Z/2026-11-28T17:05:00Z")
    label: str
    end: datetime  # the tools print bare HH:MM times; they are resolved against this


def window_from_question(text: str, now: datetime) -> Window:
    """Two hours either side of the time the question names, else the last 24 hours."""
    moment = moment_from_question(text, now)
    if moment is None:
        return Window(DEFAULT_RANGE, f"the last {DEFAULT_RANGE}", now)
    start = moment - timedelta(hours=WINDOW_AROUND_HOURS)
    end = min(now, moment + timedelta(hours=WINDOW_AROUND_HOURS))
    return Window(f"{_iso(start)}/{_iso(end)}", f"{start:%Y-%m-%d %H:%M} → {end:%H:%M} UTC", end)


@dataclass
class _Run:
    """The steps taken so far; each tool call goes through call_tool and is emitted to the observer."""

    tools: Toolbox
    on_step: StepObserver | None
    window: Window
    trace_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    steps: list[Step] = field(default_factory=list)

    def call(self, thought: str, name: str, args: Mapping[str, Any]) -> str:
        """Run one tool as a Step; the observation text when it answered "ok", else ""."""
        started = time.monotonic()
        result = call_tool(self.tools, name, args, timeout_s=TOOL_TIMEOUT_S)
        elapsed_ms = int((time.monotonic() - started) * 1000)
        step = Step(len(self.steps) + 1, thought, name, dict(args), result.text, result.status, elapsed_ms)
        log.info("playbook trace_id=%s step=%d tool=%s status=%s ms=%d", self.trace_id, step.index, name,
                 result.status, elapsed_ms)
        self._emit(step)
        return result.text if result.status == "ok" else ""

    def finish(self, thought: str) -> None:
        """The closing step, as the loop ends with one: no tool, the reasoning that concludes."""
        self._emit(Step(len(self.steps) + 1, thought, "finish", {}, "", "ok"))

    def _emit(self, step: Step) -> None:
        self.steps.append(step)
        if self.on_step is not None:
            self.on_step(step)

    def read_metric(self, thought: str, health: ServiceHealth, metric: str) -> None:
        """query_metrics over the run's window; records its change points, or the spike when the series came
        back (see excursion_from_text); None when it could not be read."""
        args = {"service": health.service, "metric": metric, "range": self.window.range_arg}
        observation = self.call(thought, "query_metrics", args)
        if not observation and self.steps[-1].status != "no_data":
            health.readings[metric] = None
            return
        points = change_points_from_text(observation, self.window.end)
        excursion = excursion_from_text(observation, self.window.end, points)
        if excursion is None:
            health.readings[metric] = points
            return
        spike, recovery = excursion
        health.readings[metric] = [spike]
        if recovery is not None:
            health.recoveries[metric] = recovery


def run_playbook(
    question: Question,
    tools: Toolbox,
    *,
    topology: Mapping[str, Sequence[str]],
    on_step: StepObserver | None = None,
    now: datetime | None = None,
) -> Trace:
    """Diagnose `question` without a model: fixed checks over the tools, a templated, cited conclusion."""
    started_at, started = datetime.now(UTC), time.monotonic()
    run = _Run(tools, on_step, window_from_question(question.text, now or started_at))
    findings = _investigate(run, question.text, topology)
    answer, complete = conclusion_from_findings(findings)
    tool_steps = list(run.steps)
    verdict = answer.splitlines()[0].split(". ")[0]
    verdict = verdict if len(verdict) <= 200 else verdict[:199] + "…"
    run.finish(f"Concluding from the {len(tool_steps)} checks above. {verdict}.")
    return Trace(
        trace_id=run.trace_id,
        question=question.text,
        protocol="playbook",
        steps=tuple(run.steps),
        answer=answer,
        complete=complete,
        stop_reason=StopReason.FINISH,
        totals=Totals(
            steps=len(run.steps),
            elapsed_ms=int((time.monotonic() - started) * 1000),
            tool_calls=len(tool_steps),
            tool_errors=sum(s.status in ("error", "refused") for s in tool_steps),
        ),
        started_at=started_at.isoformat(timespec="seconds"),
        model="",
    )


def _investigate(run: _Run, text: str, topology: Mapping[str, Sequence[str]]) -> Findings:
    findings = Findings(window_label=run.window.label)
    if "query_metrics" not in run.tools:
        findings.unknowns.append("no query_metrics tool is configured, so no metric could be checked")
        return findings
    services = _known_services(run, text, topology)
    target = service_from_text(text, services) or _entry_service(run, findings, services, topology)
    if target is None:
        return findings
    findings.service = target
    _survey(run, findings, target)
    first = findings.first_change(target)
    if first is not None:
        _check_deploys(run, findings, target, first)
    _check_logs(run, findings, target, first)
    path = _follow_downstream(run, findings, topology, target)
    for service in path[:-1]:  # every changed service on the way down may have been deployed
        if findings.deploy is None and (changed := findings.first_change(service)) is not None:
            _check_deploys(run, findings, service, changed)
    if path:
        findings.origin = path[-1]
        caller = path[-2] if len(path) > 1 else target
        _investigate_origin(run, findings, [s for s in topology.get(caller, ()) if s != findings.origin])
    elif findings.deploy is None and first is not None and first[0] in SATURATION_METRICS:
        _check_onset(run, findings, target, first[1])
    return findings


def _investigate_origin(run: _Run, findings: Findings, siblings: Sequence[str]) -> None:
    """The changed dependency: its deploys and logs; then what its healthy-looking siblings logged meanwhile."""
    origin_first = findings.first_change(findings.origin)
    if findings.deploy is None and origin_first is not None:
        _check_deploys(run, findings, findings.origin, origin_first)
    _check_logs(run, findings, findings.origin, origin_first)
    if findings.deploy is not None or origin_first is None:
        return
    for sibling in siblings:
        health = findings.health.get(sibling)
        if sibling in findings.signatures or (health is not None and health.changes()):
            continue
        why = (f"{sibling} sits beside {findings.origin} and its metrics look steady, but it may have logged "
               f"what set this off (a flush, a failover, a reload). ")
        _check_logs(run, findings, sibling, origin_first, why=why)
        if sibling in findings.signatures:
            findings.neighbours.append(sibling)


def _known_services(run: _Run, text: str, topology: Mapping[str, Sequence[str]]) -> list[str]:
    services = list(dict.fromkeys([*topology, *(d for ds in topology.values() for d in ds)]))
    if services and service_from_text(text, services):
        return services
    # The tool validates services against Prometheus; an impossible name makes it list the real ones.
    run.call(
        "No configured service is named in the question; asking query_metrics which services exist.",
        "query_metrics",
        {"service": "?", "metric": _metric_names(run.tools)[0], "range": "1h"},
    )
    return list(dict.fromkeys([*services, *known_services_from_text(run.steps[-1].observation)]))


def _metric_names(tools: Toolbox) -> list[str]:
    """The metric catalogue, read from query_metrics' argument schema (its `metric` enum)."""
    spec = tools.get("query_metrics")
    schema = spec.parameters.get("properties", {}).get("metric", {}) if spec else {}
    names = schema.get("enum") or []
    return list(names) or list(GOLDEN_METRICS)


def _survey(run: _Run, findings: Findings, service: str) -> None:
    """Golden signals (unless a scan already read them), then saturation signals of one service."""
    catalogue = _metric_names(run.tools)
    health = findings.health.setdefault(service, ServiceHealth(service))
    for metric in (*GOLDEN_METRICS, *SATURATION_METRICS):
        if metric not in catalogue or metric in health.readings:
            continue
        if metric in GOLDEN_METRICS:
            thought = f"Checking {service}'s {metric} over {run.window.label} for a change point (golden signals)."
        else:
            thought = f"Checking {service}'s {metric}: saturation or restarts would explain a change without a deploy."
        run.read_metric(thought, health, metric)


def _entry_service(
    run: _Run, findings: Findings, services: Sequence[str], topology: Mapping[str, Sequence[str]]
) -> str | None:
    """No service named: scan every service's golden signals; start from the changed one closest to users.

    Users feel the most upstream symptom; the dependency walk then goes down to where it started. Among
    services no other changed service calls, the one that changed most wins.
    """
    for service in services:
        health = findings.health.setdefault(service, ServiceHealth(service))
        for metric in GOLDEN_METRICS:
            run.read_metric(f"The question names no service; scanning {service}'s {metric}.", health, metric)
    changed = {h.service for h in findings.health.values() if h.changes()}
    called = {d for caller in changed for d in topology.get(caller, ())}
    ranked = sorted(changed, key=lambda s: (s in called, -findings.health[s].strength))
    if ranked:
        return ranked[0]
    findings.unknowns.append("no service is named in the question and none shows a change point")
    return None


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _check_deploys(run: _Run, findings: Findings, service: str, first: tuple[str, datetime]) -> None:
    """Deploys in the hour before the first change point, then the diff of the nearest one."""
    if "query_deploy_records" not in run.tools:
        findings.unknowns.append("no deploy tool is configured, so recent changes were not checked")
        return
    metric, at = first
    start, end = at - timedelta(minutes=DEPLOYS_BEFORE_MINUTES), at + timedelta(minutes=DEPLOYS_AFTER_MINUTES)
    thought = (
        f"{service} {metric} changed at {at:%H:%M} UTC; checking {service}'s deploys in the "
        f"{DEPLOYS_BEFORE_MINUTES} min before it."
    )
    args = {"service": service, "start": _iso(start), "end": _iso(end)}
    observation = run.call(thought, "query_deploy_records", args)
    findings.deploys_checked.append(service)
    deploys = [d for d in deploys_from_text(observation, service, end) if d.at is None or start <= d.at <= end]
    # Change points sit mid-ramp, so a deploy that caused the change is never after it.
    findings.late_deploys += [d for d in deploys if d.at is not None and d.at > at]
    deploys = [d for d in deploys if d.at is None or d.at <= at]
    if not deploys:
        return
    nearest = max(deploys, key=lambda d: d.at or at)
    findings.deploy = nearest
    if "query_deploy_diff" in run.tools:
        when = f" at {nearest.at:%H:%M}" if nearest.at else ""
        thought = f"{service} {nearest.version} was deployed{when}, the last one before the change; reading its diff."
        diff = run.call(thought, "query_deploy_diff", {"version": nearest.version, "service": service})
        findings.key_changes = key_changes_from_diff(diff)
        findings.risky_lines = risky_lines_from_diff(diff)


def _check_logs(
    run: _Run, findings: Findings, service: str, first: tuple[str, datetime] | None, *, why: str = ""
) -> None:
    """Error clusters around the change (the whole window when nothing changed); warnings when no errors."""
    if "query_logs" not in run.tools:
        findings.unknowns.append("no log tool is configured, so error messages were not checked")
        return
    window: dict[str, Any] = {"range": run.window.range_arg}
    where = f"over {run.window.label}"
    if first is not None:
        at = first[1]
        window = {"start": _iso(at - timedelta(minutes=LOGS_AROUND_MINUTES)),
                  "end": _iso(at + timedelta(minutes=LOGS_AROUND_MINUTES))}
        where = f"in the {LOGS_AROUND_MINUTES} min around {at:%H:%M}"
    for level in ("ERROR", "WARN"):
        thought = why + (f"Looking for {service}'s error clusters {where}." if level == "ERROR"
                         else f"{service} logged no errors {where}; its warnings may still name the cause.")
        found = signatures_from_text(run.call(thought, "query_logs", {"service": service, "level": level, **window}))
        if found:
            findings.signatures[service] = found
            return
        if run.steps[-1].status != "no_data":  # an error (e.g. a service with no logs here): asking again won't help
            return


def _check_onset(run: _Run, findings: Findings, service: str, at: datetime) -> None:
    """Saturation with no deploy: did a job, batch or cron run start just before it?"""
    if "query_logs" not in run.tools:
        return
    start, end = at - timedelta(minutes=ONSET_MINUTES), at + timedelta(minutes=2)
    thought = (f"{service} saturated at {at:%H:%M} with no deploy before it; looking for a job, batch or cron "
               f"that started in the {ONSET_MINUTES} min before.")
    args = {"service": service, "query": ONSET_QUERY, "start": _iso(start), "end": _iso(end), "limit": 20}
    findings.onset_lines = log_lines_from_text(run.call(thought, "query_logs", args))[:3]


def _follow_downstream(
    run: _Run, findings: Findings, topology: Mapping[str, Sequence[str]], service: str
) -> list[str]:
    """Walk down the dependencies that changed too: the path below `service`, deepest (the origin) last."""
    path: list[str] = []
    current, seen = service, {service}
    for _ in range(MAX_DOWNSTREAM_DEPTH):
        changed = []
        for downstream in topology.get(current, ()):
            if downstream in seen:
                continue
            seen.add(downstream)
            health = findings.health.setdefault(downstream, ServiceHealth(downstream))
            for metric in ("p99_latency", "error_rate"):
                if metric not in health.readings:
                    run.read_metric(f"{current} calls {downstream}; checking its {metric}.", health, metric)
            if health.changes():
                changed.append(health)
        if not changed:
            break
        current = min(changed, key=lambda h: (h.changes()[0][1].at, -h.strength)).service
        path.append(current)
    return path
