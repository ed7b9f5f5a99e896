"""Metric discovery against real Prometheus instances holding each convention's series (tests/stacks/)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.stacks.build import RunningStack
from tools.discovery import Finding
from tools.metrics.discovery import discover_metrics
from tools.metrics.prometheus import PrometheusAPI


def discovered(stack: RunningStack) -> dict[str, Finding]:
    client = PrometheusAPI(stack.prometheus_url)
    findings = discover_metrics(client, stack.built.now, stack.prometheus_url)
    return {f.setting: f for f in findings if f.value is not None}


@pytest.fixture(scope="module")
def shop(make_stack: Callable[[str], RunningStack]) -> dict[str, Finding]:
    return discovered(make_stack("shop"))


@pytest.fixture(scope="module")
def mesh(make_stack: Callable[[str], RunningStack]) -> dict[str, Finding]:
    return discovered(make_stack("mesh"))


def promql(found: dict[str, Finding], setting: str) -> str:
    value: Any = found[setting].value
    return str(value["promql"])


def test_the_service_label_is_the_one_most_services_use_with_the_others_as_evidence(shop):
    label = shop["prometheus.service_label"]
    assert label.value == "application"
    assert label.evidence.startswith("application: 3 services [order, payment, web] (Micrometer (Spring Boot))")
    assert "app_kubernetes_io_name: 1 service [inventory] (Prometheus client defaults" in label.evidence


def test_micrometer_services_get_a_histogram_p99_and_their_status_label(shop):
    assert promql(shop, "prometheus.metrics.p99_latency") == (
        'histogram_quantile(0.99, sum by (le) (rate(http_server_requests_seconds_bucket{$label="$service"}[5m])))'
    )
    assert 'status=~"5.."' in promql(shop, "prometheus.metrics.error_rate")
    assert shop["prometheus.metrics.db_pool_pending"].value == {
        "promql": 'sum(hikaricp_connections_pending{$label="$service"})',
        "unit": "count",
        "description": "requests waiting for a pool connection",
        "role": "saturation",
    }
    assert shop["prometheus.metrics.gc_pause"].evidence.startswith("3 services [order, payment, web]")


def test_the_go_service_gets_its_own_label_templates_and_what_it_does_not_measure(shop):
    own = "prometheus.services.inventory"
    assert shop[f"{own}.service_label"].value == "app_kubernetes_io_name"
    assert 'code=~"5.."' in promql(shop, f"{own}.metrics.error_rate")
    assert "http_request_duration_seconds_bucket" in promql(shop, f"{own}.metrics.p99_latency")
    assert promql(shop, f"{own}.metrics.cpu_usage") == 'sum(rate(process_cpu_seconds_total{$label="$service"}[5m]))'
    missing = shop[f"{own}.not_measured"]
    assert missing.value == ["db_pool_pending", "db_pool_usage", "thread_pool_queue"]
    assert "no hikaricp_connections_pending, hikaricp_connections_active, executor_queued_tasks series" in (
        missing.evidence
    )
    assert shop["prometheus.services.web.not_measured"].value == ["db_pool_pending", "db_pool_usage"]
    assert "prometheus.services.order.not_measured" not in shop


def test_istio_is_read_in_milliseconds_from_the_destination_reporter(mesh):
    latency: Any = mesh["prometheus.metrics.p99_latency"].value
    assert latency["unit"] == "ms" and "istio_request_duration_milliseconds_bucket" in latency["promql"]
    assert 'reporter="destination"' in promql(mesh, "prometheus.metrics.qps")
    assert mesh["prometheus.services.ratings.service_label"].value == "destination_service_name"


def test_summaries_micrometer_without_histograms_and_ingress_nginx_each_get_their_own_shape(mesh):
    recs = promql(mesh, "prometheus.services.recs.metrics.p99_latency")
    assert recs == 'max(http_request_duration_seconds{$label="$service",quantile="0.99"})'
    assert 'status=~"5.."' in promql(mesh, "prometheus.services.recs.metrics.error_rate")
    legacy = mesh["prometheus.services.legacy.metrics.p99_latency"]
    assert "max(http_server_requests_seconds_max" in str(legacy.evidence + promql(mesh, legacy.setting))
    assert "not a percentile" in legacy.evidence
    assert mesh["prometheus.services.storefront.service_label"].value == "exported_service"
    assert "nginx_ingress_controller_requests" in promql(mesh, "prometheus.services.storefront.metrics.qps")


class PrometheusWithoutConventions:
    """Label answers of a Prometheus whose only histogram follows no known convention."""

    def label_values(self, label: str, match: str = "", since: datetime | None = None) -> list[str]:
        return ["up", "queue_wait_seconds_bucket", "queue_wait_seconds_count"] if label == "__name__" else []

    def label_names(self, match: str = "", since: datetime | None = None) -> list[str]:
        return ["__name__", "job"]


def test_a_stack_with_no_known_convention_says_so_and_names_what_it_saw():
    client: Any = PrometheusWithoutConventions()
    [url, nothing] = discover_metrics(client, datetime.now(UTC), "http://prometheus:9090")
    assert url.value == "http://prometheus:9090"
    assert nothing.value is None and nothing.evidence == "histograms seen: queue_wait_seconds"
    assert nothing.problems[0].startswith("no known request metric is active in the last hour (looked for ")
