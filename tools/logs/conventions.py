"""The log conventions opsbot recognises, as candidate field names per logical field, best first.

ECS (Elastic Common Schema, what Filebeat, Elastic Agent and the ecs-logging libraries write), the OpenTelemetry log
data model (as the collector's Elasticsearch exporter and most OTLP-to-JSON pipelines flatten it), and plain JSON or
logstash-logback-encoder lines. A team's documents are matched against all three; the convention that explains most
fields wins, and a field it lacks may still come from another (stacks mix them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# logical field -> the Settings key in the logs section that names it
SETTINGS = {
    "timestamp": "timestamp_field",
    "service": "service_field",
    "level": "level_field",
    "message": "message_field",
    "error_type": "error_type_field",
    "stack_trace": "stack_field",
    "trace_id": "trace_field",
    "logger": "logger_field",
    "host": "host_field",
}
REQUIRED = ("timestamp", "service", "level", "message")


@dataclass(frozen=True)
class Convention:
    name: str
    fields: Mapping[str, tuple[str, ...]]  # logical field -> candidate names, best first


ECS = Convention(
    "ECS",
    {
        "timestamp": ("@timestamp",),
        "service": ("service.name",),
        "level": ("log.level",),
        "message": ("message",),
        "error_type": ("error.type",),
        "stack_trace": ("error.stack_trace",),
        "trace_id": ("trace.id",),
        "logger": ("log.logger",),
        "host": ("host.name", "host.hostname"),
    },
)
OPENTELEMETRY = Convention(
    "OpenTelemetry",
    {
        "timestamp": ("@timestamp", "timestamp", "observed_timestamp", "time_unix_nano"),
        "service": ("resource.service.name", "resource.attributes.service.name"),
        "level": ("severity_text",),
        "message": ("body", "body.text"),
        "error_type": ("attributes.exception.type", "exception.type"),
        "stack_trace": ("attributes.exception.stacktrace", "exception.stacktrace"),
        "trace_id": ("trace_id", "traceId"),
        "logger": ("scope.name", "instrumentation_scope.name"),
        "host": ("resource.host.name", "resource.attributes.host.name"),
    },
)
PLAIN = Convention(
    "plain JSON",
    {
        "timestamp": ("@timestamp", "timestamp", "time", "ts", "date"),
        "service": ("service", "app", "application", "service_name", "app_name", "fields.service"),
        "level": ("level", "severity", "loglevel", "log_level", "lvl", "levelname"),
        "message": ("message", "msg", "log"),
        "error_type": ("error_type", "exception_class", "exception.class", "error.kind", "exc_type"),
        "stack_trace": ("stack_trace", "stacktrace", "exception", "stack", "exc_info"),
        "trace_id": ("trace_id", "traceId", "dd.trace_id"),
        "logger": ("logger", "logger_name", "name"),
        "host": ("host", "hostname", "HOSTNAME"),
    },
)
CONVENTIONS = (ECS, OPENTELEMETRY, PLAIN)  # a tie goes to the first

# Loki keeps service and level as stream labels; these are the names promtail, Alloy, the OTLP endpoint and
# Loki 3's level detection give them.
LOKI_SERVICE_LABELS = ("service", "service_name", "app", "application", "app_kubernetes_io_name", "job", "container")
LOKI_LEVEL_LABELS = ("level", "severity", "detected_level", "severity_text", "lvl", "loglevel")


def candidates(logical: str) -> list[str]:
    """Every convention's candidates for a logical field, in convention order, once each."""
    return list(dict.fromkeys(name for c in CONVENTIONS for name in c.fields.get(logical, ())))
