"""Core builders: the backends' clients, the tools and their sources, the store, telemetry, Redis, access, the
playbook and the responder. Settings, budgets, the LLM and the classifier are built in bot/wiring/basics.py."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from pydantic import SecretStr

from bot.config import Settings
from bot.playbook.zones import zone_from_name
from bot.routing.respond import Playbook, Router
from bot.wiring.basics import (
    build_budget,
    build_classifier,
    build_context_limits,
    build_llm,
    lookup_on_first_use,
    playbook_on_first_use,
    redact_on_first_use,
)
from bot.wiring.roles import NamedRouter, metric_roles, saturation_metrics, unmeasured_metrics
from bot.wiring.toolsets import build_change_finder, build_kube_api, build_loki_logs, optional_tool_specs
from tools.base import Toolbox, ToolSpec
from tools.calculate import calculate_tool
from tools.deploys.query import DeploySource, DeployTools
from tools.deploys.registry import build_code_source
from tools.logs.model import LogFields
from tools.logs.query import ElasticsearchLogs, LogSource, LogTools, SqliteLogs
from tools.metrics.query import MetricQuery, MetricsTools, ServiceCatalogue
from tools.timerange import Clock, utc_now

if TYPE_CHECKING:  # the Elasticsearch client loads in build_es, when a backend uses it (~40 MB, ~0.2 s of imports)
    from datetime import datetime, tzinfo

    from elasticsearch import Elasticsearch

    from bot.engine.llm import LLM
    from bot.engine.types import Question, StepObserver, Trace
    from bot.http.telemetry import Telemetry  # prometheus_client, for the surfaces that export /metrics
    from bot.store.base import TraceStore
    from tools.metrics.prometheus import PrometheusAPI

log = logging.getLogger(__name__)


def build_prometheus(settings: Settings) -> PrometheusAPI:
    """A Prometheus client that fails fast: one retry on connect errors and 502-504, then the backend's text."""
    from tools.metrics.prometheus import PrometheusAPI  # and prometheus-api-client, requests: on first use (OnFirstUse)

    p = settings.prometheus
    return PrometheusAPI(
        p.url, timeout_s=p.timeout_s, verify_tls=p.verify_tls, bearer_token=p.bearer_token.get_secret_value()
    )


def build_es(settings: Settings) -> Elasticsearch:
    """The shared Elasticsearch client (logs, deploys and the trace store use the same connection)."""
    from bot.wiring.elastic import es_client

    e = settings.elasticsearch
    return es_client(
        e.url,
        api_key=e.api_key.get_secret_value(),
        username=e.username,
        password=e.password.get_secret_value(),
        verify_certs=e.verify_certs,
        timeout_s=e.timeout_s,
        plain_json=e.plain_json,
    )


def build_metrics_tools(settings: Settings, clock: Clock = utc_now) -> MetricsTools:
    """query_metrics over the configured catalogue, and list_services (with the topology's downstream services)."""
    p = settings.prometheus
    catalogue = {name: MetricQuery(m.promql, m.unit, m.description, m.counts) for name, m in p.metrics.items()}
    client = cast("PrometheusAPI", OnFirstUse(functools.partial(build_prometheus, settings)))
    services = {
        name: ServiceCatalogue(
            own.service_label,
            {metric: MetricQuery(m.promql, m.unit, m.description, m.counts) for metric, m in own.metrics.items()},
            frozenset(own.not_measured),
        )
        for name, own in p.services.items()
    }
    return MetricsTools(
        client,
        catalogue,
        service_label=p.service_label,
        max_points=p.max_points,
        topology=settings.topology,
        clock=clock,
        up_metric=p.up_metric,
        gap_share=p.collection_gap_share,
        services=services,
        breakdown_labels={"pod": p.pod_label, "version": p.version_label, "peer": p.peer_label},
        roles={name: m.role for name, m in p.metrics.items() if m.role},
    )


class OnFirstUse:
    """A client built on its first attribute lookup, so its package loads with the first query, not at start-up."""

    def __init__(self, build: Callable[[], Any]) -> None:
        self._build: Callable[[], Any] | None = build
        self._built: Any = None
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        with self._lock:
            if self._build is not None:
                self._built, self._build = self._build(), None
        return getattr(self._built, name)


def build_log_fields(settings: Settings) -> LogFields:
    """Where a log document keeps each field: one mapping for every log backend (and the SQLite ingest)."""
    c = settings.logs
    names = (c.timestamp_field, c.service_field, c.level_field, c.message_field, c.stack_field, c.trace_field)
    return LogFields(
        *names,
        logger=c.logger_field,
        host=c.host_field,
        error_type=c.error_type_field,
        namespace=c.namespace_field,
        line_message=c.line_message_key,
    )


def build_log_store(settings: Settings) -> SqliteLogs:
    """The SQLite store `opsbot logs ingest` loads through the field mapping (whatever query_logs reads)."""
    return SqliteLogs(settings.logs.sqlite_path.expanduser(), build_log_fields(settings))


def build_log_source(settings: Settings) -> LogSource:
    """SQLite FTS5 (default), Elasticsearch or Loki, as settings.logs.backend says."""
    c = settings.logs
    if c.backend == "sqlite":
        return build_log_store(settings)
    if c.backend == "loki":
        return build_loki_logs(settings, build_log_fields(settings))
    return ElasticsearchLogs(build_es(settings), c.index_pattern, build_log_fields(settings))


def build_deploy_source(settings: Settings) -> DeploySource:
    """The source settings.deploys.source names (tools/deploys/registry.py), read through its environment and status
    filters; the Elasticsearch and Kubernetes clients are built only when that source asks for them."""
    from tools.deploys.registry import Connections
    from tools.deploys.registry import build_deploy_source as from_registry

    k = settings.kubernetes
    connections = Connections(
        elasticsearch=lambda: build_es(settings),
        kubernetes=lambda: build_kube_api(settings),
        kubernetes_namespaces=tuple(k.namespaces),
        kubernetes_timeout_s=k.timeout_s,
    )
    return from_registry(_plain(settings.deploys.model_dump()), connections)


def _plain(value: Any) -> Any:
    """Settings values with their secrets unwrapped (tools take plain values, never pydantic's SecretStr)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value.get_secret_value() if isinstance(value, SecretStr) else value


def build_tool_specs(settings: Settings, clock: Clock = utc_now) -> list[ToolSpec]:
    """Every tool the model may call, in the order the catalogue lists them. `clock` is their "now" (a replay or a
    sandbox run at a fixed time passes its own)."""
    c = settings.logs
    log_source, deploy_source, metrics = (
        build_log_source(settings),
        build_deploy_source(settings),
        build_metrics_tools(settings, clock),
    )
    logs = LogTools(
        log_source,
        default_limit=c.default_limit,
        max_limit=c.max_limit,
        redact=redact_on_first_use,
        clock=clock,
        message_key=c.line_message_key,
        onset_tolerance_s=c.onset_tolerance_s,
    )
    code = build_code_source(_plain(settings.deploys.model_dump()))
    deploys = DeployTools(deploy_source, max_diff_chars=settings.deploys.max_diff_chars, clock=clock, code=code)
    changes = build_change_finder(settings, metrics, deploy_source, log_source, clock)
    return [
        *metrics.specs(),
        *logs.specs(),
        *deploys.specs(),
        *changes.specs(),
        calculate_tool(),
        *optional_tool_specs(settings),
    ]


def build_toolbox(settings: Settings, clock: Clock = utc_now) -> Toolbox:
    """All tools, with secrets redacted from every observation. Duplicate names fail here, at startup."""
    return Toolbox(build_tool_specs(settings, clock), redact=redact_on_first_use)


def build_store(settings: Settings) -> TraceStore:
    """SQLite (default) or Elasticsearch, as settings.store.backend says. Both redact before storing."""
    c = settings.store
    if c.backend == "elasticsearch":
        from bot.store.elastic import ElasticsearchTraceStore

        return ElasticsearchTraceStore(build_es(settings), c.index)
    from bot.store.sqlite import SqliteTraceStore  # the store loads where traces are kept, not for the responder

    return SqliteTraceStore(c.sqlite_path.expanduser())


def build_telemetry(settings: Settings) -> Telemetry:
    """opsbot's own metrics registry; build one per process and share it with every surface."""
    from bot.http.telemetry import Telemetry

    return Telemetry()


def build_zone(settings: Settings) -> tzinfo:
    """The team's time zone (OPSBOT_TIMEZONE); a name that is no zone is a ValueError naming the setting."""
    try:
        return zone_from_name(settings.timezone)
    except ValueError as exc:  # the value may come from the config file: the setting's name fits both
        raise ValueError(f"timezone (OPSBOT_TIMEZONE): {exc}") from exc


def build_playbook(settings: Settings, clock: Clock | None = None) -> Playbook:
    """The model-free diagnosis over the configured topology, reading the catalogue's metrics by their role; with a
    `clock`, "now" (and so "yesterday 15:05" or "half an hour ago") is read from it. A question's time without a
    zone is read in the team's."""
    bound = functools.partial(
        playbook_on_first_use,
        topology=settings.topology,
        metric_roles=metric_roles(settings),
        saturation=saturation_metrics(settings),
        unmeasured=unmeasured_metrics(settings),
        zone=build_zone(settings),
    )
    if clock is None:
        return bound

    def at_clock(
        question: Question, tools: Toolbox, *, on_step: StepObserver | None = None, now: datetime | None = None
    ) -> Trace:
        return bound(question, tools, on_step=on_step, now=now or clock())

    return at_clock


def build_responder(
    settings: Settings, *, llm: LLM | None = None, tools: Toolbox | None = None, clock: Clock | None = None
) -> Router:
    """The Router every surface calls, with everything bound. It does not store traces itself. `clock` pins "now"
    for the tools and the playbook (an eval or a replay at a fixed time); every surface leaves it to the wall clock."""
    model = llm if llm is not None else build_llm(settings)
    return NamedRouter(
        llm=model,
        tools=tools if tools is not None else build_toolbox(settings, clock or utc_now),
        budget=build_budget(settings),
        classify=build_classifier(settings, model),
        playbook=build_playbook(settings, clock),
        # the model-free quick lookup reads the same metric roles as the playbook
        lookup=functools.partial(
            lookup_on_first_use, metric_roles=metric_roles(settings), services=_services(settings)
        ),
        protocol="text" if settings.llm.protocol == "text" else "native",
        limits=build_context_limits(settings) if model is not None else None,  # only the loop reads them
        tool_timeout_s=settings.agent.tool_timeout_s,
        zone=build_zone(settings),
        aliases=settings.aliases,
        topology=_services(settings),
        guess=settings.guess_service_names,
    )


def _services(settings: Settings) -> list[str]:
    """Every service the topology names, as a caller or as a dependency."""
    topology = settings.topology
    return list(dict.fromkeys([*topology, *(d for ds in topology.values() for d in ds)]))
