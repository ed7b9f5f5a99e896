"""examples/clock-skew-401: a node's clock falls behind and its pods answer 401, beside a canary that is only a
decoy; read back from the real Prometheus, the logfmt lines and the Kubernetes API stand-in."""

from __future__ import annotations

import re

import pytest

from bot.eval import case_from_scenario
from bot.sandbox.data import read_jsonl
from bot.sandbox.scenario import load_scenario
from tests.sandbox.queries import by_label, kube_items, value

NAME = "examples/clock-skew-401"
PAY = 'service="payments-api"'


@pytest.fixture(scope="module")
def box(make_sandbox):
    return make_sandbox(NAME)


def test_one_nodes_clock_falls_behind_and_loses_its_sync(box):
    offsets = by_label(box, f"node_timex_offset_seconds{{{PAY}}}", 10, "node")
    assert offsets["node-3"] < -60 and all(abs(v) < 0.01 for n, v in offsets.items() if n != "node-3")
    assert by_label(box, f"node_timex_sync_status{{{PAY}}}", 10, "node") == {"node-1": 1, "node-2": 1, "node-3": 0}
    assert by_label(box, f"node_timex_sync_status{{{PAY}}}", -30, "node")["node-3"] == 1


def test_401s_come_from_the_pods_on_that_node_only(box):
    share = 'sum by (node) (rate(http_requests_total{{{s},status="401"}}[5m])) / sum by (node) ' + (
        "(rate(http_requests_total{{{s}}}[5m]))"
    )
    by_node = by_label(box, share.format(s=PAY), 15, "node")
    assert by_node["node-3"] > 0.8 and by_node["node-1"] < 0.01 and by_node["node-2"] < 0.01
    total = f'sum(rate(http_requests_total{{{PAY},status="401"}}[5m])) / sum(rate(http_requests_total{{{PAY}}}[5m]))'
    assert value(box, total, 15) == pytest.approx(2 / 6 * 0.95, abs=0.07)  # two of six pods
    assert value(box, total, -30) < 0.005
    five = f'sum(rate(http_requests_total{{{PAY},status=~"5.."}}[5m])) / sum(rate(http_requests_total{{{PAY}}}[5m]))'
    assert value(box, five, 15) < 0.01  # 4xx are not errors of the server


def test_the_canary_runs_on_one_pod_of_four(box):
    assert by_label(box, 'count by (version) (up{service="auth"})', 0, "version") == {"v2.4.0": 1, "v2.3.7": 3}
    assert by_label(box, 'count by (version) (up{service="auth"})', -30, "version") == {"v2.3.7": 4}
    sets = kube_items(box, "replicasets", "payments", "app=auth")
    held = {
        rs["spec"]["template"]["spec"]["containers"][0]["image"].rsplit(":", 1)[1]: rs["spec"]["replicas"]
        for rs in sets
    }
    assert {v: n for v, n in held.items() if n} == {"v2.4.0": 1, "v2.3.7": 3}
    scaled = {e["message"] for e in kube_items(box, "events", "payments") if e["reason"] == "ScalingReplicaSet"}
    assert any(re.fullmatch(r"Scaled up replica set auth-\w+ to 1", m) for m in scaled), scaled
    assert any(re.fullmatch(r"Scaled down replica set auth-\w+ to 3", m) for m in scaled), scaled


def test_the_go_runtime_the_retry_queue_and_the_replica_have_their_exporters_names(box):
    assert value(box, f'count(go_gc_duration_seconds{{{PAY},quantile="0.5"}})', 0) == 6
    queue = 'rabbitmq_queue_messages_ready{service="payments-api",queue="payments.retry",vhost="/"}'
    assert value(box, queue, -10) < 100 < 3000 < value(box, queue, 40)
    lag = 'avg_over_time(pg_replication_lag_seconds{service="payments-db"}[30m])'
    assert value(box, lag, 0) == pytest.approx(0.2, rel=0.25)


def test_the_rejections_are_logfmt_lines_from_the_skewed_node(box):
    docs = [d for d in read_jsonl(box.logs_jsonl) if "token not yet valid" in d["message"]]
    assert len(docs) > 500 and {d["node"] for d in docs} == {"node-3"}
    pairs = dict(re.findall(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)', docs[0]["message"]))
    assert pairs["level"] == "warn" and pairs["node"] == "node-3" and pairs["pod"] == docs[0]["pod"]
    assert pairs["msg"].startswith('"JWT rejected')
    canary = [d for d in read_jsonl(box.logs_jsonl) if "signing tokens with key 2024-11" in d["message"]]
    assert canary and {d["version"] for d in canary} == {"v2.4.0"}


def test_the_decoy_reaches_the_eval_case():
    assert case_from_scenario(load_scenario(NAME)).must_not_name == ("v2.4.0",)
