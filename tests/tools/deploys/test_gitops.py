"""A GitOps repository without tags, as an Argo CD app-of-apps team keeps it: every commit that touches
`envs/<env>/<service>/` is a deploy, versioned by the image tag it sets, else `config@<sha>`; the planted incident is a
config-only commit that shrinks order's DB pool 20 → 4, far below `spring:` in values.yaml."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot import wiring
from tests.tools.conftest import tool_settings
from tests.tools.deploys.repos import argo_app_of_apps, commit, git
from tools.base import Toolbox, call_tool
from tools.deploys.git import GitDeploys
from tools.deploys.query import DeployTools
from tools.results import deploys_of, diff_of

INCIDENT = datetime(2026, 11, 28, 15, 0, tzinfo=UTC)
LAYOUT = "envs/{env}/{service}"


@pytest.fixture(scope="module")
def argo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    repo = tmp_path_factory.mktemp("argo") / "deploys"
    return repo, argo_app_of_apps(repo, INCIDENT)


def toolbox(repo: Path, **deploys: object) -> Toolbox:
    """The deploy tools as wiring builds them from settings (the registry, the filters)."""
    settings = tool_settings(deploys={"git_repo": str(repo), "service_path": LAYOUT, **deploys})
    return Toolbox(DeployTools(wiring.build_deploy_source(settings), clock=lambda: INCIDENT).specs())


def test_every_commit_to_a_service_folder_is_a_deploy_versioned_by_its_image_tag_or_config(argo):
    repo, shas = argo
    result = call_tool(toolbox(repo), "query_deploy_records", {"service": "*", "range": "6h"})
    found = deploys_of(result)
    assert result.status == "ok" and found is not None
    assert [(r.service, r.version, r.previous_version, r.environment) for r in found.records] == [
        ("payment", "v2.1.0", "v2.0.0", "prod"),
        ("order", f"config@{shas['pool'][:7]}", "v1.5.0", "prod"),
        ("order", "v1.6.0-rc1", "v1.4.0", "staging"),
        ("order", "v1.5.0", "v1.4.0", "prod"),
    ]
    pool = found.records[1]
    assert (pool.author, pool.summary, pool.commit) == ("bo", "order: tune DB pool", shas["pool"])
    assert pool.files == ("envs/prod/order/values.yaml",)
    assert f"order/config@{shas['pool'][:7]} (from v1.5.0) by bo" in result.text


def test_commits_outside_every_service_folder_are_reported_not_dropped(argo):
    repo, shas = argo
    text = call_tool(toolbox(repo), "query_deploy_records", {"service": "*", "range": "6h"}).text
    assert "not a deploy of any service: 1 commit in this window touches no service folder" in text
    assert f"{shas['readme'][:7]} 'docs: release process' (README.md)" in text
    assert "no tag matches tag_pattern '{service}/{version}'" in text  # the default pattern, said to match nothing


def test_the_config_only_diff_names_the_pool_with_its_full_yaml_path(argo):
    repo, shas = argo
    version = f"config@{shas['pool'][:7]}"
    result = call_tool(toolbox(repo), "query_deploy_diff", {"version": version, "service": "order"})
    report = diff_of(result)
    assert result.status == "ok" and report is not None and report.whole_files
    [change] = report.key_changes
    assert (change.key, change.old, change.new) == ("config.spring.datasource.hikari.maximum-pool-size", "20", "4")
    assert change.path == "envs/prod/order/values.yaml"
    # the hunk alone starts below `spring:`: its enclosing line is `config:`, so the hunk reads a shorter key
    assert "@@ -21,7 +21,7 @@ config:" in result.text
    assert "config.spring.datasource.hikari.maximum-pool-size: 20 → 4 (envs/prod/order/values.yaml)" in result.text


def test_an_image_release_diff_names_the_tag(argo):
    repo, _ = argo
    report = diff_of(call_tool(toolbox(repo), "query_deploy_diff", {"version": "v1.5.0", "service": "order"}))
    assert report is not None and report.record.environment == "prod"
    assert [(c.key, c.old, c.new) for c in report.key_changes] == [("image.tag", "v1.4.0", "v1.5.0")]


def test_environment_filter_leaves_out_the_staging_release_candidate_and_says_so(argo):
    repo, _ = argo
    box = toolbox(repo, environments=["prod"])
    result = call_tool(box, "query_deploy_records", {"service": "order", "range": "6h"})
    found = deploys_of(result)
    assert found is not None and [r.version for r in found.records][-1] == "v1.5.0"
    assert all(r.environment == "prod" for r in found.records)
    assert "left out 1 deploy outside prod (order/v1.6.0-rc1 in staging): not suspects there" in result.text


def test_a_version_deployed_to_two_environments_diffs_the_filtered_one_first(tmp_path: Path):
    repo = tmp_path / "promote"
    argo_app_of_apps(repo, INCIDENT)
    values = (repo / "envs/staging/order/values.yaml").read_text()
    commit(repo, {"envs/prod/order/values.yaml": values}, "promote rc to prod", INCIDENT + timedelta(minutes=1))
    report = diff_of(
        call_tool(
            toolbox(repo, environments=["prod"]), "query_deploy_diff", {"version": "v1.6.0-rc1", "service": "order"}
        )
    )
    assert report is not None and report.record.environment == "prod"
    staging = diff_of(
        call_tool(
            toolbox(repo, environments=["staging"]), "query_deploy_diff", {"version": "v1.6.0-rc1", "service": "order"}
        )
    )
    assert staging is not None and staging.record.environment == "staging"


def test_services_are_the_folders_on_the_branch_and_versions_read_newest_first(argo):
    repo, shas = argo
    source = GitDeploys(repo, "", LAYOUT)
    assert source.services() == ["inventory", "order", "payment"]
    assert source.versions("order") == [f"config@{shas['pool'][:7]}", "v1.6.0-rc1", "v1.5.0", "v1.4.0"]


def test_an_empty_tag_pattern_reads_commits_without_a_note(argo):
    repo, _ = argo
    found = GitDeploys(repo, "", LAYOUT).read(None, INCIDENT - timedelta(hours=6), INCIDENT)
    assert len(found.records) == 4 and not any("tag_pattern" in n for n in found.notes)


def test_a_layout_that_matches_no_folder_reports_every_commit_as_outside(argo):
    repo, _ = argo
    text = call_tool(toolbox(repo, service_path="services/{service}"), "query_deploy_records", {"service": "*"}).text
    assert "deploys of every service" in text and ": none." in text
    assert "5 commits in this window touch no service folder (services/{service})" in text


def test_a_merged_pull_request_is_one_deploy_at_its_merge(tmp_path: Path):
    repo = tmp_path / "merges"
    argo_app_of_apps(repo, INCIDENT - timedelta(hours=12))
    git(repo, "checkout", "-q", "-b", "bump")
    values = (repo / "envs/prod/payment/values.yaml").read_text().replace("v2.1.0", "v2.2.0")
    commit(repo, {"envs/prod/payment/values.yaml": values}, "payment v2.2.0", INCIDENT - timedelta(hours=2))
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "-m", "Merge pull request #7", "bump", at=INCIDENT - timedelta(minutes=30))
    found = GitDeploys(repo, "", LAYOUT).read("payment", INCIDENT - timedelta(hours=3), INCIDENT)
    assert [(r.version, r.summary, r.at) for r in found.records] == [
        ("v2.2.0", "Merge pull request #7", INCIDENT - timedelta(minutes=30))
    ]
