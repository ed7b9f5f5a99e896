"""When the trouble started: further back than the window when the window is flat, the saturation that began
with it, and the user's time against the metrics' onset.

A problem that began before the playbook's window (the default is the last 24 h), or that is constant across
it, shows no change point in it; that is not "no incident". So when the asked service is flat, its signals are
read once more over LOOKBACK_RANGE at a coarse step (query_metrics picks about an hour at 288 points, and pins a
change to the minute). A level shift found there, before the window and still in force, becomes the onset: the
run's window widens to it, so the deploys, the diff, the logs and the downstream walk use that onset.
Otherwise the findings record how far back the metrics were checked, for an honest verdict.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from bot.playbook.evidence import ChangePoint
from bot.playbook.findings import (
    GOLDEN_ROLES,
    SATURATION_ROLES,
    SIGNIFICANT_STRENGTH,
    Findings,
    Lookback,
    ServiceHealth,
)
from bot.playbook.probes import ProbeRun, Window, check_saturation
from bot.playbook.verdict import SAME_ONSET_MINUTES
from bot.playbook.zones import is_utc, local_with_utc
from tools.base import ToolError
from tools.timerange import duration_from_text, instant_from_text

LOOKBACK_RANGE = "7d"  # one more look, coarse so it stays cheap; Prometheus answers with what it holds
TIME_OFF_MINUTES = 15  # the user's time and the metrics' onset further apart than this: say so


def look_further_back(run: ProbeRun, findings: Findings, service: str) -> None:
    """The asked service is flat over the run's window: read its signals over LOOKBACK_RANGE once. A level shift
    before the window that still holds becomes its onset and the run's window; else the reach is recorded."""
    narrow = run.window
    if findings.first_change(service) is not None or findings.lookback is not None:
        return
    narrow_start = start_of(narrow)
    if narrow_start is None:
        return
    run.window = Window(LOOKBACK_RANGE, f"the last {LOOKBACK_RANGE}", narrow.end)
    wide = ServiceHealth(service)
    starts = []  # about where each series begins: its first summary bucket
    for role in (*GOLDEN_ROLES, *SATURATION_ROLES):
        if (metric := findings.roles.get(role)) is not None:
            thought = (
                f"{service}'s {metric} shows no change over {narrow.label}; a problem that began earlier is "
                f"flat there too, so looking back over {run.window.label} at a coarse step."
            )
            series = run.read_metric(thought, wide, metric)
            starts.append(series.summary.first_at if series is not None else None)
    found = ongoing_shift(wide, narrow_start)
    reach = min((at for at in starts if at is not None), default=None)
    if found is None:
        run.window = narrow
        findings.lookback = Lookback(f"the last {LOOKBACK_RANGE}", narrow.label, reach)
        return
    findings.health[service] = wide
    findings.window_label = run.window.label
    findings.lookback = Lookback(run.window.label, narrow.label, reach, onset_text(service, *found, narrow))


def onset_text(service: str, metric: str, point: ChangePoint, now_level: str, narrow: Window) -> str:
    """ "Started yesterday at 15:05 UTC, before the last 24h, and still going on: order p99 latency at 1,180 ms
    since, vs 200 ms before." The day as a word or as the tools print it (11-28): "30 h ago" or a year-long date
    would be a claim no observation backs."""
    return (
        f"Started {day_of(point.at, narrow.end)} at {point.at:%H:%M} UTC, before {narrow.label}, and still going "
        f"on: {service} {metric.replace('_', ' ')} at {now_level} since, vs {point.before_text} before."
    )


def day_of(moment: datetime, now: datetime) -> str:
    """ "today", "yesterday", or "on 11-28" (month-day, as query_metrics prints a multi-day window)."""
    days = (now.date() - moment.date()).days
    return "today" if days == 0 else "yesterday" if days == 1 else f"on {moment:%m-%d}"


def start_of(window: Window) -> datetime | None:
    """Where a playbook window begins: the left side of its ISO interval, or its end less its duration ("24h"),
    read by the same rules as every tool's window (tools.timerange)."""
    left, slash, _ = window.range_arg.partition("/")
    try:
        return instant_from_text(left, window.end) if slash else window.end - duration_from_text(window.range_arg)
    except ToolError:
        return None


def ongoing_shift(health: ServiceHealth, before: datetime) -> tuple[str, ChangePoint, str] | None:
    """(metric, first shift, level now) of the earliest level shift before `before` whose metric has not come
    back: a spike that came and went, or a shift undone later, is a past incident, not the one asked about."""
    judged: set[str] = set()
    for metric, point in health.changes():
        if point.spike or point.at >= before or metric in judged:
            continue
        judged.add(metric)  # its earliest shift; a later one back down is its recovery, not an onset
        points = [p for p in health.readings.get(metric) or () if not p.spike and p.at >= point.at]
        start, last = point.before, points[-1].after
        if start and last and abs(math.log(last / start)) >= SIGNIFICANT_STRENGTH:
            return metric, point, points[-1].after_text
    return None


def saturation_at_onset(findings: Findings, target: str, first: tuple[str, datetime] | None) -> datetime | None:
    """When CPU, memory or restarts changed with the first change (at a 5 min step, latency and CPU often share
    the same point), the moment they did: a job that started then is worth looking for."""
    health = findings.health.get(target)
    if first is None or health is None:
        return None
    moments = [
        p.at
        for m, p in health.changes()
        if findings.role_of(m) in SATURATION_ROLES and p.at - first[1] <= timedelta(minutes=SAME_ONSET_MINUTES)
    ]
    return min(moments, default=None)


def time_note(said: datetime | None, first: tuple[str, datetime] | None) -> str:
    """ "You said 09:00; the errors start at 09:40." when the metrics' onset is well away from the user's time; the
    user's time in the zone they meant, with UTC beside it when that is not UTC ("You said 06:19 CET (05:19 UTC)")."""
    if said is None or first is None or abs(first[1] - said) < timedelta(minutes=TIME_OFF_MINUTES):
        return ""
    metric, onset = first
    when = f"{said:%H:%M}" if is_utc(said.tzinfo or UTC) else local_with_utc(said, said.tzinfo or UTC)
    return f"You said {when}; the {metric.replace('_', ' ')} change starts at {onset.astimezone(UTC):%H:%M} UTC."


def saturation_where_it_changed(run: ProbeRun, findings: Findings, saturation: Sequence[str]) -> None:
    """Last (a saturation signal that rose a minute before the symptom is not the symptom): the saturation of the
    asked service, then of the dependency the walk ended at when the question names its caller (a pool, a queue, GC
    in the service that degraded first weighs for the deploy that changed it)."""
    for service in dict.fromkeys(s for s in (findings.service, findings.origin) if s):
        check_saturation(run, findings, service, saturation)
