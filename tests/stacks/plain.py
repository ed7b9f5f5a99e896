"""A small stack in the plain Prometheus client's names whose latency histogram stops at 1 s, with series that look
like a service's but follow no convention opsbot knows, and no scrape-health `up` (its metrics were backfilled).

- checkout-api: p99 200 ms, then 3 s from an hour before the clock (its p99 reads the 1 s bucket from then on);
- search: p99 3 s throughout (a flat line at the bucket: "no change" would be wrong);
- cart: p99 150 ms throughout, inside the buckets;
- seen, not read: `shopfront_http_requests_total{code}` under another prefix (checkout-api's alone), Kafka
  exporter's consumer-group lag, a connection-pool gauge and a pool-wait counter under names no signal knows, an
  in-flight requests gauge, a jobs counter whose `outcome` is success/error/timeout (on two services), and the
  ingress-nginx controller in front of checkout-api and cart (whose own client already measures them);
- read: cart's OpenTelemetry connection-pool usage (a saturation signal).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

from bot.sandbox.backends import Proc, backfill, free_port, start_prometheus
from bot.sandbox.openmetrics import latency_cdf, median_s_from_p99_ms
from tests.stacks.metrics import Families, cumulative

BUCKETS_S = (0.05, 0.1, 0.25, 0.5, 1.0)  # the top finite bucket is 1 s
LEAD = timedelta(hours=5)
AFTER = timedelta(hours=2)
RISE_BEFORE_NOW = timedelta(hours=1)
QPS = 20.0

P99_MS: dict[str, Callable[[bool], float]] = {
    "checkout-api": lambda risen: 3000.0 if risen else 200.0,
    "search": lambda risen: 3000.0,
    "cart": lambda risen: 150.0,
}


def build_plain_stack(workdir: Path, now: datetime) -> Path:
    """The metrics backfilled into workdir/prometheus/data; returns that folder."""
    start = (now - LEAD).replace(second=0, microsecond=0)
    minutes = int((now + AFTER - start).total_seconds() // 60)
    risen_at = int((now - RISE_BEFORE_NOW - start).total_seconds() // 60)
    families = Families(start)
    for service, p99 in P99_MS.items():
        medians = [median_s_from_p99_ms(p99(i >= risen_at)) for i in range(minutes)]
        _service(families, service, medians)
    _unrecognised(families, minutes)
    families.write(workdir / "metrics.om")
    backfill(workdir / "metrics.om", workdir / "prometheus" / "data")
    return workdir / "prometheus" / "data"


def _service(families: Families, service: str, medians: list[float]) -> None:
    labels = {"service": service, "job": "apps"}
    counts = [QPS * 60] * len(medians)
    name = "http_request_duration_seconds"
    for bound in BUCKETS_S:
        per_minute = [n * latency_cdf(bound, m) for n, m in zip(counts, medians, strict=True)]
        families.add(name, "histogram", f"{name}_bucket", {**labels, "le": str(bound)}, cumulative(per_minute))
    families.add(name, "histogram", f"{name}_bucket", {**labels, "le": "+Inf"}, cumulative(counts))
    families.add(name, "histogram", f"{name}_count", labels, cumulative(counts))
    families.add(
        name, "histogram", f"{name}_sum", labels, cumulative([n * m for n, m in zip(counts, medians, strict=True)])
    )
    for code, share in (("200", 0.99), ("500", 0.01)):
        done = cumulative([n * share for n in counts])
        families.add("http_requests", "counter", "http_requests_total", {**labels, "code": code}, done)
    families.add("process_cpu_seconds", "counter", "process_cpu_seconds_total", labels, cumulative([6.0] * len(counts)))


def _unrecognised(families: Families, minutes: int) -> None:
    labels = {"service": "checkout-api", "job": "apps"}
    served = cumulative([QPS * 60] * minutes)
    families.add(
        "shopfront_http_requests", "counter", "shopfront_http_requests_total", {**labels, "code": "200"}, served
    )
    lag = {"consumergroup": "checkout", "topic": "orders", "partition": "0", "job": "kafka-exporter"}
    families.add("kafka_consumergroup_lag", "gauge", "kafka_consumergroup_lag", lag, [12.0] * minutes)
    cart = {"service": "cart", "job": "apps", "pool_name": "cart-db"}  # OpenTelemetry's pool metrics: read
    used = {**cart, "state": "used"}
    families.add("db_client_connections_usage", "gauge", "db_client_connections_usage", used, [3.0] * minutes)
    families.add("db_client_connections_max", "gauge", "db_client_connections_max", cart, [10.0] * minutes)
    families.add(
        "checkout_db_pool_active_connections", "gauge", "checkout_db_pool_active_connections", labels, [4.0] * minutes
    )
    waited = cumulative([3.0] * minutes)
    families.add("checkout_db_pool_wait", "counter", "checkout_db_pool_wait_total", labels, waited)
    families.add("shopfront_inflight_requests", "gauge", "shopfront_inflight_requests", labels, [7.0] * minutes)
    for service in ("checkout-api", "cart"):
        for outcome, share in (("success", 0.9), ("error", 0.05), ("timeout", 0.05)):
            jobs = {"service": service, "job": "apps", "outcome": outcome}
            done = cumulative([QPS * share] * minutes)
            families.add("worker_requests", "counter", "worker_requests_total", jobs, done)
        _ingress(families, service, minutes)


def _ingress(families: Families, service: str, minutes: int) -> None:
    """ingress-nginx's series for one backend (its `service` label names the backend)."""
    base = {"service": service, "ingress": service, "job": "ingress-nginx"}
    name = "nginx_ingress_controller_requests"
    for status, share in (("200", 0.99), ("503", 0.01)):
        families.add(name, "counter", name, {**base, "status": status}, cumulative([QPS * 60 * share] * minutes))
    duration = "nginx_ingress_controller_request_duration_seconds"
    for bound, share in (("0.1", 0.9), ("1.0", 0.99), ("+Inf", 1.0)):
        counts = cumulative([QPS * 60 * share] * minutes)
        families.add(duration, "histogram", f"{duration}_bucket", {**base, "le": bound}, counts)


def start_plain_stack(data: Path) -> Proc:
    """Its Prometheus on a free loopback port; stopped by PID by the fixture that started it."""
    return start_prometheus(data, free_port(), die_with_parent=True)
