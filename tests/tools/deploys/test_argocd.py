"""Deploy records from Argo CD's application history, read from a stand-in that speaks its API over real HTTP; the
apps follow the app-of-apps repository of tests/tools/deploys/repos.py, which is also the clone diffs are read from."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot import wiring
from tests.fakes.argocd import FakeArgoCD
from tests.tools.conftest import tool_settings
from tests.tools.deploys.repos import argo_app_of_apps
from tools.base import Toolbox, call_tool
from tools.results import deploys_of, diff_of

INCIDENT = datetime(2026, 11, 28, 15, 0, tzinfo=UTC)
TOKEN = "argocd-test-token"


@pytest.fixture(scope="module")
def argo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeArgoCD, Path, dict[str, str]]]:
    repo = tmp_path_factory.mktemp("argocd") / "deploys"
    shas = argo_app_of_apps(repo, INCIDENT)
    fake = FakeArgoCD(TOKEN)
    for service in ("order", "payment"):
        for env in ("prod", "staging"):
            fake.add_app(f"{service}-{env}", project=env, namespace=env, path=f"envs/{env}/{service}")
            fake.sync(f"{service}-{env}", shas["bootstrap"], INCIDENT - timedelta(days=3, minutes=-2))
    fake.sync("order-prod", shas["order-1.5.0"], INCIDENT - timedelta(minutes=178), who="li.wei")
    fake.sync("order-staging", shas["staging-rc"], INCIDENT - timedelta(minutes=58))
    fake.sync("order-prod", shas["pool"], INCIDENT - timedelta(minutes=10))
    fake.sync("payment-prod", shas["payment"], INCIDENT - timedelta(minutes=3))
    with fake:
        yield fake, repo, shas


def toolbox(url: str, token: str = TOKEN, **argocd: Any) -> Toolbox:
    options = {"url": url, "token": token, "app_pattern": "{service}-{env}", "timeout_s": 2.0, **argocd}
    settings = tool_settings(deploys={"source": "argocd", "argocd": options})
    return wiring.build_toolbox(settings, clock=lambda: INCIDENT)


def test_history_entries_are_deploys_versioned_from_the_clone(argo) -> None:
    fake, repo, shas = argo
    result = call_tool(toolbox(fake.url, git_repo=str(repo)), "query_deploy_records", {"service": "*", "range": "6h"})
    found = deploys_of(result)
    assert result.status == "ok" and found is not None, result.text
    assert [(r.service, r.version, r.previous_version, r.environment, r.status) for r in found.records] == [
        ("payment", "v2.1.0", "v2.0.0", "prod", "Succeeded"),
        ("order", f"config@{shas['pool'][:7]}", "v1.5.0", "prod", "Succeeded"),
        ("order", "v1.6.0-rc1", "v1.4.0", "staging", "Succeeded"),
        ("order", "v1.5.0", "v1.4.0", "prod", "Succeeded"),
    ]
    assert found.records[3].author == "li.wei" and found.records[2].author == "automated sync"
    assert found.records[1].commit == shas["pool"]


def test_the_diff_of_a_sync_is_read_from_the_clone_with_full_key_paths(argo) -> None:
    fake, repo, shas = argo
    box = toolbox(fake.url, git_repo=str(repo))
    report = diff_of(call_tool(box, "query_deploy_diff", {"version": f"config@{shas['pool'][:7]}", "service": "order"}))
    assert report is not None and report.whole_files
    assert [(c.key, c.old, c.new) for c in report.key_changes] == [
        ("config.spring.datasource.hikari.maximum-pool-size", "20", "4")
    ]
    assert report.record.files == ("envs/prod/order/values.yaml",)


def test_without_a_clone_the_version_is_the_revision_and_the_diff_names_both(argo) -> None:
    fake, _, shas = argo
    box = toolbox(fake.url)
    found = deploys_of(call_tool(box, "query_deploy_records", {"service": "order", "range": "30m"}))
    assert found is not None and [r.version for r in found.records] == [shas["pool"][:7]]
    result = call_tool(box, "query_deploy_diff", {"version": shas["pool"][:7], "service": "order"})
    assert result.status == "ok" and diff_of(result) is not None
    assert f"order-prod went from revision {shas['order-1.5.0'][:12]} to {shas['pool'][:12]}" in result.text
    assert "a clone of that repository is not configured (deploys.argocd.git_repo)" in result.text


def test_the_environment_comes_from_the_destination_when_the_name_has_none(argo) -> None:
    fake, repo, _ = argo
    box = toolbox(fake.url, git_repo=str(repo), app_pattern="{service}-staging", environment_from="namespace")
    found = deploys_of(call_tool(box, "query_deploy_records", {"service": "order", "range": "6h"}))
    assert found is not None and [(r.version, r.environment) for r in found.records] == [("v1.6.0-rc1", "staging")]


def test_a_failed_last_sync_is_left_out_and_named(argo, tmp_path: Path) -> None:
    fake, _repo, shas = argo
    fake.fail_sync("payment-staging", shas["payment"], INCIDENT - timedelta(minutes=2), who="ann")
    try:
        result = call_tool(toolbox(fake.url), "query_deploy_records", {"service": "payment", "range": "1h"})
    finally:
        fake.sync("payment-staging", shas["bootstrap"], INCIDENT - timedelta(days=2))  # back to a clean last operation
    found = deploys_of(result)
    assert found is not None and [r.environment for r in found.records] == ["prod"]
    assert f"left out 1 deploy that did not succeed (payment/{shas['payment'][:7]} Failed)" in result.text


def test_a_wrong_token_is_argo_cds_own_answer_naming_the_setting(argo) -> None:
    fake, _, _ = argo
    result = call_tool(toolbox(fake.url, token="stale"), "query_deploy_records", {"service": "*"})
    assert result.status == "error" and "Argo CD answered HTTP 401" in result.text
    assert "invalid session" in result.text and "check deploys.argocd.token" in result.text
    assert all(r.authorization in (f"Bearer {TOKEN}", "Bearer stale") for r in fake.requests)


def test_an_app_that_does_not_exist_is_a_failed_check(argo) -> None:
    fake, _, _ = argo
    settings = tool_settings(
        deploys={
            "source": "argocd",
            "argocd": {
                "url": fake.url,
                "token": TOKEN,
                "app_pattern": "{service}-{env}",
                "apps": ["order-prod", "ordr-prod"],
            },
        }
    )
    [check] = wiring.build_deploy_source(settings).check()
    assert check.ok  # the names match the pattern ...
    result = call_tool(wiring.build_toolbox(settings, clock=lambda: INCIDENT), "query_deploy_records", {"service": "*"})
    assert result.status == "error" and "HTTP 403" in result.text and "permission denied" in result.text


def test_gateway_errors_are_retried_once_and_slow_replies_time_out(argo) -> None:
    fake, _, _ = argo
    fake.fail_next(503, body={"error": "upstream connect error"})
    assert call_tool(toolbox(fake.url), "query_deploy_records", {"service": "order", "range": "1h"}).status == "ok"
    fake.fail_next(0, delay_s=3.0)
    result = call_tool(toolbox(fake.url), "query_deploy_records", {"service": "order", "range": "1h"})
    assert result.status == "error" and "Argo CD did not answer within 2 s" in result.text
