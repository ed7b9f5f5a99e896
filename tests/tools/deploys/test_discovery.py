"""Deploy discovery for `opsbot init` (settings with their evidence) and the deploy checks `opsbot doctor` runs
(each service yields deploys; a pattern that matches nothing is named, with what would match)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot import wiring
from tests.tools.conftest import tool_settings
from tests.tools.deploys.repos import argo_app_of_apps, commit, git, init
from tools.deploys.discovery import check_deploys, discover_deploys
from tools.deploys.query import Finding

INCIDENT = datetime(2026, 11, 28, 15, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def argo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("discovery") / "deploys"
    argo_app_of_apps(repo, INCIDENT)
    return repo


@pytest.fixture(scope="module")
def tagged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """services/<svc>/ folders with `<svc>-<version>` tags, two annotated and one lightweight."""
    repo = init(tmp_path_factory.mktemp("tagged") / "deploys")
    for i, (service, version) in enumerate([("order", "v1.0.0"), ("payment", "2.3.0"), ("order", "v1.1.0")]):
        at = INCIDENT - timedelta(hours=10 - i)
        commit(repo, {f"services/{service}/app.yaml": f"image: registry/{service}:{version}\n"}, service, at)
        if i < 2:
            git(repo, "tag", "-a", f"{service}-{version}", "-m", "release", at=at)
        else:
            git(repo, "tag", f"{service}-{version}", at=at)
    git(repo, "tag", "nightly", at=INCIDENT)
    return repo


def check(repo: Path, services: list[str], **deploys: object) -> list[Finding]:
    settings = tool_settings(deploys={"git_repo": str(repo), **deploys})
    return check_deploys(wiring.build_deploy_source(settings), services, INCIDENT)


def failing(findings: list[Finding]) -> list[tuple[str, str, str]]:
    return [(f.setting, f.value, f.suggestion) for f in findings if not f.ok]


def test_an_argo_cd_repository_without_tags_gives_its_layout_environments_and_versions(argo: Path) -> None:
    found = discover_deploys(git_repo=argo)
    assert found.settings == {
        "source": "git",
        "git_repo": str(argo),
        "service_path": "envs/{env}/{service}",
        "environments": ["prod"],
        "tag_pattern": "",
    }
    evidence = {f.setting: f.evidence for f in found.findings}
    assert evidence["deploys.service_path"] == "3 services (inventory, order, payment) in environments prod, staging"
    assert "1 change configuration only (version config@<sha>)" in evidence["deploys.versions"]
    assert "1 commits touch no service folder" in evidence["deploys.versions"]
    assert evidence["deploys.environments"] == "environments in folders: prod (3 services), staging (3 services)"
    assert evidence["deploys.tag_pattern"] == "the repository has no tags: deploys are commits"
    assert found.missing == ()


def test_a_tagged_repository_gives_its_tag_scheme_annotated_and_lightweight(tagged: Path) -> None:
    found = discover_deploys(git_repo=tagged)
    assert found.settings["tag_pattern"] == "{service}-{version}"
    assert found.settings["service_path"] == "services/{service}"
    tags = next(f for f in found.findings if f.setting == "deploys.tag_pattern")
    assert tags.evidence == "3 of 4 tags match (1 lightweight, 2 annotated): order/v1.1.0, payment/2.3.0, order/v1.0.0"


def test_a_configured_source_that_fits_checks_ok_for_every_service(argo: Path) -> None:
    findings = check(argo, ["order", "payment"], service_path="envs/{env}/{service}", tag_pattern="")
    assert failing(findings) == []
    order = next(f for f in findings if f.value == "order")
    assert order.setting == "deploys.service_path" and order.evidence.startswith("4 versions, newest config@")


def test_a_deploy_path_that_matches_nothing_is_named_with_the_layout_that_would(argo: Path) -> None:
    findings = check(argo, ["order"], service_path="env/{env}/{service}", tag_pattern="")
    assert ("deploys.service_path", "env/{env}/{service}", "envs/{env}/{service}") in failing(findings)
    layout = next(f for f in findings if f.setting == "deploys.service_path" and not f.ok)
    assert f"matches no folder in {argo}" in layout.evidence
    assert ("deploys.service_path", "order", "") in failing(findings)  # and order then has no deploys


def test_a_service_the_source_does_not_know_gets_a_did_you_mean(argo: Path) -> None:
    findings = check(argo, ["inventry"], service_path="envs/{env}/{service}", tag_pattern="")
    assert failing(findings) == [("deploys.service_path", "inventry", "inventory")]


def test_a_tag_pattern_that_matches_none_of_the_tags_suggests_one_that_does(tagged: Path) -> None:
    findings = check(tagged, ["order"], tag_pattern="{service}/{version}")
    [(_setting, value, suggestion)] = [f for f in failing(findings) if f[0] == "deploys.tag_pattern"]
    assert (value, suggestion) == ("{service}/{version}", "{service}-{version}")
    assert "matches none of the 4 tags" in next(f.evidence for f in findings if f.setting == "deploys.tag_pattern")


def test_a_repository_that_is_not_there_is_named(tmp_path: Path) -> None:
    findings = check(tmp_path / "gone", ["order"])
    assert failing(findings)[0][:2] == ("deploys.git_repo", str(tmp_path / "gone"))
    assert discover_deploys(git_repo=tmp_path / "gone").settings == {}


def test_nothing_to_inspect_is_said() -> None:
    assert discover_deploys().missing == ("no deploy source given: name a repository (--deploys-git) or an index",)
