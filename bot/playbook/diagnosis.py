"""The deterministic diagnosis used when no LLM is configured or reachable.

It calls the same tools as the model, through the same boundary (`call_tool`), in a fixed order an SRE
would follow: the service's golden signals (then saturation), their change points, the deploys just before
the first change and the diff of the nearest one, the error log clusters, then the downstream services,
walking down the ones that changed to the deepest (its deploys, its logs, and what its steady siblings
logged). Saturation with no deploy looks for a job that started at the onset. A service flat over the
window is read once more over a week (bot/playbook/onset.py): flat is not "no incident"; still flat, its neighbours
within two hops are scanned and the one that clearly degraded is diagnosed instead (a lagging producer upstream, the
service that calls the asked database), the answer saying the asked one looks healthy. Every call is a Step with a
Thought explaining why, the trace ends with a finish step like the loop's, and the conclusion says plainly
that no model was involved. Thresholds are constants here, not Settings: the playbook is a fallback.

Metrics are chosen by role (`metric_roles`: latency, errors, traffic, cpu, memory, restarts -> the
catalogue's metric name), so a renamed catalogue still works; a role nobody has is named in the answer.
"""

from __future__ import annotations

import re
import time
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime, timedelta, tzinfo

import bot.playbook.families.rivals as rivals
import tools.analysis.ranking as ranking
from bot.engine.types import Question, StepObserver, StopReason, Totals, Trace
from bot.playbook.collectiongap import check_around_gap, gapped_service
from bot.playbook.evidence import moment_from_question, service_from_text
from bot.playbook.families.behind import check_behind
from bot.playbook.families.database import check_database_locks
from bot.playbook.families.failover import check_failover_storm
from bot.playbook.families.nodefault import check_node_fault
from bot.playbook.families.operations import check_operations
from bot.playbook.families.peers import check_refusing_peer
from bot.playbook.families.received import check_status_received
from bot.playbook.families.reconnect import check_reconnect_storm
from bot.playbook.families.staleness import check_staleness
from bot.playbook.families.statuscodes import check_status_answered
from bot.playbook.findings import GOLDEN_ROLES, ROLES, SATURATION_ROLES, STRONG, Findings, ServiceHealth
from bot.playbook.onset import look_further_back, saturation_at_onset, saturation_where_it_changed, time_note
from bot.playbook.probes import (
    ProbeRun,
    Window,
    check_deploys,
    check_logs,
    check_onset,
    iso_from_moment,
)
from bot.playbook.rollout import weigh_partial_rollouts
from bot.playbook.runtimeflags import weigh_runtime_flags
from bot.playbook.servicewalk import entry_service, follow_downstream, known_services
from bot.playbook.suspects import gather_suspects
from bot.playbook.toolsetprobes import check_nodes, check_pods, check_runbooks
from bot.playbook.verdict import MIN_SUSPECT_SCORE, conclusion_from_findings
from tools.base import Toolbox

WINDOW_AROUND_HOURS = 2  # around the time the user names; 4 h at 1-minute resolution stays under 288 points
DEFAULT_RANGE = "24h"
_CLOCK_RX = re.compile(r"\b\d{1,2}:\d{2}\b")  # only a clock time is precise enough to correct


def window_from_question(text: str, now: datetime, zone: tzinfo = UTC) -> Window:
    """Two hours either side of the time the question names (in the zone it names, else the team's `zone`), else
    the last 24 hours."""
    moment = moment_from_question(text, now, zone)
    if moment is None:
        return Window(DEFAULT_RANGE, f"the last {DEFAULT_RANGE}", now)
    start = (moment - timedelta(hours=WINDOW_AROUND_HOURS)).astimezone(UTC)
    end = min(now, moment + timedelta(hours=WINDOW_AROUND_HOURS)).astimezone(UTC)
    if start >= end:  # a time later today than now ("needed by 18:00" asked at 03:00) is no start: look back instead
        return Window(DEFAULT_RANGE, f"the last {DEFAULT_RANGE}", now)
    return Window(f"{iso_from_moment(start)}/{iso_from_moment(end)}", f"{start:%Y-%m-%d %H:%M} → {end:%H:%M} UTC", end)


def run_playbook(
    question: Question,
    tools: Toolbox,
    *,
    topology: Mapping[str, Sequence[str]],
    metric_roles: Mapping[str, str] | None = None,
    saturation: Sequence[str] = (),
    unmeasured: Mapping[str, Collection[str]] | None = None,
    on_step: StepObserver | None = None,
    now: datetime | None = None,
    zone: tzinfo = UTC,
) -> Trace:
    """Diagnose `question` without a model: fixed checks over the tools, a templated, cited conclusion.

    `metric_roles` maps a role (latency, errors, traffic, cpu, memory, restarts) to a catalogue metric name;
    `saturation` names the catalogue's saturation metrics (GC pauses, pool pending, queues, consumer lag);
    `unmeasured` the metrics each service does not measure (not queried; the answer says so); `zone` is the
    team's, for a time the question gives without one.
    """
    started_at, started = datetime.now(UTC), time.monotonic()
    window = window_from_question(question.text, now or started_at, zone)
    run = ProbeRun(tools, on_step, window, unmeasured=unmeasured or {})
    findings = Findings(window_label=run.window.label, roles=usable_roles(tools, metric_roles or {}))
    findings.unconfigured = [role for role in ROLES if role not in findings.roles]
    _investigate(run, findings, question.text, topology)
    check_refusing_peer(run, findings, topology)
    check_nodes(run, findings, sorted({s for caller, callees in topology.items() for s in (caller, *callees)}))
    check_node_fault(run, findings, moment_from_question(question.text, now or started_at, zone))
    check_pods(run, findings)
    check_runbooks(run, findings, question.text)
    if findings.service and _CLOCK_RX.search(question.text):
        said = moment_from_question(question.text, now or started_at, zone)
        findings.time_note = time_note(said, findings.first_change(findings.service))
    saturation_where_it_changed(run, findings, saturation)
    findings.failed_checks = [f.describe() for f in run.failures]
    findings.failed_backends = list(dict.fromkeys(f.backend for f in run.failures))
    return _trace_from_run(run, question, conclusion_from_findings(findings), started_at, started)


def _trace_from_run(
    run: ProbeRun, question: Question, conclusion: tuple[str, bool], started_at: datetime, started: float
) -> Trace:
    """The loop's Trace shape: the tool steps, a closing finish step that states the verdict, the totals."""
    answer, complete = conclusion
    tool_steps = list(run.steps)
    verdict = answer.splitlines()[0].split(". ")[0]
    verdict = verdict if len(verdict) <= 200 else verdict[:199] + "…"
    checks = "the check" if len(tool_steps) == 1 else f"the {len(tool_steps)} checks"
    run.finish(f"Concluding from {checks} above. {verdict.rstrip('.')}.")
    totals = Totals(
        steps=len(run.steps),
        elapsed_ms=int((time.monotonic() - started) * 1000),
        tool_calls=len(tool_steps),
        tool_errors=sum(s.status in ("error", "refused") for s in tool_steps),
    )
    return Trace(
        trace_id=run.trace_id,
        question=question.text,
        protocol="playbook",
        steps=tuple(run.steps),
        answer=answer,
        complete=complete,
        stop_reason=StopReason.FINISH,
        totals=totals,
        started_at=started_at.isoformat(timespec="seconds"),
        model="",
    )


def usable_roles(tools: Toolbox, metric_roles: Mapping[str, str]) -> dict[str, str]:
    """The known roles whose metric query_metrics offers (its `metric` enum); all of them when it has none."""
    spec = tools.get("query_metrics")
    schema = spec.parameters.get("properties", {}).get("metric", {}) if spec else {}
    offered = set(schema.get("enum") or metric_roles.values())
    return {role: name for role, name in metric_roles.items() if role in ROLES and name in offered}


def _investigate(run: ProbeRun, findings: Findings, text: str, topology: Mapping[str, Sequence[str]]) -> None:
    if "query_metrics" not in run.tools:
        findings.unknowns.append("no query_metrics tool is configured, so no metric could be checked")
        return
    if not any(role in findings.roles for role in GOLDEN_ROLES):
        return  # the conclusion names the roles that are not configured
    services = known_services(run, text, topology)
    named = [s for s in services if service_from_text(text, [s])]
    target: str | None
    if len(named) > 1:  # "stock fails, warehouse-api says it is fine": the one whose metrics changed is asked about
        why = "The question names several services"
        target = entry_service(run, findings, named, topology, why=why, chosen=True) or named[0]
    else:
        target = named[0] if named else entry_service(run, findings, services, topology) or gapped_service(findings)
    if target is None or _surveyed_gap(run, findings, target):
        return  # after a gap in collection no service has metrics: there is no change to walk down or to rank
    look_further_back(run, findings, target)  # when flat: the trouble may be older than the window, or constant
    target = _steady_target_moves(run, findings, target, topology)
    _when_flat(run, findings, topology, target, text)
    first = findings.first_change(target)
    if first is not None:
        check_deploys(run, findings, target, first)
    check_logs(run, findings, target, first)
    path = follow_downstream(run, findings, topology, target)
    for service in path[:-1]:  # every changed service on the way down may have been deployed
        if findings.deploy is None and (changed := findings.first_change(service)) is not None:
            check_deploys(run, findings, service, changed)
    if path:
        findings.origin = path[-1]
        caller = path[-2] if len(path) > 1 else target
        _investigate_origin(run, findings, [s for s in topology.get(caller, ()) if s != findings.origin])
    elif findings.deploy is None and (saturated := saturation_at_onset(findings, target, first)) is not None:
        check_onset(run, findings, target, saturated)
    gather_suspects(run, findings, topology, target)
    weigh_runtime_flags(run, findings)
    weigh_partial_rollouts(run, findings)
    check_reconnect_storm(run, findings, topology, target)
    _operation_at_onset(run, findings, topology, target)


def _operation_at_onset(run: ProbeRun, findings: Findings, topology: Mapping[str, Sequence[str]], target: str) -> None:
    """No deploy and no strong suspect: an operation someone ran near the degraded services at the onset (a statement
    in the database it calls, a campaign on a provider it shares) is the hypothesis left."""
    first = findings.first_change(target)
    if first is None:
        return
    near = set(ranking.neighbourhood(topology, target))
    if findings.origin:
        near |= set(ranking.neighbourhood(topology, findings.origin))
    starts = [at for service in near if (changed := findings.first_change(service)) for at in [changed[1]]]
    onset = min([first[1], *starts])
    check_failover_storm(run, findings, topology, target, onset)
    if findings.deploy is not None or any(s.score >= MIN_SUSPECT_SCORE for s in findings.suspects):
        # a deploy is a suspect, not the answer: an operation at the onset is weighed against it on the same evidence
        operation = check_operations(run, near, onset)
        if operation is not None:
            rivals.other_tables_waited_on(findings.suspects, operation)
            findings.suspects.append(rivals.operation_suspect(findings, topology, target, operation, onset))
            findings.suspects.sort(key=lambda s: -s.score)
        return
    in_path = [target, *topology.get(target, ()), *([findings.origin] if findings.origin else [])]
    findings.operation = check_database_locks(run, in_path, onset) or check_operations(run, near, onset)


def _when_flat(
    run: ProbeRun, findings: Findings, topology: Mapping[str, Sequence[str]], target: str, text: str
) -> None:
    """Still flat after the wider look and the neighbours: healthy inside, yet stale in what it serves (a producer
    upstream), or answering a status the error rate does not count (a 429 the question names)."""
    if findings.first_change(target) is not None:
        return
    check_staleness(run, findings, topology, target)
    if findings.stale is None:
        check_status_answered(run, findings, text)
    if findings.stale is None and findings.status is None:
        check_status_received(run, findings, topology)
    if findings.stale is None and findings.status is None:
        check_behind(run, findings, topology, target)


def _steady_target_moves(run: ProbeRun, findings: Findings, target: str, topology: Mapping[str, Sequence[str]]) -> str:
    """The asked service is steady even over the wider look, yet the user sees trouble: a producer upstream, a
    caller, or a sibling within two hops may carry it (stale data from a lagging consumer, a canary in the service
    that calls the asked database). The neighbour that changed most, clearly, is diagnosed instead; the answer says
    the asked service looks healthy. Nothing clear nearby keeps the asked service and its flat answer."""
    if findings.first_change(target) is not None and _felt_by_users(findings, target):
        return target
    near = [s for s in ranking.neighbourhood(topology, target) if s != target]
    why = f"{target} itself looks steady; the trouble may sit within two hops of it"
    moved = entry_service(run, findings, near, topology, why=why, chosen=True) if near else None
    if moved is None or findings.felt_weight(moved) < STRONG:
        return target
    findings.steady_asked = target
    findings.service = moved
    return moved


def _felt_by_users(findings: Findings, service: str) -> bool:
    """Whether a golden signal of the service changed the way its callers feel (a service named as a suspect whose
    only change is its own CPU is steady for its users)."""
    health = findings.health.get(service)
    golden = {findings.roles.get(role) for role in GOLDEN_ROLES}
    return health is not None and any(m in golden and findings.weight(m, p) for m, p in health.changes())


def _investigate_origin(run: ProbeRun, findings: Findings, siblings: Sequence[str]) -> None:
    """The changed dependency: its deploys and logs; then what its healthy-looking siblings logged meanwhile."""
    origin_first = findings.first_change(findings.origin)
    if findings.deploy is None and origin_first is not None:
        check_deploys(run, findings, findings.origin, origin_first)
    check_logs(run, findings, findings.origin, origin_first)
    if findings.deploy is not None or origin_first is None:
        return
    for sibling in siblings:
        health = findings.health.get(sibling)
        if sibling in findings.signatures or (health is not None and health.changes()):
            continue
        why = (
            f"{sibling} sits beside {findings.origin} and its metrics look steady, but it may have logged "
            f"what set this off (a flush, a failover, a reload). "
        )
        check_logs(run, findings, sibling, origin_first, why=why)
        if sibling in findings.signatures:
            findings.neighbours.append(sibling)


def _surveyed_gap(run: ProbeRun, findings: Findings, target: str) -> bool:
    """Survey the asked service; True when its series stopped with the collection (then checked around the gap)."""
    findings.service = target
    _survey(run, findings, target)
    return check_around_gap(run, findings, target)


def _survey(run: ProbeRun, findings: Findings, service: str) -> None:
    """Golden signals (unless a scan already read them), then saturation signals of one service."""
    health = findings.health.setdefault(service, ServiceHealth(service))
    for role in (*GOLDEN_ROLES, *SATURATION_ROLES):
        metric = findings.roles.get(role)
        if metric is None or metric in health.readings:
            continue
        if role in GOLDEN_ROLES:
            thought = f"Checking {service}'s {metric} over {run.window.label} for a change point (golden signals)."
        else:
            thought = f"Checking {service}'s {metric}: saturation or restarts would explain a change without a deploy."
        run.read_metric(thought, health, metric)
