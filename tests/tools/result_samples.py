"""One rich value of every tool result kind (every optional part filled in), for the round-trip and store tests."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from tests.tools.database.samples import database_samples
from tools.analysis.changepoints import ChangePoint, Spike, Stop
from tools.analysis.configdiff import KeyChange
from tools.analysis.ranking import ChangeRanking, NewSignature, Onset, Reason, Suspect
from tools.analysis.trends import Sawtooth, Trend
from tools.base import ToolData
from tools.calculate import Calculation
from tools.deploys.records import DeployList, DeployRecord, DiffReport
from tools.kubernetes.objects import (
    ContainerState,
    EventList,
    KubeEvent,
    Pod,
    PodList,
    Revision,
    RolloutHistory,
    Termination,
)
from tools.logs.model import LogEntry
from tools.logs.summary import LogLine, LogSummary, OnsetContrast, Signature, SignatureBlock
from tools.metrics.series import Collection, MetricSeries, MetricStats, SeriesSummary, ServiceList
from tools.metrics.views import MetricBreakdown, PartMove, RelatedRead, ResourceUse
from tools.runbooks.hits import RunbookHits, RunbookSection
from tools.timerange import TimeWindow

AT = datetime(2026, 11, 28, 15, 5, tzinfo=UTC)
WINDOW = TimeWindow(AT - timedelta(hours=3), AT + timedelta(hours=1, seconds=7, microseconds=250_000))


def minutes(n: int) -> datetime:
    return AT + timedelta(minutes=n)


def metric_series() -> MetricSeries:
    """A latency series with a drop of x0.653 (a ratio the text rounds), a spike, a trend, a sawtooth and a stop."""
    cells = tuple((minutes(15 * i - 180), 212.0 + i * 0.123456789) for i in range(12))
    return MetricSeries(
        "order",
        "p99_latency",
        'histogram_quantile(0.99, sum by (le) (rate(x_bucket{service="order"}[5m])))',
        "ms",
        WINDOW,
        60,
        SeriesSummary(900, cells, 240),
        MetricStats(190.5, 212.25, 2455.0, 138.4),
        (ChangePoint(minutes(2), 212.0, 138.436), ChangePoint(minutes(40), 0.0, 5.0)),
        2,
        (Spike(minutes(-60), 94.0, minutes(-56), 2455.0, minutes(-30), 93.0),),
        (Trend(minutes(-120), minutes(60), 212.0, 890.0, 0.35),),
        Sawtooth((minutes(-90), minutes(-45)), 420.0, 890.0),
        Stop(minutes(50), 55.9, 600.0),
        Collection("collection gap", "up ended with it", "all 3 others' x ended", 2, 3, 3, minutes(49)),
        None,
        None,
        ResourceUse("memory", "order-7d9-x2k", 1840.0, 1024.0, 2048.0, 3),
        (RelatedRead("rate_limited", "rate_limited", "%", 0.2, 11.5, ChangePoint(minutes(-16), 0.2, 11.0)),),
    )


def metric_breakdown() -> MetricBreakdown:
    """A canary's new pod measured from the others' level, and an older pod that barely moved."""
    parts = (
        PartMove("order-2c1-new", 0.1, 26.6, minutes(-20), 40, new=True),
        PartMove("order-1b9-old", 0.1, 0.094, None, 120),
    )
    promql = 'sum by (pod) (rate(x{service="order",status=~"5.."}[5m]))'
    return MetricBreakdown("order", "error_rate", "pod", "pod", promql, "%", WINDOW, 60, parts)


def entry(message: str, level: str = "ERROR", at: datetime = AT) -> LogEntry:
    return LogEntry(at, "order", level, message, "c.z.h.p.HikariPool", "order-1", "abc123", "")


def log_summary(
    example: str = "HikariPool-1 - Connection is not available, request timed out after 30000ms",
) -> LogSummary:
    signature = Signature(
        "HikariPool-<n> - Connection is not available, request timed out after <n>ms",
        256,
        minutes(0),
        minutes(30),
        entry(example),
        (
            "java.sql.SQLTransientConnectionException: timed out",
            "at com.zaxxer.hikari.pool.HikariPool",
            "… 12 more lines",
        ),
    )
    warn = Signature("lock wait on <n> rows", 3, minutes(-5), minutes(1), entry("lock wait on 12 rows", "WARN"))
    return LogSummary(
        "order",
        WINDOW,
        '"timed out" pool*',
        ("ERROR", "WARN"),
        300,
        {"ERROR": 256, "WARN": 44, "INFO": 1200},
        ("ERROR",),
        SignatureBlock(("ERROR",), 256, 256, 1, (signature,)),
        SignatureBlock(("WARN",), 44, 900, 2, (warn,)),
        OnsetContrast(AT, 1000, 812, SignatureBlock(("FATAL", "ERROR", "WARN"), 1, 1, 1, (signature,))),
        (LogLine(entry("timed out"), 4, minutes(-2)), LogLine(entry("lock wait", "WARN"))),
    )


def deploy(version: str = "v2.8.1", minutes_before: int = 3) -> DeployRecord:
    return DeployRecord(
        "order",
        version,
        minutes(-minutes_before),
        "li.wei",
        "Raise Hikari pool size",
        "0123456789abcdef",
        "v2.8.0",
        ("a.yaml",),
    )


def samples() -> list[ToolData]:
    """One of each kind tools/results.py lists."""
    key = KeyChange("spring.datasource.hikari.maximumPoolSize", "50", "200", "services/order/application.yaml")
    suspect = Suspect(
        "deploy",
        "deploy order/v2.8.1 at 15:02",
        (Reason(2, "just before"), Reason(-1, "no")),
        "order",
        minutes(-3),
        "v2.8.1",
    )
    surge = Suspect(
        "surge", "traffic surge in web (x2.0 at 15:00)", (Reason(3, "shares db"),), "web", minutes(-5), ratio=2.0
    )
    container = ContainerState(
        "order",
        False,
        7,
        "CrashLoopBackOff",
        "back-off 5m0s",
        None,
        Termination("OOMKilled", 137, minutes(-4), "killed"),
    )
    return [
        metric_series(),
        metric_breakdown(),
        ServiceList("service", ("order", "payment", "web"), 2, {"order": ("payment", "orders-db")}),
        log_summary(),
        DeployList("order", WINDOW, (deploy(), deploy("v2.8.0", 600)), 3),
        DeployList(None, WINDOW, (), 0, latest_before=deploy(), earlier_error=""),
        DiffReport(
            deploy(), "-  maximumPoolSize: 50\n+  maximumPoolSize: 200", 9000, (key,), ("db/1.sql: ALTER TABLE x",)
        ),
        DeployList(
            "order",
            WINDOW,
            (replace(deploy("config@3f2a9c1"), environment="prod", status="Succeeded"),),
            1,
            notes=("left out 1 deploy outside prod (order/v2.9.0-rc1 in staging): not suspects there",),
        ),
        DiffReport(deploy("config@3f2a9c1"), "", 0, (key,), (), ("values.yaml: keys read from the hunks",), True),
        PodList("shop", "order", "app=order", (Pod("order-x", "Running", (container,), "node-1"),), True),
        EventList(
            "shop",
            "order",
            WINDOW,
            (KubeEvent(minutes(-3), "Warning", "BackOff", "Pod", "order-x", 14, "Back-off"),),
            5,
            2,
        ),
        RolloutHistory(
            "shop", "order", (Revision(2, "order-6f7c9", minutes(-10), (("order", "img:v2"),), 1, 2, "bump", True),)
        ),
        RunbookHits(
            "pool exhausted", "order", (RunbookSection("db.md", "Pools › Exhausted", ("order",), "Check max."),)
        ),
        ChangeRanking(
            "order",
            WINDOW,
            Onset("p99_latency", AT, 0.653),
            AT,
            timedelta(hours=6),
            (suspect, surge),
            (NewSignature("order", 12, "x <n>"),),
            ("not run: logs",),
        ),
        Calculation("1180 / 212", 1180 / 212),
        *database_samples(),
    ]
