"""Rollouts as they happen: deploy records carry when a rollout started and finished, and rollbacks and restarts,
where the source records them (Argo CD's history, a Kubernetes Deployment's ReplicaSets, a deploy index's fields),
and query_deploy_records says so: "rolled out 14:02 → 14:09 (7 min)", "rolled back at 14:20"."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from bot import wiring
from tests.fakes.argocd import FakeArgoCD
from tests.tools.conftest import tool_settings
from tools.base import call_tool
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
