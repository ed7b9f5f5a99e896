"""The code behind a version: query_deploy_diff on an image bump shows the application's commits between the two
tags, read from a real git clone (the sandbox's application repository, a team's per-service clone) or from the
GitHub stand-in's compare API over a real repository."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot import wiring
from bot.sandbox.apprepo import REF_PATTERN, build_app_repo
from bot.sandbox.deployrepo import build_deploy_repo
from bot.sandbox.scenario import load_scenario
from tests.fakes.github import FakeGitHub
from tests.tools.conftest import tool_settings
from tests.tools.deploys.repos import commit, git, init
from tools.base import ToolError, call_tool
from tools.deploys.appcode import RefPattern
from tools.deploys.records import DiffReport, code_commits, commits_mentioning
from tools.results import diff_of

NOW = datetime(2026, 11, 28, 15, 0, tzinfo=UTC)
TOKEN = "ghp_test"


@pytest.fixture(scope="module")
def sandbox_repos(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The deploy repository and the application repository of a scenario whose cause is a code change."""
    folder = tmp_path_factory.mktemp("code")
    scenario = load_scenario("memory-leak-oom")
    build_deploy_repo(scenario, folder / "deploys", NOW)
    build_app_repo(scenario, folder / "apps.git", NOW)
    return folder / "deploys", folder / "apps.git"


def kustomization(tag: str) -> str:
    return f"resources:\n  - deployment.yaml\nimages:\n  - name: registry.example.internal/order\n    newTag: {tag}\n"


@pytest.fixture(scope="module")
def team_repos(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A deploy repository tagging order 1.4.0 → 1.5.0 and order's own clone with tags v1.4.0 and v1.5.0, twelve
    commits apart, each touching five files."""
    folder = tmp_path_factory.mktemp("team")
    app = init(folder / "order-service")
    commit(app, {"src/Main.java": "class Main {}\n"}, "initial", NOW - timedelta(days=9))
    git(app, "tag", "v1.4.0")
    for i in range(12):
        files = {f"src/pkg{i}/F{k}.java": f"class F{k} {{ int v = {i}; }}\n" for k in range(5)}
        commit(app, files, f"change {i}", NOW - timedelta(days=8, minutes=-i), who=f"dev{i % 3}")
    git(app, "tag", "v1.5.0")
    deploys = init(folder / "deploys")
    commit(
        deploys, {"services/order/kustomization.yaml": kustomization("1.4.0")}, "order 1.4.0", NOW - timedelta(days=3)
    )
    git(deploys, "tag", "-a", "order/1.4.0", "-m", "1.4.0", at=NOW - timedelta(days=3))
    at = NOW - timedelta(hours=1)
    commit(deploys, {"services/order/kustomization.yaml": kustomization("1.5.0")}, "order 1.5.0", at)
    git(deploys, "tag", "-a", "order/1.5.0", "-m", "1.5.0", at=at)
    commit(deploys, {"services/order/values.yaml": "pool: 4\n"}, "order: shrink the pool", NOW - timedelta(minutes=30))
    git(deploys, "tag", "-a", "order/config-1", "-m", "pool", at=NOW - timedelta(minutes=30))
    return deploys, app


def diff(deploy_repo: Path, version: str, service: str = "order", **code: Any) -> Any:
    settings = tool_settings(git_repo=deploy_repo, deploys={"code": code} if code else {})
    result = call_tool(
        wiring.build_toolbox(settings, clock=lambda: NOW), "query_deploy_diff", {"service": service, "version": version}
    )
    assert result.status == "ok", result.text
    return result


def report(result: Any) -> DiffReport:
    found = diff_of(result)
    assert found is not None, result.text
    return found


def test_an_image_bump_shows_the_scenarios_code_change_with_author_and_files(sandbox_repos) -> None:
    deploys, apps = sandbox_repos
    result = diff(deploys, "v3.1.0", "cart", source="git", repo_pattern=str(apps), ref_pattern=REF_PATTERN)
    commits = code_commits(report(result))
    assert [c.subject for c in commits] == [
        "SessionCache: drop expireAfterWrite, sessions are invalidated on logout",
        "Keep sessions in a local cache to cut cart-cache round trips",
    ]
    assert commits[0].author == "jin.park"
    assert commits[0].files == ("src/main/java/com/shop/cart/session/SessionCache.java",)
    assert f"code from v3.0.4 to v3.1.0 (git {apps.name})" in result.text
    assert str(apps.parent) not in result.text  # a local path (here the sandbox's folder) is never shown
    assert "jin.park: SessionCache: drop expireAfterWrite" in result.text


def test_without_a_code_source_the_diff_has_no_commits(sandbox_repos) -> None:
    result = diff(sandbox_repos[0], "v3.1.0", "cart")
    assert report(result).code is None
    assert "code from" not in result.text


def test_the_newest_commits_are_shown_and_what_was_left_out_is_said(team_repos) -> None:
    deploys, app = team_repos
    result = diff(
        deploys, "1.5.0", source="git", repos={"order": str(app)}, ref_pattern="v{version}", max_commits=3, max_files=2
    )
    code = report(result).code
    assert code is not None and code.total == 12
    assert [c.subject for c in code.commits] == ["change 11", "change 10", "change 9"]
    assert all(len(c.files) == 2 and c.files_total == 5 for c in code.commits)
    assert "12 commits, newest first" in result.text
    assert "+3 more" in result.text
    assert "9 older commits not shown" in result.text


def test_a_configuration_only_deploy_reads_no_code(team_repos) -> None:
    deploys, app = team_repos
    result = diff(deploys, "config-1", source="git", repos={"order": str(app)}, ref_pattern="v{version}")
    assert report(result).code is None


def test_a_version_the_clone_lacks_is_said_and_the_diff_still_shown(team_repos) -> None:
    deploys, app = team_repos
    result = diff(deploys, "1.5.0", source="git", repos={"order": str(app)}, ref_pattern="release-{version}")
    code = report(result).code
    assert code is not None and not code.commits
    assert "no 'release-1.4.0' for version 1.4.0" in code.error
    assert "could not be read" in result.text
    assert "newTag: 1.4.0 → 1.5.0" in result.text


def test_a_service_without_a_repository_is_said(team_repos) -> None:
    result = diff(team_repos[0], "1.5.0", source="git", repos={"payment": "/nonexistent"})
    code = report(result).code
    assert code is not None and code.error == "no application repository is configured for order"


def test_a_ref_pattern_maps_versions_to_tags_or_to_the_sha_inside_them() -> None:
    assert RefPattern("v{version}").ref("order", "1.4.0") == "v1.4.0"
    assert RefPattern("{sha}").ref("order", "sha-3f2a9c1") == "3f2a9c1"
    assert RefPattern("{service}/{version}").ref("order", "v2.0.0") == "order/v2.0.0"
    with pytest.raises(ToolError, match="holds no commit id"):
        RefPattern("{sha}").ref("order", "v1.4.0")
    with pytest.raises(ToolError, match="not a ref"):
        RefPattern("{version}").ref("order", "-upload-pack")


@pytest.fixture(scope="module")
def github(team_repos) -> Iterator[FakeGitHub]:
    fake = FakeGitHub(TOKEN)
    fake.add_repo("acme/order-service", team_repos[1])
    with fake:
        yield fake


def test_the_code_comes_from_githubs_compare_api_with_each_commits_files(team_repos, github: FakeGitHub) -> None:
    gh = {"api_url": github.url, "token": TOKEN, "timeout_s": 2.0}
    settings = tool_settings(
        git_repo=team_repos[0],
        deploys={
            "github": gh,
            "code": {
                "source": "github",
                "repo_pattern": "acme/{service}-service",
                "ref_pattern": "v{version}",
                "max_commits": 2,
            },
        },
    )
    result = call_tool(
        wiring.build_toolbox(settings, clock=lambda: NOW), "query_deploy_diff", {"service": "order", "version": "1.5.0"}
    )
    code = report(result).code
    assert code is not None and code.error == "", result.text
    assert code.total == 12 and [c.subject for c in code.commits] == ["change 11", "change 10"]
    assert code.commits[0].author == "dev2" and code.commits[0].files_total == 5
    assert "GitHub acme/order-service" in result.text
    seen = [r.path for r in github.requests]
    assert "/repos/acme/order-service/compare/v1.4.0...v1.5.0" in seen
    assert sum(p.startswith("/repos/acme/order-service/commits/") for p in seen) == 2  # the shown commits only
    assert all(r.authorization == f"Bearer {TOKEN}" for r in github.requests)


def test_the_commits_naming_the_evidence_are_picked_out_for_the_playbook(sandbox_repos) -> None:
    deploys, apps = sandbox_repos
    found = report(diff(deploys, "v3.1.0", "cart", source="git", repo_pattern=str(apps), ref_pattern=REF_PATTERN))
    [hit] = commits_mentioning(found, ["OutOfMemoryError", "SessionCache", "at"])
    assert hit.subject.startswith("SessionCache: drop expireAfterWrite")
    assert commits_mentioning(found, ["expireAfterWrite"]) == (hit,)
    assert commits_mentioning(found, ["payment", "the"]) == ()
