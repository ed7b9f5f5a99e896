"""The opt-in series a scenario's services can carry beyond the golden signals, named as real exporters name them.

`catalog` says which keys a service may set (saturation, 4xx shares, replicas and autoscaling, limits, clock
offset, database) and how each behaves; the other modules write each exporter's OpenMetrics families:
`kubestate` (kube-state-metrics), `node` (node_exporter), `runtime` (Micrometer's JVM and HikariCP names, the Go
client's, OpenTelemetry's connection pools), `brokers` (RabbitMQ, kafka_exporter), `postgres`
(postgres_exporter) and `clients` (an HTTP client's calls and retries per called service).
"""
