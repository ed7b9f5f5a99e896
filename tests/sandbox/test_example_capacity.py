"""examples/hpa-cap-daily-peak: an autoscaling cap met by the daily load, read back from the real Prometheus, the
logs, the git deploy repository and the Kubernetes API stand-in (through the official client)."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime

import pytest

from bot.sandbox.data import read_jsonl
from tests.sandbox.queries import at, by_label, kube_items, value

NAME = "examples/hpa-cap-daily-peak"
SVC = 'service="checkout-api"'
P99 = f"histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{{{SVC}}}[5m])))"
MORNING, CAPPED, PEAK, NIGHT = -200, 60, 180, 660  # 08:40, 13:00, 15:00 and 23:00 UTC


@pytest.fixture(scope="module")
def box(make_sandbox):
    return make_sandbox(NAME)


def test_the_hpa_sits_at_its_max_while_the_daily_load_wants_more(box):
    assert value(box, f"kube_horizontalpodautoscaler_spec_max_replicas{{{SVC}}}", CAPPED) == 10
    assert value(box, f"kube_horizontalpodautoscaler_status_current_replicas{{{SVC}}}", CAPPED) == 10
    limited = f'kube_horizontalpodautoscaler_status_condition{{{SVC},condition="ScalingLimited",status="true"}}'
    assert value(box, limited, CAPPED) == 1 and value(box, limited, MORNING) == 0
    assert 4 <= value(box, f"kube_deployment_spec_replicas{{{SVC}}}", MORNING) < 10


def _settled(box, minutes: int) -> int:
    """The latest minute at or before `minutes` whose replicas had not changed for 6 minutes: backfilled series
    carry no staleness marker, so a pod that just went is still returned for Prometheus' 5-minute lookback."""
    while value(box, f"changes(kube_deployment_spec_replicas{{{SVC}}}[6m])", minutes) > 0:
        minutes -= 1
    return minutes


@pytest.mark.parametrize("around", [MORNING, CAPPED, NIGHT])
def test_per_pod_series_count_the_pods_the_deployment_has(box, around):
    minutes = _settled(box, around)
    replicas = value(box, f"kube_deployment_spec_replicas{{{SVC}}}", minutes)
    assert value(box, f"count(up{{{SVC}}} == 1)", minutes) == replicas
    assert value(box, f'count(kube_pod_container_resource_limits{{{SVC},resource="cpu"}})', minutes) == replicas
    assert set(by_label(box, f"up{{{SVC}}}", minutes, "namespace")) == {"shop"}


def test_cpu_is_capped_by_ten_pods_at_their_limit_while_traffic_keeps_its_daily_curve(box):
    cpu = f"sum(rate(process_cpu_seconds_total{{{SVC}}}[5m]))"
    assert value(box, f'sum(kube_pod_container_resource_limits{{{SVC},resource="cpu"}})', PEAK) == pytest.approx(8.0)
    # the plateau: at the cap around the peak and never above it (one 5 min rate() sample dips with the noise,
    # 7.47 at one run clock, so the highest of the half hour before the peak is read)
    assert 7.6 <= value(box, f"max_over_time(({cpu})[30m:1m])", PEAK) <= 8.05
    assert value(box, cpu, MORNING) < 7.0
    qps = f"sum(rate(http_requests_total{{{SVC}}}[5m]))"
    assert value(box, qps, PEAK) > 1.25 * value(box, qps, MORNING)  # the load itself is a normal day


def test_the_slowdown_comes_back_with_the_peak_and_leaves_with_it(box):
    morning = value(box, P99, MORNING)
    assert value(box, P99, CAPPED) > 2.5 * morning
    assert value(box, P99, NIGHT) < 1.5 * morning


def test_the_pool_runs_dry_and_garbage_collection_slows_during_the_peak(box):
    assert value(box, f"max(hikaricp_connections_active{{{SVC}}})", CAPPED) == 20
    assert value(box, f"max(hikaricp_connections_max{{{SVC}}})", CAPPED) == 20
    assert value(box, f"sum(hikaricp_connections_pending{{{SVC}}})", CAPPED) > 50
    assert value(box, f"sum(hikaricp_connections_pending{{{SVC}}})", MORNING) == 0
    pause = f"sum(rate(jvm_gc_pause_seconds_sum{{{SVC}}}[5m])) / sum(rate(jvm_gc_pause_seconds_count{{{SVC}}}[5m]))"
    assert value(box, pause, MORNING) == pytest.approx(0.018, rel=0.35)
    assert value(box, pause, CAPPED) == pytest.approx(0.045, rel=0.35)
    assert value(box, f'max(jvm_memory_max_bytes{{{SVC},area="heap"}})', CAPPED) == 1024 * 2**20


def test_the_decoy_adds_a_few_429s_at_the_gateway_only(box):
    share = 'sum(rate(http_requests_total{service="edge-gateway",status="429"}[5m])) / ' + (
        'sum(rate(http_requests_total{service="edge-gateway"}[5m]))'
    )
    assert value(box, share, -200) < 0.001 < 0.002 < value(box, share, -100)
    errors = 'sum(rate(http_requests_total{service="edge-gateway",status=~"5.."}[5m]))'
    assert value(box, errors, -100) < 0.01 * value(
        box, 'sum(rate(http_requests_total{service="edge-gateway"}[5m]))', -100
    )


def test_json_lines_come_from_pods_prometheus_knows_and_steady_noise_keeps_its_rate(box):
    docs = [d for d in read_jsonl(box.logs_jsonl) if d["service"] == "checkout-api"]
    lines = [json.loads(d["message"]) for d in docs]
    assert all({"timestamp", "level", "service", "logger", "message", "pod", "node", "zone"} <= set(x) for x in lines)
    pool = [d for d in docs if "Connection is not available" in d["message"]]
    assert pool and all(d["level"] == "WARN" and d["host"] == d["pod"] for d in pool)
    peak_pods = set(by_label(box, f"up{{{SVC}}}", CAPPED, "pod"))
    near = [d for d in pool if abs((_time(d) - at(box, CAPPED)).total_seconds()) < 60]
    assert near and {d["pod"] for d in near} <= peak_pods
    flags = [_time(d) for d in docs if "Feature flag refresh failed" in d["message"]]
    first_half = sum(t < box.data.data_start + (box.now - box.data.data_start) / 2 for t in flags)
    assert 0.35 < first_half / len(flags) < 0.65  # steady: not thinned after its first hour


def _time(doc: dict) -> datetime:
    return datetime.fromisoformat(doc["@timestamp"].replace("Z", "+00:00"))


def _git(box, *args: str) -> str:
    return subprocess.run(["git", "-C", str(box.git_repo), *args], capture_output=True, text=True, check=True).stdout


def test_a_config_only_deploy_keeps_the_image_and_a_sub_folder_file_deploys(box):
    tags = _git(box, "tag", "-l", "checkout-api/*").split()
    assert "checkout-api/v4.2.0-config.1" in tags
    before = tags[tags.index("checkout-api/v4.2.0-config.1") - 1]
    kustomization = "services/checkout-api/kustomization.yaml"
    assert _git(box, "show", f"{before}:{kustomization}") == _git(
        box, "show", f"checkout-api/v4.2.0-config.1:{kustomization}"
    )
    diff = _git(box, "diff", before, "checkout-api/v4.2.0-config.1", "--", "services/checkout-api")
    assert "-  maxReplicas: 24" in diff and "+  maxReplicas: 10" in diff
    gateway = _git(box, "diff", "edge-gateway/v2.3.0", "edge-gateway/v2.3.1", "--", "services/edge-gateway")
    assert "services/edge-gateway/config/ratelimit.yaml" in gateway and "+    requests_per_minute: 600" in gateway


def test_the_stand_in_agrees_with_the_series(box):
    now = (box.now - box.incident_at).total_seconds() / 60
    [hpa] = kube_items(box, "horizontalpodautoscalers", "shop")
    limited = value(box, f'kube_horizontalpodautoscaler_status_condition{{{SVC},condition="ScalingLimited"}}', now)
    assert hpa["spec"]["maxReplicas"] == 10 and hpa["spec"]["minReplicas"] == 4
    assert hpa["status"]["currentReplicas"] == value(box, f"kube_deployment_spec_replicas{{{SVC}}}", now)
    conditions = [c["status"] for c in hpa["status"]["conditions"] if c["type"] == "ScalingLimited"]
    assert conditions == ["True" if limited else "False"]
    pods = kube_items(box, "pods", "shop", "app=checkout-api")
    there = set(by_label(box, f"last_over_time(up{{{SVC}}}[30s])", now, "pod"))
    assert {p["metadata"]["name"] for p in pods} == there
    scaled = [e for e in kube_items(box, "events", "shop") if e["reason"] == "ScalingReplicaSet"]
    assert scaled
    for e in scaled:  # every "Scaled up/down ... to N" is what the Deployment had at that minute
        size = int(e["message"].rsplit(" to ", 1)[1])
        minutes = (_time({"@timestamp": e["lastTimestamp"]}) - box.incident_at).total_seconds() / 60
        assert size == value(box, f"kube_deployment_spec_replicas{{{SVC}}}", minutes + 0.5), e["message"]
