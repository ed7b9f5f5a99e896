"""The metric conventions opsbot recognises, and the catalogue templates each one yields.

A convention is a request-duration family (a histogram, a summary, or Micrometer's count/sum/max), the counter that
counts the requests, the labels that name a service and hold the status, and its unit (seconds or milliseconds,
from the name). The resource signals (CPU, memory, GC pauses, pools, queues, lag) are recognised by their own
metric names, whichever convention the service's requests follow. tools/metrics/discovery.py decides which of them
a stack holds, per service; this module only knows what each looks like.
"""

from __future__ import annotations

from dataclasses import dataclass

SEL = '$label="$service"'


@dataclass(frozen=True)
class Convention:
    """How one instrumentation names a service's requests."""

    name: str
    title: str
    duration: str  # the request-duration family, without _bucket/_count/_sum
    requests: str  # the counter of requests
    service_labels: tuple[str, ...]  # the labels that may name the service, preferred first
    status_labels: tuple[str, ...]  # the labels that may hold the HTTP status, preferred first
    fixed: str = ""  # a matcher every selector carries (a mesh reports each request twice)

    @property
    def unit(self) -> str:
        return "ms" if self.duration.endswith(("_milliseconds", "_ms")) else "s"


# Application conventions first: a service that several conventions measure (its own client and the ingress in
# front of it) is read through its own instrumentation.
CONVENTIONS = (
    Convention(
        "micrometer",
        "Micrometer (Spring Boot)",
        "http_server_requests_seconds",
        "http_server_requests_seconds_count",
        ("application", "service", "app", "app_kubernetes_io_name", "job"),
        ("status", "outcome"),
    ),
    Convention(
        "opentelemetry",
        "OpenTelemetry semantic conventions",
        "http_server_request_duration_seconds",
        "http_server_request_duration_seconds_count",
        ("service_name", "service", "app_kubernetes_io_name", "job"),
        ("http_response_status_code", "http_status_code"),
    ),
    Convention(
        "opentelemetry-legacy",
        "OpenTelemetry (semantic conventions before 1.20, milliseconds)",
        "http_server_duration_milliseconds",
        "http_server_duration_milliseconds_count",
        ("service_name", "service", "app_kubernetes_io_name", "job"),
        ("http_status_code", "http_response_status_code"),
    ),
    Convention(
        "prometheus-client",
        "Prometheus client defaults (Go promhttp, Python)",
        "http_request_duration_seconds",
        "http_requests_total",
        ("app_kubernetes_io_name", "service", "app", "application", "job"),
        ("code", "status", "status_code"),
    ),
    Convention(
        "ingress-nginx",
        "ingress-nginx",
        "nginx_ingress_controller_request_duration_seconds",
        "nginx_ingress_controller_requests",
        ("exported_service", "service", "ingress"),
        ("status",),
    ),
    Convention(
        "istio",
        "Istio (Envoy sidecars, milliseconds)",
        "istio_request_duration_milliseconds",
        "istio_requests_total",
        ("destination_service_name", "destination_workload", "destination_app"),
        ("response_code",),
        fixed='reporter="destination"',
    ),
    Convention(
        "envoy",
        "Envoy (milliseconds)",
        "envoy_cluster_upstream_rq_time",
        "envoy_cluster_upstream_rq_total",
        ("envoy_cluster_name",),
        ("envoy_response_code",),
    ),
)


@dataclass(frozen=True)
class Signal:
    """A resource signal: present when its metric is (and, if given, carries `needs_label`)."""

    name: str  # the catalogue name it is written under
    metric: str
    promql: str
    unit: str
    role: str
    description: str
    needs_label: str = ""


def _rate(metric: str, extra: str = "") -> str:
    return f"sum(rate({metric}{{{SEL}{extra}}}[5m]))"


def _gauge(metric: str, extra: str = "", how: str = "sum") -> str:
    return f"{how}({metric}{{{SEL}{extra}}})"


_USED = ',state="used"'  # OpenTelemetry's pool usage by state (used / idle)
# The first present signal of a name wins.
SIGNALS = (
    Signal("cpu_usage", "process_cpu_seconds_total", _rate("process_cpu_seconds_total"), "cores", "cpu", "CPU cores"),
    Signal("cpu_usage", "process_cpu_usage", _gauge("process_cpu_usage", how="max"), "ratio", "cpu", "CPU share"),
    Signal(
        "cpu_usage", "process_cpu_time_seconds_total", _rate("process_cpu_time_seconds_total"), "cores", "cpu", "CPU"
    ),
    Signal(
        "cpu_usage",
        "jvm_cpu_recent_utilization_ratio",
        _gauge("jvm_cpu_recent_utilization_ratio", how="max"),
        "ratio",
        "cpu",
        "JVM CPU share",
    ),
    Signal(
        "memory",
        "process_resident_memory_bytes",
        _gauge("process_resident_memory_bytes"),
        "bytes",
        "memory",
        "resident memory",
    ),
    Signal(
        "memory",
        "jvm_memory_used_bytes",
        _gauge("jvm_memory_used_bytes", ',area="heap"'),
        "bytes",
        "memory",
        "JVM heap in use",
        "area",
    ),
    Signal(
        "memory",
        "jvm_memory_used_bytes",
        _gauge("jvm_memory_used_bytes", ',jvm_memory_type="heap"'),
        "bytes",
        "memory",
        "JVM heap in use",
        "jvm_memory_type",
    ),
    Signal(
        "gc_pause",
        "jvm_gc_pause_seconds_sum",
        _rate("jvm_gc_pause_seconds_sum"),
        "ratio",
        "saturation",
        "share of time in GC pauses",
    ),
    Signal(
        "gc_pause",
        "jvm_gc_duration_seconds_sum",
        _rate("jvm_gc_duration_seconds_sum"),
        "ratio",
        "saturation",
        "share of time in GC",
    ),
    Signal(
        "gc_pause",
        "go_gc_duration_seconds_sum",
        _rate("go_gc_duration_seconds_sum"),
        "ratio",
        "saturation",
        "share of time in GC",
    ),
    Signal(
        "db_pool_pending",
        "hikaricp_connections_pending",
        _gauge("hikaricp_connections_pending"),
        "count",
        "saturation",
        "requests waiting for a pool connection",
    ),
    Signal(
        "db_pool_pending",
        "db_client_connection_pending_requests",
        _gauge("db_client_connection_pending_requests"),
        "count",
        "saturation",
        "requests waiting for a pool connection",
    ),
    Signal(
        "db_pool_pending",
        "db_client_connections_pending_requests",
        _gauge("db_client_connections_pending_requests"),
        "count",
        "saturation",
        "requests waiting for a pool connection",
    ),
    Signal(
        "db_pool_usage",
        "hikaricp_connections_active",
        f"{_gauge('hikaricp_connections_active')} / {_gauge('hikaricp_connections_max')}",
        "ratio",
        "saturation",
        "share of the pool's connections in use",
    ),
    Signal(
        "db_pool_usage",
        "db_client_connections_usage",
        f"{_gauge('db_client_connections_usage', _USED)} / {_gauge('db_client_connections_max')}",
        "ratio",
        "saturation",
        "share of the pool's connections in use",
        "state",
    ),
    Signal(
        "thread_pool_queue",
        "executor_queued_tasks",
        _gauge("executor_queued_tasks"),
        "count",
        "saturation",
        "tasks queued in thread pools",
    ),
    Signal(
        "consumer_lag",
        "kafka_consumer_fetch_manager_records_lag_max",
        _gauge("kafka_consumer_fetch_manager_records_lag_max", how="max"),
        "count",
        "saturation",
        "Kafka consumer lag (records)",
    ),
    Signal(  # kafka-exporter's, where the series carry the service label (relabelled from the consumer group)
        "consumer_lag",
        "kafka_consumergroup_lag",
        _gauge("kafka_consumergroup_lag"),
        "count",
        "saturation",
        "Kafka consumer-group lag (messages)",
    ),
)


def selector(convention: Convention, extra: str = "") -> str:
    """The `{...}` of a convention's selector for one service."""
    matchers = [SEL, *([convention.fixed] if convention.fixed else []), *([extra] if extra else [])]
    return "{" + ",".join(matchers) + "}"


def latency_template(convention: Convention, shape: str) -> tuple[str, str]:
    """(PromQL, description) of the latency entry for a request-duration family of this shape: "histogram",
    "summary" (client-side quantiles), "max" (Micrometer without a histogram) or "mean" (sum/count only)."""
    name, sel = convention.duration, selector(convention)
    if shape == "histogram":
        return f"histogram_quantile(0.99, sum by (le) (rate({name}_bucket{sel}[5m])))", "99th percentile latency"
    if shape == "summary":
        quantile = selector(convention, 'quantile="0.99"')
        return f"max({name}{quantile})", "p99 (a client-side quantile)"
    if shape == "max":
        return f"max({name}_max{sel})", "slowest request lately (no histogram published: not a percentile)"
    return f"sum(rate({name}_sum{sel}[5m])) / sum(rate({name}_count{sel}[5m]))", "mean latency (no histogram)"


def traffic_template(convention: Convention) -> str:
    return f"sum(rate({convention.requests}{selector(convention)}[5m]))"


def errors_template(convention: Convention, status_label: str) -> str:
    """Server errors over all requests; `or vector(0)` keeps a service with no 5xx at 0 rather than no data."""
    failed = 'outcome="SERVER_ERROR"' if status_label == "outcome" else f'{status_label}=~"5.."'
    errors = f"sum(rate({convention.requests}{selector(convention, failed)}[5m]))"
    return f"({errors} or vector(0)) / {traffic_template(convention)}"
