"""Every built-in tool's typed result, by kind, and how code outside tools/ reads them: the one place to look.

A Step (bot/engine/types.py) and a ToolResult carry the data a tool rendered its text from. Code that wants a fact
asks for it here (`series_of(step)`, `deploys_of(step)`, `signatures_of(step)`) instead of reading the text the
model reads: the text rounds numbers (a latency drop to x0.653 prints as "x0.7", which reads back as no change)
and may change its wording; the data does not. To quote a fact exactly as the model saw it (the
grounding check wants an answer's numbers in an observation), render it with the function beside its type.

    tool                    kind             data (module)                           renders as the text does
    query_metrics           metric_series    MetricSeries (tools/metrics/series)     change_line, finding_lines,
                                                                                     stats_line, value_text ...
    query_metrics(by=...)   metric_breakdown MetricBreakdown (tools/metrics/views)     part_line, render_breakdown
    list_services           service_list     ServiceList (tools/metrics/series)      render_services
    query_logs              log_summary      LogSummary (tools/logs/summary)         tools/logs/render: entry_line,
                                                                                     block_lines, counts_line
    query_deploy_records    deploy_list      DeployList (tools/deploys/records)      record_line, render_deploys
    query_deploy_diff       diff_report      DiffReport (tools/deploys/records)      render_diff
    query_pods              pod_list         PodList (tools/kubernetes/objects)      render_pods
    query_k8s_events        event_list       EventList (tools/kubernetes/objects)    render_events
    query_rollout_history   rollout_history  RolloutHistory (ditto)                  render_rollouts
    search_runbooks         runbook_hits     RunbookHits (tools/runbooks/hits)       RunbookSection.citation
    query_db_sessions       db_sessions      DbSessions (tools/database/sessions)    render_sessions, statement_line
    query_db_connections    db_connections   DbConnections (ditto)                   connections_summary
    query_db_locks          db_locks         DbLocks (tools/database/locks)          render_locks, session_text
    query_db_replication    db_replication   DbReplication (tools/database/replic..) replica_line, replay_line,
                                                                                     slot_line
    query_db_storage        db_storage       DbStorage (tools/database/storage)      size_line
    find_changes            change_ranking   ChangeRanking (tools/analysis/ranking)  suspect_line, render_ranking
    calculate               calculation      Calculation (tools/calculate)           number_to_text

MCP tools return text only (data None). tools/resultjson.py stores the data in a trace and reads it back.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from tools.analysis.ranking import ChangeRanking
from tools.base import ToolData
from tools.calculate import Calculation
from tools.database.locks import DbLocks
from tools.database.replication import DbReplication
from tools.database.sessions import DbConnections, DbSessions
from tools.database.storage import DbStorage
from tools.deploys.records import DeployList, DiffReport
from tools.kubernetes.objects import EventList, PodList, RolloutHistory
from tools.logs.summary import LogHistogram, LogSummary, Signature
from tools.metrics.series import MetricSeries, ServiceList
from tools.metrics.views import MetricBreakdown
from tools.runbooks.hits import RunbookHits

KINDS: dict[str, type[ToolData]] = {
    cls.kind: cls
    for cls in (
        MetricSeries,
        MetricBreakdown,
        ServiceList,
        LogSummary,
        DeployList,
        DiffReport,
        PodList,
        EventList,
        RolloutHistory,
        RunbookHits,
        DbSessions,
        DbConnections,
        DbLocks,
        DbReplication,
        DbStorage,
        ChangeRanking,
        Calculation,
    )
}
_ERRORS = ("ERROR", "FATAL")
DatabaseView = DbSessions | DbConnections | DbLocks | DbReplication | DbStorage
T = TypeVar("T", bound=ToolData)


class Carrier(Protocol):
    """Anything that carries a tool's data: a Step, a ToolResult."""

    @property
    def data(self) -> ToolData | None: ...


def data_of(carrier: Carrier, kind: type[T]) -> T | None:
    """The carrier's data when it is of `kind`, else None (another tool's, a text-only tool's, an error)."""
    data = carrier.data
    return data if isinstance(data, kind) else None


def series_of(carrier: Carrier) -> MetricSeries | None:
    """query_metrics: stats, change points, spikes, trends, sawtooth, a stop and its collection cause."""
    return data_of(carrier, MetricSeries)


def breakdown_of(carrier: Carrier) -> MetricBreakdown | None:
    """query_metrics(by=...): every pod's, version's or peer's series, the most moved first."""
    return data_of(carrier, MetricBreakdown)


def services_of(carrier: Carrier) -> tuple[str, ...]:
    """list_services: every service Prometheus knows (() when the step is not one)."""
    found = data_of(carrier, ServiceList)
    return found.services if found else ()


def logs_of(carrier: Carrier) -> LogSummary | None:
    """query_logs: counts by level, signatures (errors, warnings, new since an onset), the newest lines."""
    return data_of(carrier, LogSummary)


def log_histogram_of(carrier: Carrier) -> LogHistogram | None:
    """query_logs' lines per bucket over the window, by level and per top signature (by Signature.key), with the
    change points in the error lines; `.series()` is the error-log rate (lines per minute) a detector reads."""
    summary = logs_of(carrier)
    return summary.histogram if summary is not None else None


def signatures_of(carrier: Carrier, level: str = "ERROR") -> tuple[Signature, ...]:
    """query_logs' top signatures at ERROR/FATAL (or, with level="WARN", at WARN), biggest first; () when none."""
    summary = logs_of(carrier)
    wanted = {"WARN"} if level.upper().startswith("WARN") else set(_ERRORS)
    blocks = (summary.signatures, summary.warnings) if summary else ()
    return next((b.top for b in blocks if b is not None and wanted & set(b.levels)), ())


def new_signatures_of(carrier: Carrier) -> tuple[Signature, ...]:
    """query_logs(onset=...): the signatures, any level, after the onset and absent before it."""
    summary = logs_of(carrier)
    contrast = summary.onset if summary else None
    return contrast.new.top if contrast is not None and contrast.new is not None else ()


def deploys_of(carrier: Carrier) -> DeployList | None:
    """query_deploy_records: the deploys in the window, newest first (or the latest before it)."""
    return data_of(carrier, DeployList)


def diff_of(carrier: Carrier) -> DiffReport | None:
    """query_deploy_diff: the deploy, the diff as shown, its changed keys (old → new) and risky lines."""
    return data_of(carrier, DiffReport)


def pods_of(carrier: Carrier) -> PodList | None:
    return data_of(carrier, PodList)


def events_of(carrier: Carrier) -> EventList | None:
    return data_of(carrier, EventList)


def rollouts_of(carrier: Carrier) -> RolloutHistory | None:
    return data_of(carrier, RolloutHistory)


def runbooks_of(carrier: Carrier) -> RunbookHits | None:
    return data_of(carrier, RunbookHits)


def database_of(carrier: Carrier) -> DatabaseView | None:
    """query_db_*: one database view (sessions, connections, lock waits, replication, storage); which one is its type.

    Each names its target (`database`), how it was read (`source`: "sql", now; "postgres_exporter", over `window`)
    and carries its facts typed: DbLocks.roots and .waiting, DbReplication.orphaned_slots and each ReplayState.stuck,
    DbConnections.available and .used_share, DbStorage.of("wal") with growth per hour.
    """
    data = carrier.data
    return data if isinstance(data, DbSessions | DbConnections | DbLocks | DbReplication | DbStorage) else None


def ranking_of(carrier: Carrier) -> ChangeRanking | None:
    """find_changes: the onset, the suspects best first with their reasons, new log signatures."""
    return data_of(carrier, ChangeRanking)


def calculation_of(carrier: Carrier) -> Calculation | None:
    return data_of(carrier, Calculation)
