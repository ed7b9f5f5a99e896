"""Tool results as the built-in tools make them: typed data, and the text rendered from it by the tools' renderers.

Readers outside tools/ (the digest, the Slack findings, the quick lookup, thread memory) read a step's data and
quote the text; tests build both from one value here, so a test's step is what a real tool would have returned.
The values follow the default incident: order's p99 jumps from 212 ms to 1,180 ms at 15:05 after deploy v2.8.1
(15:02) raised hikari.maximumPoolSize from 50 to 200, and the pool times out.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.engine.types import Step, StepStatus
from tools.analysis.changepoints import ChangePoint, Spike, Stop
from tools.analysis.configdiff import key_changes_from_diff, risky_lines_from_diff
from tools.analysis.ranking import ChangeRanking, render_ranking
from tools.base import ToolData, ToolResult
from tools.deploys.records import DeployList, DeployRecord, DiffReport, render_deploys, render_diff
from tools.logs.model import LogEntry
from tools.logs.render import render_logs
from tools.logs.summary import LogSummary, Signature, SignatureBlock, trim_stack
from tools.metrics.series import MetricSeries, MetricStats, SeriesSummary, render_series
from tools.timerange import TimeWindow

DAY = datetime(2026, 11, 28, tzinfo=UTC)
ONSET = DAY.replace(hour=15, minute=5)
WINDOW = TimeWindow(ONSET - timedelta(hours=1), ONSET + timedelta(hours=1))
POOL_TIMEOUT = "HikariPool-1 - Connection is not available, request timed out after 30000ms (total=200, active=200)"
POOL_DIFF = """diff --git a/services/order/application.yaml b/services/order/application.yaml
@@ -4,7 +4,7 @@ spring:
   datasource:
     hikari:
-      maximumPoolSize: 50
+      maximumPoolSize: 200
       minimumIdle: 10"""


def at(hhmm: str) -> datetime:
    """A time of the incident's day: at("15:05")."""
    hours, minutes = hhmm.split(":")
    return DAY.replace(hour=int(hours), minute=int(minutes))


def series(
    service: str = "order",
    metric: str = "p99_latency",
    *,
    unit: str = "ms",
    changes: Sequence[tuple[str | datetime, float, float]] = (("15:05", 212.0, 1_180.0),),
    spikes: Sequence[Spike] = (),
    stop: Stop | None = None,
    samples: int = 120,
    window: TimeWindow = WINDOW,
) -> MetricSeries:
    """A series with level shifts (HH:MM or a time, before, after); no changes and no spike is a steady one."""
    points = [value for _, before, after in changes for value in (before, after)] or [100.0]
    stats = MetricStats(min(points), sorted(points)[len(points) // 2], max(points), points[-1]) if samples else None
    cells = tuple((window.start + timedelta(minutes=10 * i), points[-1]) for i in range(12 if samples else 0))
    return MetricSeries(
        service,
        metric,
        f'rate(x{{service="{service}"}}[5m])',
        unit,
        window,
        30,
        SeriesSummary(600, cells, samples),
        stats,
        tuple(ChangePoint(when if isinstance(when, datetime) else at(when), a, b) for when, a, b in changes),
        1,
        tuple(spikes),
        stop=stop,
    )


def log_summary(
    service: str = "order", count: int = 256, message: str = POOL_TIMEOUT, first: str = "15:05", level: str = "ERROR"
) -> LogSummary:
    """A search whose top (only) signature is `count` lines of `message` from `first` on; count 0: no lines."""
    entry = LogEntry(at(first) + timedelta(minutes=30), service, level, message, "c.z.h.p.HikariPool", f"{service}-1")
    stack = trim_stack("java.sql.SQLTransientConnectionException: timed out\n  at com.zaxxer.hikari.pool.HikariPool")
    template = "HikariPool-<n> - Connection is not available, request timed out after <n>ms"
    top = Signature(template, count, at(first), entry.timestamp, entry, stack)
    block = SignatureBlock((level,), count, count, 1, (top,)) if count else None
    counts = {level: count, "INFO": 40} if count else {"INFO": 40}
    return LogSummary(service, WINDOW, "", (level,), count, counts, (level,), block)


def record(
    version: str = "v2.8.1",
    hhmm: str = "15:02",
    *,
    service: str = "order",
    author: str = "alice",
    summary: str = "Raise Hikari pool size",
    previous: str = "v2.8.0",
) -> DeployRecord:
    return DeployRecord(service, version, at(hhmm), author, summary, "19653a9543", previous, ("application.yaml",))


def deploys(*records: DeployRecord, service: str | None = "order") -> DeployList:
    """The deploys of a window, newest first as given."""
    return DeployList(service, WINDOW, tuple(records), len(records))


def diff_report(diff: str = POOL_DIFF, deploy: DeployRecord | None = None) -> DiffReport:
    """A deploy's diff with the keys and risky lines tools/analysis/configdiff.py reads from it, as the tool does."""
    return DiffReport(
        deploy or record(), diff, len(diff), tuple(key_changes_from_diff(diff)), tuple(risky_lines_from_diff(diff))
    )


def rendered(data: ToolData) -> str:
    """The text a tool renders from its data."""
    if isinstance(data, MetricSeries):
        return render_series(data)
    if isinstance(data, LogSummary):
        return render_logs(data)
    if isinstance(data, DeployList):
        return render_deploys(data)
    if isinstance(data, DiffReport):
        return render_diff(data)
    if isinstance(data, ChangeRanking):
        return render_ranking(data)
    raise TypeError(f"no renderer for {type(data).__name__}")


def result(data: ToolData, status: str = "ok") -> ToolResult:
    """What the tool returns: its status, the text rendered from `data`, and `data`."""
    return ToolResult("ok" if status == "ok" else "no_data", rendered(data), data)


def step(index: int, action: str, data: ToolData, *, thought: str = "", status: StepStatus = "ok", **args: Any) -> Step:
    """A step that ran `action` and got `data` back, its observation rendered from it."""
    return Step(index, thought, action, args, rendered(data), status, data=data)
