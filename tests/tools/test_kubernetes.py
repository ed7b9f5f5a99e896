"""Kubernetes tools through call_tool, over the official client and a real kubeconfig, against FakeKubeAPI."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from kubernetes import config

from tests.fakes.faulty import closed_port_url
from tests.fakes.kubeapi import FakeKubeAPI, container_status, deployment, event, pod, replicaset
from tools.base import Toolbox, call_tool
from tools.deploys.filters import DeployFilter, FilteredDeploys
from tools.deploys.kubernetes import KubernetesDeploys
from tools.deploys.query import DeployTools
from tools.kubernetes.query import KubernetesTools
from tools.toolset import Toolset

NOW = datetime(2026, 11, 28, 16, 0, tzinfo=UTC)
LABELS = {"app": "order"}


@pytest.fixture
def kube() -> Iterator[FakeKubeAPI]:
    fake = FakeKubeAPI(forbidden={"kube-system"})
    oom = container_status(
        "order",
        ready=False,
        restarts=7,
        waiting="CrashLoopBackOff",
        waiting_message="back-off 5m0s restarting failed container=order",
        last_reason="OOMKilled",
        last_exit=137,
        last_finished=NOW - timedelta(minutes=4),
    )
    fake.add(
        "shop",
        "pods",
        pod("order-6f7c9-x2x9q", LABELS, [oom], namespace="shop"),
        pod("order-6f7c9-k8d2m", LABELS, [container_status("order")], namespace="shop"),
        pod("payment-55d-pq7", {"app": "payment"}, [container_status("payment")], namespace="shop"),
    )
    fake.add(
        "shop",
        "events",
        event(
            "e1",
            "Pod",
            "order-6f7c9-x2x9q",
            "BackOff",
            "Back-off restarting failed container order",
            NOW - timedelta(minutes=3),
            count=14,
            namespace="shop",
        ),
        event(
            "e2",
            "Pod",
            "order-6f7c9-x2x9q",
            "Killing",
            "Stopping container order",
            NOW - timedelta(minutes=4),
            type_="Normal",
            namespace="shop",
        ),
        event(
            "e3",
            "Pod",
            "payment-55d-pq7",
            "Pulled",
            "image pulled",
            NOW - timedelta(hours=5),
            type_="Normal",
            namespace="shop",
        ),
    )
    fake.add("shop", "deployments", deployment("order", LABELS, namespace="shop", revision=2))
    fake.add(
        "shop",
        "replicasets",
        replicaset(
            "order",
            1,
            LABELS,
            [{"name": "order", "image": "registry/order:v2.8.0", "env": [{"name": "JAVA_OPTS", "value": "-Xmx512m"}]}],
            NOW - timedelta(days=3),
            change_cause="release v2.8.0",
            namespace="shop",
        ),
        replicaset(
            "order",
            2,
            LABELS,
            [{"name": "order", "image": "registry/order:v2.8.0", "env": [{"name": "JAVA_OPTS", "value": "-Xmx1536m"}]}],
            NOW - timedelta(minutes=20),
            change_cause="raise heap to 1.5g",
            replicas=2,
            ready=1,
            namespace="shop",
        ),
    )
    yield fake
    fake.stop()


def kube_tools(fake: FakeKubeAPI, tmp_path: Path, namespaces: tuple[str, ...] = ("shop", "kube-system")) -> Toolbox:
    api = config.new_client_from_config(config_file=str(fake.write_kubeconfig(tmp_path / "kubeconfig")))
    return Toolbox(KubernetesTools(api, list(namespaces), clock=lambda: NOW).specs())


def test_pods_show_restarts_crashloop_and_the_oom_kill(kube: FakeKubeAPI, tmp_path: Path) -> None:
    result = call_tool(kube_tools(kube, tmp_path), "query_pods", {"namespace": "shop", "service": "order"})
    assert result.status == "ok"
    assert "pods of order (app=order) in namespace shop: 2, 1 not ready, 7 restarts" in result.text
    # the first line alone (what a one-line step keeps) names the failure
    assert "; states: CrashLoopBackOff x1, last OOMKilled exit 137 x1" in result.text.splitlines()[0]
    assert "waiting: CrashLoopBackOff" in result.text
    assert "last terminated: OOMKilled exit 137 at 2026-11-28T15:56:00Z" in result.text
    assert "payment" not in result.text
    assert "labelSelector=app%3Dorder" in kube.requests[-1]


def test_events_are_newest_first_filtered_by_service_and_window(kube: FakeKubeAPI, tmp_path: Path) -> None:
    result = call_tool(
        kube_tools(kube, tmp_path), "query_k8s_events", {"namespace": "shop", "service": "order", "range": "1h"}
    )
    lines = result.text.splitlines()
    assert "2 (1 Warning)" in lines[0]
    assert "Warning BackOff Pod/order-6f7c9-x2x9q x14" in lines[1]
    assert "Normal Killing" in lines[2]
    assert "Pulled" not in result.text


def test_rollout_history_lists_revisions_with_images_and_change_cause(kube: FakeKubeAPI, tmp_path: Path) -> None:
    args = {"namespace": "shop", "deployment": "order"}
    result = call_tool(kube_tools(kube, tmp_path), "query_rollout_history", args)
    lines = result.text.splitlines()
    assert lines[1].startswith("rev 2 (current) 2026-11-28T15:40:00Z")
    assert "change-cause: raise heap to 1.5g" in lines[1] and "ready 1/2" in lines[1]
    assert "rev 1 " in lines[2] and "registry/order:v2.8.0" in lines[2]


def test_a_namespace_outside_the_allowlist_is_refused_before_any_request(kube: FakeKubeAPI, tmp_path: Path) -> None:
    result = call_tool(kube_tools(kube, tmp_path), "query_pods", {"namespace": "prod"})
    assert result.status == "error"
    assert "unknown namespace 'prod'" in result.text and "shop, kube-system" in result.text
    assert kube.requests == []


def test_rbac_denial_reaches_the_model_in_the_api_servers_words(kube: FakeKubeAPI, tmp_path: Path) -> None:
    result = call_tool(kube_tools(kube, tmp_path), "query_pods", {"namespace": "kube-system"})
    assert result.status == "error"
    assert "403 Forbidden" in result.text and 'cannot list resource "pods"' in result.text


def test_unknown_deployment_and_bad_names_are_observations(kube: FakeKubeAPI, tmp_path: Path) -> None:
    box = kube_tools(kube, tmp_path)
    missing = call_tool(box, "query_rollout_history", {"namespace": "shop", "deployment": "nope"})
    assert "404" in missing.text and 'deployments.apps "nope" not found' in missing.text
    injected = call_tool(box, "query_pods", {"namespace": "shop", "service": "order,app!=x"})
    assert injected.status == "error" and "invalid service name" in injected.text


def test_throttling_after_the_clients_own_retries_is_an_error_with_retry_after(
    kube: FakeKubeAPI, tmp_path: Path
) -> None:
    box = kube_tools(kube, tmp_path)
    kube.fail(429, times=1, retry_after=1)
    assert call_tool(box, "query_pods", {"namespace": "shop"}).status == "ok"  # the client waited and retried
    kube.fail(429, times=10, retry_after=1)
    result = call_tool(box, "query_pods", {"namespace": "shop"})
    assert result.status == "error" and "429" in result.text and "retry after 1 s" in result.text


def test_a_wrong_token_and_an_unreachable_server_are_errors(kube: FakeKubeAPI, tmp_path: Path) -> None:
    api = config.new_client_from_config(config_file=str(kube.write_kubeconfig(tmp_path / "kc", token="stale")))
    stale = Toolbox(KubernetesTools(api, ["shop"]).specs())
    assert "401 Unauthorized" in call_tool(stale, "query_pods", {"namespace": "shop"}).text
    (tmp_path / "down").write_text((tmp_path / "kc").read_text().replace(kube.url, closed_port_url()))
    down = Toolbox(
        KubernetesTools(
            config.new_client_from_config(config_file=str(tmp_path / "down")), ["shop"], timeout_s=2
        ).specs()
    )
    result = call_tool(down, "query_pods", {"namespace": "shop"})
    assert result.status == "error" and "unreachable" in result.text


def test_check_is_ok_warn_or_fail_by_what_the_role_allows(kube: FakeKubeAPI, tmp_path: Path) -> None:
    api = config.new_client_from_config(config_file=str(kube.write_kubeconfig(tmp_path / "kc")))

    def status(namespaces: list[str]) -> tuple[str, str]:
        tools = KubernetesTools(api, namespaces)
        s = Toolset("kubernetes", True, tools.specs, tools.check).check()
        return s.state, s.detail

    assert status(["shop"]) == ("ok", "pods readable in 1 namespace(s): shop")
    state, detail = status(["shop", "kube-system"])
    assert state == "warn" and "1 of 2" in detail
    assert status(["kube-system"])[0] == "fail"


def test_deploy_records_and_diffs_come_from_rollout_history(kube: FakeKubeAPI, tmp_path: Path) -> None:
    api = config.new_client_from_config(config_file=str(kube.write_kubeconfig(tmp_path / "kc")))
    box = Toolbox(DeployTools(KubernetesDeploys(api, ["shop"]), clock=lambda: NOW).specs())
    records = call_tool(box, "query_deploy_records", {"service": "order", "range": "7d"})
    assert "order/rev2 (from rev1)" in records.text and "raise heap to 1.5g" in records.text
    diff = call_tool(box, "query_deploy_diff", {"service": "order", "version": "rev2"})
    assert '-     "value": "-Xmx512m"' in diff.text and '+     "value": "-Xmx1536m"' in diff.text
    unknown = call_tool(box, "query_deploy_diff", {"service": "order", "version": "rev9"})
    assert unknown.status == "error" and "rev2" in unknown.text


def test_a_rollouts_environment_is_its_namespace_and_the_filter_applies(kube: FakeKubeAPI, tmp_path: Path) -> None:
    api = config.new_client_from_config(config_file=str(kube.write_kubeconfig(tmp_path / "kc")))
    week = (NOW - timedelta(days=7), NOW)
    records = KubernetesDeploys(api, ["shop"]).records("order", *week)
    assert records and {r.environment for r in records} == {"shop"}
    elsewhere = FilteredDeploys(KubernetesDeploys(api, ["shop"]), DeployFilter(("production",))).read("order", *week)
    assert elsewhere.records == ()
    [note] = elsewhere.notes
    assert note.startswith(f"left out {len(records)} deploy") and "order/rev2 in shop" in note
