"""The sections about the backends opsbot reads: Prometheus and its metric catalogue, Elasticsearch, logs (deploys:
bot/config/deploys.py), and the optional toolsets (Kubernetes, Loki, runbooks, MCP servers)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr

from bot.config.checks import HttpUrl, OptionalHttpUrl
from bot.config.section import DEFAULT_STATE_DIR, Section


class MetricTemplate(Section):
    """One PromQL template of the metric catalogue.

    `$label` and `$service` are substituted (string.Template) with the service label name and a service
    name that has already been checked against the label values Prometheus holds.
    """

    promql: str
    unit: Literal["s", "ms", "ratio", "rps", "cores", "bytes", "count"]
    description: str = ""
    # What the model-free playbook reads this metric as (the first entry with a role wins); "" = none. Every
    # "saturation" entry is read (GC pauses, a pool's pending connections, a queue, consumer lag).
    # client_errors / rate_limited: the share answered 4xx / 429, read beside the 5xx errors; client_calls /
    # client_retries: a service's outbound calls / retries, with the called service in the peer label.
    role: Literal[
        "latency",
        "errors",
        "traffic",
        "cpu",
        "memory",
        "restarts",
        "saturation",
        "client_errors",
        "rate_limited",
        "client_calls",
        "client_retries",
        "",
    ] = ""
    # The requests per second behind each point of a quantile or a share ("" = none): a low-traffic series is then
    # judged on counts (points on too few requests are pooled), so 0.1-2 req/s gives no false onsets.
    counts: str = ""


def default_metric_catalogue() -> dict[str, MetricTemplate]:
    sel = '$label="$service"'
    requests = f"sum(rate(http_requests_total{{{sel}}}[5m]))"
    return {
        "p99_latency": MetricTemplate(
            promql=f"histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{{{sel}}}[5m])))",
            unit="s",
            description="99th percentile request latency",
            role="latency",
            counts=f"sum(rate(http_request_duration_seconds_count{{{sel}}}[5m]))",
        ),
        "qps": MetricTemplate(
            promql=f"sum(rate(http_requests_total{{{sel}}}[5m]))",
            unit="rps",
            description="requests per second",
            role="traffic",
        ),
        "error_rate": MetricTemplate(
            promql=(
                f'sum(rate(http_requests_total{{{sel},status=~"5.."}}[5m]))'
                f" / sum(rate(http_requests_total{{{sel}}}[5m]))"
            ),
            unit="ratio",
            description="share of requests answered 5xx",
            role="errors",
            counts=requests,
        ),
        "client_error_rate": MetricTemplate(
            promql=(
                f'sum(rate(http_requests_total{{{sel},status=~"4.."}}[5m]))'
                f" / sum(rate(http_requests_total{{{sel}}}[5m]))"
            ),
            unit="ratio",
            description="share of requests answered 4xx (401, 404, 409, 429 ...)",
            role="client_errors",
            counts=requests,
        ),
        "rate_limited": MetricTemplate(
            promql=(
                f'sum(rate(http_requests_total{{{sel},status="429"}}[5m]))'
                f" / sum(rate(http_requests_total{{{sel}}}[5m]))"
            ),
            unit="ratio",
            description="share of requests answered 429 (rate limited)",
            role="rate_limited",
            counts=requests,
        ),
        "cpu_usage": MetricTemplate(
            promql=f"sum(rate(process_cpu_seconds_total{{{sel}}}[5m]))",
            unit="cores",
            description="CPU cores in use",
            role="cpu",
        ),
    }


class ServiceMetricsSettings(Section):
    """One service's own part of the metric catalogue, for a stack that mixes conventions: the label that names
    it, templates that replace the catalogue's under the same names, and catalogue names it does not measure."""

    service_label: str = ""  # "" = prometheus.service_label
    metrics: dict[str, MetricTemplate] = Field(default_factory=dict)
    not_measured: list[str] = Field(default_factory=list)


class PrometheusSettings(Section):
    url: HttpUrl = "http://127.0.0.1:19090"
    timeout_s: float = 10.0
    verify_tls: bool = True
    bearer_token: SecretStr = SecretStr("")
    service_label: str = "service"
    max_points: int = 288
    # A series that stopped: Prometheus' own scrape-health metric, read per service ("" = do not read it)...
    up_metric: str = "up"
    # ...and the share of the other services whose series of the same metric ended at the same step that makes
    # it a gap in collection rather than this service stopping.
    collection_gap_share: float = Field(default=0.8, gt=0.0, le=1.0)
    metrics: dict[str, MetricTemplate] = Field(default_factory=default_metric_catalogue)
    services: dict[str, ServiceMetricsSettings] = Field(default_factory=dict)  # per service: its own label, queries
    # The labels query_metrics(by=...) breaks a signal down by: the pod, the version it runs, and the called service
    # of an outbound-call metric.
    pod_label: str = "pod"
    version_label: str = "version"
    peer_label: str = "peer"


class ElasticsearchSettings(Section):
    """One Elasticsearch connection, shared by the logs, deploys and trace-store backends that use it."""

    url: OptionalHttpUrl = ""
    api_key: SecretStr = SecretStr("")
    username: str = ""
    password: SecretStr = SecretStr("")
    verify_certs: bool = True
    timeout_s: float = 10.0
    plain_json: bool = False  # send application/json instead of the compat media type (OpenSearch, osmem)


class LogsSettings(Section):
    """Where logs live and where a document keeps each field: the same mapping for Elasticsearch, the SQLite store's
    ingest and Loki's JSON lines. A dotted name reads a nested object or a dotted key; `name.keyword` is read as
    `name` and filtered on the sub-field. `{service}` in the index pattern names each service's indices."""

    backend: Literal["sqlite", "elasticsearch", "loki"] = "sqlite"
    sqlite_path: Path = DEFAULT_STATE_DIR / "logs.db"
    index_pattern: str = "logs-*"
    timestamp_field: str = "@timestamp"
    service_field: str = "service"
    level_field: str = "level"
    message_field: str = "message"
    stack_field: str = "stack_trace"
    trace_field: str = "trace_id"
    logger_field: str = "logger"
    host_field: str = "host"
    error_type_field: str = "error.type"  # the exception's class (ECS error.type; OpenTelemetry exception.type)
    namespace_field: str = "namespace"  # the Kubernetes namespace; in Loki a stream label of this name
    line_message_key: str = ""  # the message key inside a JSON or logfmt line ("" = message, msg, event ...)
    onset_tolerance_s: float = 300.0  # a signature that began this long before an onset is still new since it
    # Operational events in log lines (find_changes ranks them as suspects): kind -> case-insensitive regex over the
    # message, found by a search for any of event_words. Empty = the built-in patterns (DDL, psql sessions, job
    # starts, failovers, campaign launches) and their words.
    event_patterns: dict[str, str] = Field(default_factory=dict)
    event_words: list[str] = Field(default_factory=list)
    default_limit: int = 100
    max_limit: int = 1_000


class KubernetesSettings(Section):
    """Read-only Kubernetes: pods, events and rollout history, only in the allowed namespaces."""

    enabled: bool = False
    kubeconfig: str = ""  # empty = the client's default (~/.kube/config or $KUBECONFIG)
    context: str = ""  # empty = the kubeconfig's current context
    in_cluster: bool = False  # use the pod's ServiceAccount instead of a kubeconfig
    namespaces: list[str] = Field(default_factory=lambda: ["default"])
    service_label: str = "app"  # the pod label that names a service
    timeout_s: float = 10.0
    max_events: int = 30
    max_pods: int = 40


class LokiSettings(Section):
    """Grafana Loki, read through its HTTP API when logs.backend is "loki"."""

    url: OptionalHttpUrl = ""
    tenant: str = ""  # X-Scope-OrgID for multi-tenant Loki
    bearer_token: SecretStr = SecretStr("")
    timeout_s: float = 10.0
    service_label: str = "service"  # the stream label that names a service
    level_label: str = "level"  # the stream label that holds the level


class RunbooksSettings(Section):
    """Markdown runbooks in a folder or a git repository, searched with SQLite FTS5 (search_runbooks)."""

    enabled: bool = False
    path: Path = DEFAULT_STATE_DIR / "runbooks"
    git_ref: str = "HEAD"  # read at this ref when path is a git repository
    max_results: int = 3
    max_section_chars: int = 1_200
    # A section holding less than this share of a search's term weight (rare words weigh more) is "no good match".
    min_score: float = 0.1


class MCPServerSettings(Section):
    """One external MCP server whose allowed tools are mounted as opsbot tools named <name>_<tool>."""

    name: str
    transport: Literal["stdio", "http"] = "stdio"
    command: str = ""  # stdio: the program to start
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    url: OptionalHttpUrl = ""  # http: the streamable HTTP endpoint, e.g. http://host:8000/mcp
    allowed_tools: list[str] = Field(default_factory=list)  # tool names to mount; ["*"] = all; empty = none
    timeout_s: float = 20.0
    max_output_chars: int = 4_000


class MCPSettings(Section):
    """MCP both ways: servers whose tools opsbot mounts, and which own tools `opsbot mcp` serves."""

    servers: list[MCPServerSettings] = Field(default_factory=list)
    serve_tools: list[str] = Field(default_factory=list)  # empty = every opsbot tool
