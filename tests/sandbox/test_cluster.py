"""The scenario's [kubernetes] block: validation, and the cluster the sandbox serves (through the real client)."""

from __future__ import annotations

import copy
import re
import tomllib
from datetime import timedelta
from importlib import resources

import pytest
from kubernetes import config as kube_config
from prometheus_api_client import PrometheusConnect

from bot.sandbox.cluster import crashloop_restarts
from bot.sandbox.data import build_sandbox
from bot.sandbox.scenario import ScenarioError, scenario_from_dict, scenario_names
from bot.sandbox.standins.kubeapi import FakeKubeAPI
from tools.base import ToolResult
from tools.kubernetes.query import KubernetesTools
from tools.runbooks.search import Runbooks

CLUSTER_SCENARIOS = ("oom-heap-over-limit", "crashloop-env-enum", "runbook-kafka-rebalance")


def _raw(name: str) -> dict:
    return tomllib.loads((resources.files("bot.sandbox") / "scenarios" / f"{name}.toml").read_text())


def _tools(box) -> KubernetesTools:
    api = kube_config.new_client_from_config(config_file=str(box.kubeconfig))
    return KubernetesTools(api, [box.kube_namespace], clock=lambda: box.now)


def _restarts_now(box, service: str) -> float:
    client = PrometheusConnect(url=box.prometheus_url, disable_ssl=True)
    promql = f'sum(kube_pod_container_status_restarts_total{{service="{service}"}})'
    return float(client.custom_query(promql, params={"time": box.now.timestamp()})[0]["value"][1])


def _restarts_in(pods: str) -> int:
    found = re.search(r"(\d+) restarts in total", pods)
    assert found, pods
    return int(found.group(1))


def test_the_three_cluster_scenarios_ship_in_the_suite():
    assert set(CLUSTER_SCENARIOS) <= set(scenario_names())
    for name in CLUSTER_SCENARIOS:
        assert scenario_from_dict(_raw(name)).kubernetes is not None


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"pods": [{"service": "nope"}]}, "names unknown service 'nope'"),
        ({"pods": [{"service": "mailer", "replicas": 2, "affected": 3}]}, "affected 3 not in 0..2"),
        ({"pods": [{"service": "smtp-relay"}]}, "pods of external service 'smtp-relay'"),
        (
            {"events": [{"service": "mailer", "reason": "x", "message": "y", "at_minutes": 0, "kind": "Service"}]},
            "kind 'Service' is not Pod, Deployment or Node",
        ),
        (
            {"events": [{"reason": "NodeNotReady", "message": "y", "at_minutes": 0, "kind": "Node", "node": "n9"}]},
            "Node event names unknown node 'n9'",
        ),
        (
            {"events": [{"service": "mailer", "reason": "ScalingReplicaSet", "message": "to 14", "at_minutes": 0}]},
            "ScalingReplicaSet events come from the replicas and rollouts",
        ),
    ],
)
def test_a_bad_kubernetes_block_is_rejected_with_the_reason(change, problem):
    raw = copy.deepcopy(_raw("crashloop-env-enum"))
    raw["kubernetes"] |= change
    with pytest.raises(ScenarioError, match=problem):
        scenario_from_dict(raw)


def test_a_runbook_must_be_a_plain_markdown_file_name():
    raw = copy.deepcopy(_raw("runbook-kafka-rebalance"))
    raw["runbooks"][0]["file"] = "../escape.md"
    with pytest.raises(ScenarioError, match="not a plain"):
        scenario_from_dict(raw)


def test_crash_loop_restarts_follow_the_kubelets_back_off():
    # runs of 8 s, back-off 10, 20, 40, 80, 160 s, then every 300 s
    assert [crashloop_restarts(s) for s in (0, 8, 30, 60, 600, 1800)] == [0, 1, 2, 3, 6, 10]


def test_oom_pods_agree_with_the_restart_series_and_name_the_kill(make_sandbox):
    box = make_sandbox("oom-heap-over-limit")
    text = _tools(box).query_pods("shop", "recommendations").text
    assert _restarts_in(text) == _restarts_now(box, "recommendations") > 0
    assert text.count("last terminated: OOMKilled exit 137") == 4
    history = _tools(box).query_rollout_history("shop", "recommendations")
    assert "rev 4 (current)" in history.text and "recommendations:v4.2.0" in history.text


def test_a_stuck_rollout_keeps_the_old_pods_and_crash_loops_the_new_one(make_sandbox):
    box = make_sandbox("crashloop-env-enum")
    tools = _tools(box)
    pods = tools.query_pods("comms", "mailer").text
    assert "states: CrashLoopBackOff x1, last Error exit 1 x1" in pods.splitlines()[0]
    looping = [line for line in pods.splitlines()[1:] if "CrashLoopBackOff" in line]
    assert len(looping) == 1 and "last terminated: Error exit 1" in looping[0]
    assert pods.count("ready 1/1 restarts 0") == 3
    history = tools.query_rollout_history("comms", "mailer").text.splitlines()
    assert "mailer:v1.9.0; ready 0/1" in history[1] and "mailer:v1.8.4; ready 3/3" in history[2]
    assert _restarts_in(pods) == _restarts_now(box, "mailer")


def test_events_older_than_an_hour_are_gone_as_in_a_real_cluster(make_sandbox):
    box = make_sandbox("runbook-kafka-rebalance")
    events = _tools(box).query_k8s_events("billing", "", "1d")
    assert "Liveness probe failed" not in events.text  # 5 hours before the incident: past the event TTL
    assert "ScalingReplicaSet" in events.text  # v3.6.0 rolled out 45 minutes ago
    earlier = _tools(box).query_k8s_events(
        "billing", "", start=(box.now - timedelta(hours=3)).isoformat(), end=(box.now - timedelta(hours=2)).isoformat()
    )
    assert isinstance(earlier, ToolResult) and earlier.status == "no_data"


def test_the_scenarios_runbook_is_in_the_sandbox_repository_beside_the_shared_ones(make_sandbox):
    box = make_sandbox("runbook-kafka-rebalance")
    assert (box.git_repo / "runbooks" / "kafka-consumers.md").is_file()
    hits = Runbooks(box.runbooks_dir).search("CommitFailedException max-poll-records", "invoicing")
    assert hits[0].citation == "Runbook: kafka-consumers.md § Rebalance storm"
    assert {p.name for p in box.runbooks_dir.iterdir()} >= {"pod-oomkilled.md", "crashloop-config.md"}


def test_an_incidents_own_events_outlive_the_hour_while_older_ones_go(tmp_path, sandbox_now):
    raw = copy.deepcopy(_raw("crashloop-env-enum")) | {"incident": "-240m"}
    data = build_sandbox(scenario_from_dict(raw), tmp_path / "box", sandbox_now)
    assert data.cluster_json is not None
    kube = FakeKubeAPI.from_file(data.cluster_json)
    try:
        api = kube_config.new_client_from_config(config_file=str(kube.write_kubeconfig(tmp_path / "kubeconfig")))
        events = str(KubernetesTools(api, ["comms"], clock=lambda: sandbox_now).query_k8s_events("comms", "", "1d"))
    finally:
        kube.stop()
    assert "ProgressDeadlineExceeded" in events  # 3 h 52 min old: the incident's own, still listed
    assert (
        "Scaled up replica set mailer-4e5d9c to 1" in events and "Scaled down replica set mailer-3d5d9c to 3" in events
    )
    assert "Scaled up replica set mailer-3d5d9c to 4" not in events  # the rollout a day before: past the TTL
