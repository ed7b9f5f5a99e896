"""The optional toolsets (Kubernetes, runbooks, the database, MCP servers) and the backends that extend logs and
deploys (Loki, Kubernetes rollouts), each built from its own Settings section. Turning one on is configuration only.

bot/wiring/core.py adds `optional_tool_specs` to the catalogue and asks here for the Loki and Kubernetes sources;
bot/wiring/readiness.py lists every toolset with its check.
"""

from __future__ import annotations

import atexit
import logging
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from bot.config import MCPServerSettings, Settings
from tools.base import ToolSpec
from tools.toolset import Toolset

if TYPE_CHECKING:  # the kubernetes and mcp packages load only when a toolset that needs them is on (~seconds)
    from kubernetes.client import ApiClient

    from tools.analysis.events import EventReader
    from tools.changes import ChangeFinder
    from tools.database.query import DatabaseTools  # psycopg, when a database target is configured
    from tools.deploys.query import DeploySource
    from tools.kubernetes.query import KubernetesTools
    from tools.logs.loki import LokiLogs  # requests, when logs.backend = "loki"
    from tools.logs.model import LogFields, LogSource
    from tools.mcp.client import MCPTools
    from tools.metrics.query import MetricsTools
    from tools.runbooks.search import Runbooks
    from tools.timerange import Clock

log = logging.getLogger(__name__)
_T = TypeVar("_T")
_MOUNTED: dict[str, MCPTools] = {}
_MOUNTED_LOCK = threading.Lock()
SANDBOX_RUNBOOKS = Path(__file__).resolve().parents[1] / "sandbox" / "runbooks"


def build_kube_api(settings: Settings) -> ApiClient:
    """An ApiClient from the pod's ServiceAccount (in_cluster) or a kubeconfig (and context)."""
    from kubernetes import client as kube_client
    from kubernetes import config as kube_config

    k = settings.kubernetes
    if k.in_cluster:
        configuration = kube_client.Configuration()
        kube_config.load_incluster_config(client_configuration=configuration)
        return kube_client.ApiClient(configuration)
    return kube_config.new_client_from_config(config_file=k.kubeconfig or None, context=k.context or None)


def build_kubernetes_tools(settings: Settings) -> KubernetesTools:
    from tools.kubernetes.query import KubernetesTools

    k = settings.kubernetes
    return KubernetesTools(
        build_kube_api(settings),
        k.namespaces,
        service_label=k.service_label,
        timeout_s=k.timeout_s,
        max_events=k.max_events,
        max_pods=k.max_pods,
    )


def build_database_tools(settings: Settings) -> DatabaseTools:
    """The read-only Postgres views over every configured target: SQL where it has a DSN, postgres_exporter's series in
    the metrics Prometheus where `exporter` is on."""
    from bot.wiring.core import OnFirstUse, build_prometheus
    from tools.database.exporter import ExporterViews
    from tools.database.query import DatabaseTools, Target
    from tools.database.sql import PostgresReader

    d = settings.database
    label = d.exporter_label or settings.prometheus.service_label
    prometheus = OnFirstUse(lambda: build_prometheus(settings))  # requests loads with the first exporter query
    targets = []
    for name, t in d.targets.items():
        dsn = t.dsn.get_secret_value()
        sql = PostgresReader(
            dsn,
            connect_timeout_s=d.connect_timeout_s,
            statement_timeout_ms=d.statement_timeout_ms,
            lock_timeout_ms=d.lock_timeout_ms,
        )
        exporter = ExporterViews(prometheus, label, t.exporter_value or name, datname_label=d.datname_label)
        targets.append(
            Target(name, sql if dsn else None, exporter if t.exporter else None, tuple(t.services), tuple(t.replicas))
        )
    return DatabaseTools(targets, max_rows=d.max_rows, max_chars=d.max_statement_chars)


def build_loki_logs(settings: Settings, fields: LogFields | None = None) -> LokiLogs:
    """The Loki log source (logs.backend = "loki"); `fields` says where its JSON lines keep message, stack etc."""
    from tools.logs.loki import LokiLogs

    c = settings.loki
    return LokiLogs(
        c.url,
        tenant=c.tenant,
        bearer_token=c.bearer_token.get_secret_value(),
        timeout_s=c.timeout_s,
        service_label=c.service_label,
        level_label=c.level_label,
        fields=fields,
    )


def build_runbooks(settings: Settings) -> Runbooks:
    from tools.runbooks.search import Runbooks

    r = settings.runbooks
    return Runbooks(
        r.path.expanduser(),
        git_ref=r.git_ref,
        max_results=r.max_results,
        max_section_chars=r.max_section_chars,
        min_score=r.min_score,
    )


def build_mcp_tools(server: MCPServerSettings) -> MCPTools:
    """One external MCP server's allowed tools; the session starts on first use and ends with the process.

    One per distinct server setting in a process: every toolbox built from the same settings (one per eval case,
    say) shares its session instead of starting another server process.
    """
    key = server.model_dump_json()
    with _MOUNTED_LOCK:
        if key not in _MOUNTED:
            _MOUNTED[key] = _new_mcp_tools(server)
        return _MOUNTED[key]


def _new_mcp_tools(server: MCPServerSettings) -> MCPTools:
    from mcp import StdioServerParameters

    from tools.mcp.client import MCPConnection, MCPTools

    target: StdioServerParameters | str
    if server.transport == "http":
        target = server.url
    else:
        command = sys.executable if server.command in ("python", "python3") else server.command
        target = StdioServerParameters(command=command, args=server.args, env=server.env or None)
    connection = MCPConnection(target, connect_timeout_s=server.timeout_s)
    atexit.register(connection.close)
    return MCPTools(
        server.name,
        connection,
        server.allowed_tools,
        timeout_s=server.timeout_s,
        max_output_chars=server.max_output_chars,
    )


def optional_toolsets(settings: Settings) -> list[Toolset]:
    """Kubernetes, runbooks and one toolset per MCP server; built lazily, so a disabled one costs nothing."""
    k, r = settings.kubernetes, settings.runbooks
    kube = _Lazy(lambda: build_kubernetes_tools(settings))
    books = _Lazy(lambda: build_runbooks(settings))
    sets = [
        Toolset(
            "kubernetes",
            k.enabled,
            lambda: kube().specs(),
            lambda: kube().check(),
            "not enabled (OPSBOT_KUBERNETES__ENABLED)",
        ),
        Toolset(
            "runbooks",
            r.enabled,
            lambda: books().specs(),
            lambda: books().check(),
            "not enabled (OPSBOT_RUNBOOKS__ENABLED)",
        ),
    ]
    return [*sets, _database_toolset(settings), *(_mcp_toolset(server) for server in settings.mcp.servers)]


def _database_toolset(settings: Settings) -> Toolset:
    tools = _Lazy(lambda: build_database_tools(settings))

    def check() -> str:
        from tools.database.check import check_database

        return check_database(tools())

    on = bool(settings.database.targets)
    return Toolset("database", on, lambda: tools().specs(), check, "not configured (OPSBOT_DATABASE__TARGETS)")


def _mcp_toolset(server: MCPServerSettings) -> Toolset:
    mounted = _Lazy(lambda: build_mcp_tools(server))
    return Toolset(f"mcp:{server.name}", True, lambda: mounted().specs(), lambda: mounted().check())


def optional_tool_specs(settings: Settings) -> list[ToolSpec]:
    """The tools of every enabled optional toolset, in the order optional_toolsets lists them.

    A toolset that cannot be built (an MCP server that does not start, a broken kubeconfig) is left out with a
    warning rather than keeping opsbot from starting; `opsbot toolsets` shows why.
    """
    specs: list[ToolSpec] = []
    for toolset in optional_toolsets(settings):
        if not toolset.enabled:
            continue
        try:
            specs += toolset.specs()
        except Exception as exc:  # one broken optional backend must not take the others down
            log.warning("toolset %s is on but unusable, its tools are left out: %s", toolset.name, exc)
    return specs


class _Lazy(Generic[_T]):
    """Build once, on first call (a toolset's specs and check share one client)."""

    def __init__(self, build: Callable[[], _T]) -> None:
        self._build = build
        self._value: _T | None = None

    def __call__(self) -> _T:
        if self._value is None:
            self._value = self._build()
        return self._value


def build_event_readers(settings: Settings, log_source: LogSource) -> list[EventReader]:
    """Where find_changes reads operational events: the logs (by the configured patterns) and, when the Kubernetes
    toolset is on, the cluster's events in its allowed namespaces."""
    from tools.analysis.events import patterns_from_config
    from tools.events.logs import LogEvents

    c, k = settings.logs, settings.kubernetes
    readers: list[EventReader] = [LogEvents(log_source, patterns_from_config(c.event_patterns, c.event_words))]
    if k.enabled:
        from tools.events.kubernetes import KubeEvents

        readers.append(KubeEvents(lambda: build_kube_api(settings), k.namespaces, timeout_s=k.timeout_s))
    return readers


def build_change_finder(
    settings: Settings, metrics: MetricsTools, deploys: DeploySource, logs: LogSource, clock: Clock
) -> ChangeFinder:
    """find_changes over the metric tools, the deploy source, the logs and the event readers."""
    from bot.wiring.roles import metric_roles, saturation_metrics
    from tools.changes import ChangeFinder

    roles, saturation, events = (
        metric_roles(settings),
        saturation_metrics(settings),
        build_event_readers(settings, logs),
    )
    return ChangeFinder(metrics, deploys, logs, settings.topology, roles, clock, saturation=saturation, events=events)
