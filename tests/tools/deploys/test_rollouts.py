"""Rollouts as they happen: deploy records carry when a rollout started and finished, and rollbacks and restarts,
where the source records them (Argo CD's history, a Kubernetes Deployment's ReplicaSets, a deploy index's fields),
and query_deploy_records says so: "rolled out 14:02 → 14:09 (7 min)", "rolled back at 14:20"."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from elasticsearch import helpers
from kubernetes import config
from osmem_server import OsmemServer

from bot import wiring
from bot.wiring.elastic import es_client
from tests.fakes.argocd import FakeArgoCD
from tests.fakes.github import FakeGitHub
from tests.fakes.kubeapi import FakeKubeAPI, deployment, iso, replicaset
from tests.tools.conftest import tool_settings
from tests.tools.deploys.repos import commit, init
from tools.base import Toolbox, call_tool
from tools.deploys.kubernetes import KubernetesDeploys
from tools.deploys.query import DeployTools
from tools.deploys.records import DeployList, DeployRecord, with_rollbacks
from tools.results import deploys_of

NOW = datetime(2026, 11, 28, 15, 0, tzinfo=UTC)
TOKEN = "argocd-test-token"
GOOD, BAD = "a" * 40, "b" * 40


def at(hour: int, minute: int) -> datetime:
    return NOW.replace(hour=hour, minute=minute)


@pytest.fixture(scope="module")
def argo() -> Iterator[FakeArgoCD]:
    fake = FakeArgoCD(TOKEN)
    fake.add_app("cart", project="prod", namespace="prod", path="envs/prod/cart")
    fake.sync("cart", GOOD, at(11, 7), who="ann", started=at(11, 0))
    fake.sync("cart", BAD, at(14, 9), who="li.wei", started=at(14, 2))
    fake.rollback("cart", 0, at(14, 21), who="oncall", started=at(14, 20))
    with fake:
        yield fake


def records(fake: FakeArgoCD) -> tuple[DeployList, str]:
    options = {"url": fake.url, "token": TOKEN, "timeout_s": 2.0}
    box = wiring.build_toolbox(tool_settings(deploys={"source": "argocd", "argocd": options}), clock=lambda: NOW)
    result = call_tool(box, "query_deploy_records", {"service": "cart", "range": "6h"})
    found = deploys_of(result)
    assert result.status == "ok" and found is not None, result.text
    return found, result.text


def test_argo_cd_syncs_carry_their_start_and_finish(argo: FakeArgoCD) -> None:
    found, text = records(argo)
    bad = found.of_version(BAD[:7])
    assert bad is not None and (bad.started, bad.finished) == (at(14, 2), at(14, 9))
    assert "rolled out 14:02 → 14:09 (7 min)" in text


def test_an_argo_cd_rollback_is_named_and_the_sync_it_undid_says_when(argo: FakeArgoCD) -> None:
    found, text = records(argo)
    rollback, undone = found.records[0], found.records[1]
    assert (rollback.version, rollback.action, rollback.author) == (GOOD[:7], "rollback", "oncall")
    assert undone.version == BAD[:7] and undone.rolled_back_at == at(14, 21)
    lines = text.splitlines()
    assert f"a rollback to {GOOD[:7]}; rolled out 14:20 → 14:21 (1 min)" in lines[1]
    assert "rolled out 14:02 → 14:09 (7 min); rolled back at 14:21" in lines[2]


def record(version: str, previous: str, minute: int, environment: str = "prod") -> DeployRecord:
    return DeployRecord("order", version, at(14, minute), "ci", "s", previous_version=previous, environment=environment)


def test_a_deploy_back_to_the_version_before_is_a_rollback_in_any_source() -> None:
    back, bad, good = record("v1.4.0", "v1.5.0", 30), record("v1.5.0", "v1.4.0", 10), record("v1.4.0", "v1.3.0", 0)
    marked = with_rollbacks((back, bad, good))
    assert [r.action for r in marked] == ["rollback", "", ""]
    assert [r.rolled_back_at for r in marked] == [None, at(14, 30), None]
    # a newer version is no rollback, nor is the same step in another environment
    assert with_rollbacks((record("v1.6.0", "v1.5.0", 30), bad)) == (record("v1.6.0", "v1.5.0", 30), bad)
    staging = record("v1.4.0", "v1.5.0", 30, "staging")
    assert with_rollbacks((staging, bad))[0].action == ""


def _rs(name: str, revision: int, image: str, created: datetime, **annotations: str) -> dict[str, Any]:
    labels = {"app": name}
    found = replicaset(name, revision, labels, [{"name": name, "image": image}], created, namespace="shop")
    template = found["spec"]["template"]["metadata"]
    if "restartedAt" in annotations:
        template["annotations"] = {"kubectl.kubernetes.io/restartedAt": annotations["restartedAt"]}
    if "history" in annotations:
        found["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"] = annotations["history"]
    return found


@pytest.fixture(scope="module")
def kube() -> Iterator[FakeKubeAPI]:
    fake = FakeKubeAPI()
    order = deployment("order", {"app": "order"}, namespace="shop", revision=3, replicas=4)
    done = 'ReplicaSet "order-3d5d9c" has successfully progressed.'
    progressing = {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "message": done}
    order["status"]["conditions"] = [
        {**progressing, "lastUpdateTime": iso(at(14, 37)), "lastTransitionTime": iso(at(14, 30))}
    ]
    fake.add("shop", "deployments", order, deployment("cart", {"app": "cart"}, namespace="shop", revision=3))
    fake.add(
        "shop",
        "replicasets",
        _rs("order", 1, "registry/order:v1", at(9, 0)),
        _rs("order", 2, "registry/order:v2", at(14, 2)),
        _rs("order", 3, "registry/order:v2", at(14, 30), restartedAt=iso(at(14, 30))),
        _rs("cart", 2, "registry/cart:v2", at(13, 0)),
        _rs("cart", 3, "registry/cart:v1", at(9, 0), history="1"),  # `rollout undo`: revision 1's set, back
    )
    yield fake
    fake.stop()


def kube_records(fake: FakeKubeAPI, tmp_path: Path, service: str) -> tuple[DeployList, str]:
    api = config.new_client_from_config(config_file=str(fake.write_kubeconfig(tmp_path / "kc")))
    box = Toolbox(DeployTools(KubernetesDeploys(api, ["shop"]), clock=lambda: NOW).specs())
    result = call_tool(box, "query_deploy_records", {"service": service, "range": "1d"})
    found = deploys_of(result)
    assert result.status == "ok" and found is not None, result.text
    return found, result.text


def test_a_rollout_restart_is_named_and_the_current_revision_says_when_it_finished(kube, tmp_path: Path) -> None:
    found, text = kube_records(kube, tmp_path, "order")
    current, previous = found.records[0], found.records[1]
    assert (current.version, current.action, current.started, current.finished) == (
        "rev3",
        "restart",
        at(14, 30),
        at(14, 37),
    )
    assert "a restart; rolled out 14:30 → 14:37 (7 min)" in text
    assert previous.action == "" and previous.finished is None  # the API keeps no finish for older revisions


def test_a_rollout_undo_is_a_rollback(kube, tmp_path: Path) -> None:
    found, text = kube_records(kube, tmp_path, "cart")
    undo = found.of_version("rev3")
    assert undo is not None and undo.action == "rollback"
    assert "a rollback to rev3" in text
    assert undo.finished is None and "no finish recorded" in text  # the Deployment has not said it finished


@pytest.fixture(scope="module")
def index_url() -> Iterator[str]:
    server = OsmemServer.start(japanese=False)
    try:
        docs = [
            ("v2.8.0", "v2.7.3", at(9, 0), at(9, 0), at(9, 6), ""),
            ("v2.9.0", "v2.8.0", at(14, 2), at(14, 2), at(14, 9), ""),
            ("v2.8.0", "v2.9.0", at(14, 20), at(14, 20), None, "rollback"),  # still rolling out
        ]
        actions = [
            {
                "_index": "cd",
                "_source": {
                    "@timestamp": t.isoformat(),
                    "service": "order",
                    "version": v,
                    "previous_version": p,
                    "author": "ci",
                    "summary": f"order {v}",
                    "rollout": {"started": s.isoformat(), **({"finished": f.isoformat()} if f else {})},
                    "kind": kind,
                },
            }
            for v, p, t, s, f, kind in docs
        ]
        helpers.bulk(es_client(server.url, plain_json=True), actions, refresh=True)
        yield server.url
    finally:
        server.close()


def test_a_deploy_index_gives_rollout_times_and_rollbacks_from_its_configured_fields(index_url: str) -> None:
    fields = {"started_field": "rollout.started", "finished_field": "rollout.finished", "action_field": "kind"}
    settings = tool_settings(
        elasticsearch={"url": index_url, "plain_json": True}, deploys={"source": "index", "index": "cd", **fields}
    )
    result = call_tool(wiring.build_toolbox(settings, clock=lambda: NOW), "query_deploy_records", {"service": "order"})
    found = deploys_of(result)
    assert found is not None, result.text
    back, bad, _ = found.records
    assert (back.action, back.started, back.finished) == ("rollback", at(14, 20), None)
    assert (bad.started, bad.finished, bad.rolled_back_at) == (at(14, 2), at(14, 9), at(14, 20))
    lines = result.text.splitlines()
    assert "a rollback to v2.8.0; rollout started 14:20, no finish recorded" in lines[1]
    assert "rolled out 14:02 → 14:09 (7 min); rolled back at 14:20" in lines[2]


def test_a_github_deployments_statuses_give_its_rollout(tmp_path: Path) -> None:
    repo = init(tmp_path / "order-service")
    sha = commit(repo, {"src/Order.java": "class Order {}\n"}, "init", at(9, 0))
    fake = FakeGitHub("ghp_test")
    with fake:
        fake.add_repo("acme/order-service", repo)
        fake.deploy("acme/order-service", sha, "production", at(14, 1), ref="v1.5.0")
        fake.deployments["acme/order-service"][-1].statuses = [("in_progress", at(14, 2)), ("success", at(14, 9))]
        fake.deploy("acme/order-service", sha, "production", at(14, 30), "failure", ref="v1.5.1")
        github = {"api_url": fake.url, "token": "ghp_test", "repos": {"order": "acme/order-service"}}
        settings = tool_settings(deploys={"source": "github", "github": github, "exclude_statuses": []})
        result = call_tool(
            wiring.build_toolbox(settings, clock=lambda: NOW), "query_deploy_records", {"service": "order"}
        )
    found = deploys_of(result)
    assert found is not None, result.text
    failed, good = found.records
    assert (good.started, good.finished) == (at(14, 2), at(14, 9))
    assert (failed.status, failed.started, failed.finished) == ("failure", None, None)
    assert "rolled out 14:02 → 14:09 (7 min)" in result.text
