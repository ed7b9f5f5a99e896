"""The opt-in signals a scenario can give a service, each read back from the real Prometheus under the name its
exporter uses; and a scenario that gives none writes exactly the families it wrote before they existed."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import pytest

from bot.sandbox.scenario import Effect
from bot.sandbox.series.shapes import apply_effect
from tests.fakes.backends import RunningSandbox, start_sandbox
from tests.sandbox.queries import by_label, value

EVERY_FAMILY = """
name = "every-family"
title = "every opt-in family at once"
question = "what is wrong?"
root_cause = "the api's log disk fills up"
must_name = ["disk"]
incident = "-60m"

[services.api]
p99_ms = 100
qps = 50
downstream = ["worker", "db"]
status_404 = 0.02
status_409 = 0.01
pool_active = 5
pool_max = 10
pool = "pgx"
memory_request_mb = 256
cpu_limit_cores = 1.5
disk_capacity_gb = 100
disk_used_gb = 40
disk_mountpoint = "/var/log"

[services.worker]
p99_ms = 50
qps = 10
consumer_lag = 100
topic = "orders"
consumer_group = "order-workers"

[services.db]
kind = "database"
p99_ms = 5
qps = 300
db_connections = 80
db_max_connections = 100

[[timeline]]
service = "api"
metric = "disk_used_gb"
to = 99
at_minutes = -60
shape = "ramp"
ramp_minutes = 60

[[timeline]]
service = "api"
metric = "status_409"
to = 0.2
at_minutes = 0

[[timeline]]
service = "worker"
metric = "consumer_lag"
to = 50000
at_minutes = 0
shape = "ramp"
ramp_minutes = 30

[[timeline]]
service = "db"
metric = "db_exclusive_locks"
to = 1
at_minutes = -5
end_minutes = 15

[[timeline]]
service = "db"
metric = "db_longest_transaction_s"
to = 1200
at_minutes = -5
shape = "ramp"
ramp_minutes = 20
end_minutes = 15

[[timeline]]
service = "db"
metric = "db_connections"
to = 240
at_minutes = -5

[[timeline]]
service = "db"
metric = "db_connections"
to = 100
at_minutes = -5
shape = "plateau"
"""
GOLDEN = [
    "http_requests",
    "http_request_duration_seconds",
    "process_cpu_seconds",
    "process_resident_memory_bytes",
    "kube_pod_container_status_restarts",
    "up",
]


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory, sandbox_now: datetime):
    folder = tmp_path_factory.mktemp("every-family")
    (folder / "every-family.toml").write_text(EVERY_FAMILY)
    running: RunningSandbox = start_sandbox(str(folder / "every-family.toml"), folder / "box", sandbox_now)
    yield running
    running.stop()


def test_a_disk_fills_under_node_exporters_names(box):
    fs = 'node_filesystem_{}_bytes{{service="api",mountpoint="/var/log",fstype="ext4"}}'
    assert value(box, fs.format("size"), 0) == 100e9
    assert value(box, fs.format("avail"), -70) == pytest.approx(60e9, rel=0.02)
    assert value(box, fs.format("avail"), 1) < 2e9


def test_4xx_by_code_take_their_share_without_moving_traffic_or_5xx(box):
    codes = by_label(box, 'sum by (status) (rate(http_requests_total{service="api"}[5m]))', 10, "status")
    total = sum(codes.values())
    assert codes["409"] / total == pytest.approx(0.2, rel=0.25) and codes["404"] / total == pytest.approx(0.02, rel=0.3)
    assert "401" not in codes and "429" not in codes  # only the codes the service carries
    assert (codes["500"] + codes["503"]) / total < 0.01
    before = by_label(box, 'sum by (status) (rate(http_requests_total{service="api"}[5m]))', -20, "status")
    assert before["409"] / sum(before.values()) == pytest.approx(0.01, rel=0.4)
    assert total == pytest.approx(sum(before.values()), rel=0.1)  # the 409s came out of the 200s


def test_a_pool_outside_the_jvm_uses_opentelemetrys_names(box):
    usage = by_label(box, 'db_client_connections_usage{service="api",pool_name="pgx"}', 0, "state")
    assert usage["used"] == pytest.approx(5, abs=2) and usage["used"] + usage["idle"] == 10
    assert value(box, 'db_client_connections_max{service="api",pool_name="pgx"}', 0) == 10


def test_requests_and_limits_of_a_service_without_pods_name_its_containers(box):
    limit = 'kube_pod_container_resource_limits{service="api",namespace="default",container="api",resource="cpu"}'
    assert value(box, limit, 0) == 1.5
    request = 'kube_pod_container_resource_requests{service="api",resource="memory",unit="byte"}'
    assert value(box, request, 0) == 256 * 2**20


def test_consumer_lag_and_the_database_under_their_exporters_names(box):
    lag = 'sum by (consumergroup, topic) (avg_over_time(kafka_consumergroup_lag{service="worker"}[20m]))'
    assert by_label(box, lag, 50, "consumergroup") == {"order-workers": pytest.approx(50000, rel=0.3)}
    assert value(box, 'count(kafka_consumergroup_lag{service="worker",topic="orders"})', 35) == 3  # partitions
    locks = 'pg_locks_count{service="db",datname="db",mode="accessexclusivelock"}'
    assert value(box, locks, -30) == 0 and value(box, locks, 0) == 1 and value(box, locks, 20) == 0
    assert value(box, 'pg_stat_activity_max_tx_duration{service="db",state="active"}', 12) > 600
    connections = by_label(box, 'pg_stat_activity_count{service="db"}', 0, "state")
    assert sum(connections.values()) == 100 == value(box, 'pg_settings_max_connections{service="db"}', 0)


def test_a_scenario_without_opt_in_signals_writes_only_the_golden_families(sandbox):
    families = re.findall(r"^# TYPE (\S+) ", Path(sandbox.data.openmetrics_path).read_text(), re.MULTILINE)
    assert families == GOLDEN


def _shaped(effect: Effect, series: list[float], base: float) -> list[float]:
    apply_effect(effect, series, list(range(len(series))), base, None)
    return series


def test_a_plateau_is_a_cap_the_series_keeps_its_course_under():
    day = [5.0, 7.0, 9.0, 11.0, 13.0, 11.0, 9.0]
    capped = _shaped(Effect("s", "replicas", 10.0, at_minutes=1, shape="plateau"), list(day), 8.0)
    assert capped == [5.0, 7.0, 9.0, 10.0, 10.0, 10.0, 9.0]


def test_a_periodic_effect_comes_back_every_period_for_its_length():
    spikes = _shaped(
        Effect("s", "p99_ms", 400.0, at_minutes=2, shape="periodic", every_minutes=4, for_minutes=1),
        [100.0] * 11,
        100.0,
    )
    assert spikes == [100.0, 100.0, 400.0, 100.0, 100.0, 100.0, 400.0, 100.0, 100.0, 100.0, 400.0]
