"""Canned tool results for the playbook's tests: the typed data a tool returns, with the text rendered from it the
way the tool renders it (so a step reads exactly as a real one), and a query_metrics that answers from them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from bot.engine.types import Step
from tools.analysis.changepoints import ChangePoint, Spike, Stop
from tools.analysis.configdiff import key_changes_from_diff, risky_lines_from_diff
from tools.base import Toolbox, ToolData, ToolResult, tool
from tools.deploys.records import DeployList, DeployRecord, DiffReport, render_deploys, render_diff
from tools.logs.model import LogEntry
from tools.logs.render import render_logs
from tools.logs.summary import LogSummary, OnsetContrast, Signature, SignatureBlock
from tools.metrics.series import Collection, MetricSeries, MetricStats, SeriesSummary, render_series
from tools.timerange import TimeWindow

WINDOW_HOURS = 6


def clock(now: datetime, hhmm: str) -> datetime:
    """HH:MM on `now`'s day."""
    hour, minute = (int(part) for part in hhmm.split(":"))
    return now.replace(hour=hour, minute=minute, second=0, microsecond=0)


def change(now: datetime, hhmm: str, before: float, after: float) -> ChangePoint:
    return ChangePoint(clock(now, hhmm), before, after)


def spike(now: datetime, start: str, before: float, peak: tuple[str, float], back: tuple[str, float]) -> Spike:
    """A spike from `before` at `start`, to its peak (when, value), back to a level (when, value)."""
    return Spike(clock(now, start), before, clock(now, peak[0]), peak[1], clock(now, back[0]), back[1])


def stop(now: datetime, hhmm: str, before: float) -> Stop:
    last = clock(now, hhmm)
    return Stop(last, before, (now - last).total_seconds())


def series(
    now: datetime,
    service: str,
    metric: str,
    unit: str,
    levels: tuple[float, float, float, float],
    *,
    changes: Sequence[ChangePoint] = (),
    spikes: Sequence[Spike] = (),
    stopped: Stop | None = None,
    collection: Collection | None = None,
) -> MetricSeries:
    """One query_metrics result over the WINDOW_HOURS before `now`: `levels` are its min, median, max and last."""
    window = TimeWindow(now - timedelta(hours=WINDOW_HOURS), now)
    cells = tuple((window.start + timedelta(minutes=30 * i), levels[1]) for i in range(2 * WINDOW_HOURS))
    return MetricSeries(
        service,
        metric,
        f'{metric}{{service="{service}"}}',
        unit,
        window,
        60,
        SeriesSummary(1800, cells, 60 * WINDOW_HOURS),
        MetricStats(*levels),
        tuple(changes),
        1,
        tuple(spikes),
        stop=stopped,
        collection=collection,
    )


def steady(now: datetime, service: str, metric: str, unit: str, level: float) -> MetricSeries:
    return series(now, service, metric, unit, (level * 0.9, level, level * 1.1, level))


def metrics_toolbox(found: Mapping[tuple[str, str], MetricSeries]) -> Toolbox:
    """query_metrics answering from `found` by (service, metric); "no data" for anything else."""

    def query_metrics(service: str, metric: str, range: str = "6h") -> ToolResult:
        """Canned series, as the tool returns them: data and the text rendered from it (tests only)."""
        data = found.get((service, metric))
        if data is None:
            return ToolResult("no_data", "no data: the query returned no samples")
        return ToolResult("ok", render_series(data), data)

    return Toolbox([tool(query_metrics)])


def deploy(service: str, version: str, at: datetime, previous: str = "", summary: str = "") -> DeployRecord:
    return DeployRecord(service, version, at, "nadia.r", summary or f"Release {version}", "", previous, ("a.yaml",))


def deploys(service: str | None, window: TimeWindow, *records: DeployRecord) -> DeployList:
    """query_deploy_records' result: `records` newest first."""
    return DeployList(service, window, tuple(sorted(records, key=lambda r: r.at, reverse=True)), len(records))


def diff(record: DeployRecord, text: str) -> DiffReport:
    """query_deploy_diff's result, with what the diff changed read by the rules the tool uses."""
    return DiffReport(record, text, len(text), tuple(key_changes_from_diff(text)), tuple(risky_lines_from_diff(text)))


def entry(at: datetime, service: str, message: str, level: str = "ERROR") -> LogEntry:
    return LogEntry(at, service, level, message, "c.e.p.s.Store", f"{service}-7xqpn", "659ae13d")


def signature(template: str, count: int, first: datetime, example: LogEntry) -> Signature:
    return Signature(template, count, first, example.timestamp, example)


def block(*signatures: Signature, sampled: int = 0, total: int = 0) -> SignatureBlock:
    """ERROR signatures clustered from the newest `sampled` of `total` lines (all of them by default)."""
    lines = sum(s.count for s in signatures)
    return SignatureBlock(("ERROR",), sampled or lines, total or lines, len(signatures), signatures)


def logs(
    service: str,
    window: TimeWindow,
    errors: SignatureBlock | None,
    *,
    onset: datetime | None = None,
    new: SignatureBlock | None = None,
) -> LogSummary:
    """query_logs(level=ERROR)'s result: its ERROR signatures, and with an onset the ones new after it."""
    total = sum(s.count for s in errors.top) if errors else 0
    contrast = OnsetContrast(onset, 40, total, new) if onset is not None else None
    return LogSummary(service, window, "", ("ERROR",), total, {"ERROR": total}, ("ERROR",), errors, onset=contrast)


_RENDER: dict[str, Any] = {
    "query_metrics": render_series,
    "query_deploy_records": render_deploys,
    "query_deploy_diff": render_diff,
    "query_logs": render_logs,
}


def step(index: int, action: str, data: ToolData, **args: str) -> Step:
    """A step whose tool answered `data`, its observation rendered from it as the tool renders it."""
    return Step(index, "", action, args, _RENDER[action](data), "ok", data=data)
