"""examples/node-not-ready-zone-b: a node that stops answering, seen in the per-pod series, the pinned logs and the
Kubernetes API stand-in (its events, its Terminating pods, its rescheduled ones)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest
from kubernetes import config as kube_config

from bot.sandbox.data import read_jsonl
from tests.sandbox.queries import by_label, kube_items, value, vector
from tools.kubernetes.query import KubernetesTools

NAME = "examples/node-not-ready-zone-b"
SF = 'service="storefront"'


@pytest.fixture(scope="module")
def box(make_sandbox):
    return make_sandbox(NAME)


def test_the_nodes_pods_stop_answering_then_start_elsewhere(box):
    assert value(box, f'count(up{{{SF},node="node-b1"}} == 1)', -10) == 2
    assert value(box, f'count(up{{{SF},node="node-b1"}} == 0)', 2) == 2  # unreachable, not yet evicted
    assert vector(box, f'up{{{SF},node="node-b1"}}', 11) == []  # evicted: gone from the targets
    after = by_label(box, f"up{{{SF}}} == 1", 11, "node")
    assert len(vector(box, f"up{{{SF}}} == 1", 11)) == 6 and set(after) <= {"node-a1", "node-c1"}
    zones = by_label(box, 'count by (zone) (up{service="cart"} == 1)', -10, "zone")
    assert zones == {"eu-west-1a": 1, "eu-west-1b": 1, "eu-west-1c": 1}


def test_effects_narrowed_to_a_node_and_a_zone_move_only_those_pods(box):
    p99 = "histogram_quantile(0.99, sum by (le, node) (rate(http_request_duration_seconds_bucket{{{s}}}[3m])))"
    slow = by_label(box, p99.format(s=SF), -1, "node")
    assert slow["node-b1"] > 4 * max(slow["node-a1"], slow["node-c1"])
    cart = by_label(box, p99.replace("node", "zone").format(s='service="cart"'), -1, "zone")
    assert cart["eu-west-1b"] > 4 * cart["eu-west-1a"]
    errors = f'sum(rate(http_requests_total{{{SF},status=~"5.."}}[3m])) / sum(rate(http_requests_total{{{SF}}}[3m]))'
    assert value(box, errors, 3) > 0.04 > 0.01 > value(box, errors, -20)


def test_the_stand_in_tells_the_story_of_the_node(box):
    nodes = {n["metadata"]["name"]: n for n in kube_items(box, "nodes")}
    ready = {
        name: next(c["status"] for c in n["status"]["conditions"] if c["type"] == "Ready") for name, n in nodes.items()
    }
    assert ready == {"node-a1": "True", "node-b1": "Unknown", "node-c1": "True"}
    assert nodes["node-b1"]["metadata"]["labels"]["topology.kubernetes.io/zone"] == "eu-west-1b"
    assert {e["reason"] for e in kube_items(box, "events", "default")} == {"NodeNotReady"}
    pods = {p["metadata"]["name"]: p for p in kube_items(box, "pods", "web")}
    terminating = {name for name, p in pods.items() if "deletionTimestamp" in p["metadata"]}
    # storefront's two, cart's one and catalog-db's one: every pod node-b1 ran, kept until the node answers
    assert len(terminating) == 4 and {pods[name]["spec"]["nodeName"] for name in terminating} == {"node-b1"}
    assert all(p["spec"]["nodeName"] != "node-b1" for name, p in pods.items() if name not in terminating)
    now = (box.now - box.incident_at).total_seconds() / 60
    per_pod = {name for name in pods if name not in terminating and not name.startswith("catalog-db-")}
    assert per_pod == set(by_label(box, 'last_over_time(up{service=~"storefront|cart"}[30s])', now, "pod"))
    reasons: dict[str, set[str]] = {}
    for e in kube_items(box, "events", "web"):
        reasons.setdefault(e["involvedObject"]["name"], set()).add(e["reason"])
    assert all({"NodeNotReady", "TaintManagerEviction"} <= reasons[name] for name in terminating)


def test_opsbot_reads_the_node_events_through_its_namespaces(box):
    assert box.scenario.kube_namespaces == ("web", "default")
    api = kube_config.new_client_from_config(config_file=str(box.kubeconfig))
    tools = KubernetesTools(api, list(box.scenario.kube_namespaces), clock=lambda: box.now)
    assert "Node/node-b1: Node node-b1 status is now: NodeNotReady" in str(tools.query_k8s_events("default", "", "2h"))
    assert "TaintManagerEviction" in str(tools.query_k8s_events("web", "storefront", "2h"))


def _minutes(box, doc: dict) -> float:
    return (datetime.fromisoformat(doc["@timestamp"].replace("Z", "+00:00")) - box.incident_at).total_seconds() / 60


def test_log_lines_are_pinned_and_carry_their_fields(box):
    docs = read_jsonl(box.logs_jsonl)
    storefront = [d for d in docs if d["service"] == "storefront"]
    assert all({"pod", "node", "zone", "namespace", "version"} <= set(d) and d["host"] == d["pod"] for d in storefront)
    assert not [d for d in storefront if d["node"] == "node-b1" and 0 <= _minutes(box, d) < 60]  # unreachable, gone
    [failover] = [d for d in docs if "session store failover" in d["message"]]
    assert failover["actor"] == "sentinel" and failover["from_zone"] == "eu-west-1b"
    cart = [d for d in docs if d["service"] == "cart"]
    assert all(re.match(r"ts=\S+ level=\w+ service=cart logger=\S+ msg=", d["message"]) for d in cart)
    sweeps = [d for d in cart if d.get("job") == "abandoned-cart-sweep"]
    assert len(sweeps) > 20 and all((_minutes(box, d) + 1800) % 60 < 2 for d in sweeps)  # two minutes an hour


def test_steady_noise_keeps_its_rate_and_the_decoy_deploy_touches_a_sub_folder(box):
    widget = [_minutes(box, d) for d in read_jsonl(box.logs_jsonl) if "recommendations widget" in d["message"]]
    early = sum(1 for m in widget if m < -600)
    late = sum(1 for m in widget if m >= -600)
    window = (box.incident_at - box.data.data_start).total_seconds() / 60
    expected_early = (window - 600) / (window + (box.now - box.incident_at).total_seconds() / 60)
    assert early / len(widget) == pytest.approx(expected_early, abs=0.12) and late > 0
    [deploy] = [r for r in box.data.deploys if r.version == "v3.9.2"]
    assert "services/cart/src/messages.yaml" in deploy.diff and deploy.at == box.incident_at - timedelta(minutes=40)
