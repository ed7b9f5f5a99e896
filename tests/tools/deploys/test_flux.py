"""A Flux repository: each cluster folder's kustomization sets `images: newTag`, and a shared `base/` folder changes
every environment of a service at once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.tools.deploys.repos import flux_kustomize
from tools.deploys.discovery import discover_deploys
from tools.deploys.git import GitDeploys
from tools.deploys.query import DeployTools
from tools.results import diff_of

INCIDENT = datetime(2026, 11, 28, 15, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def flux(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    repo = tmp_path_factory.mktemp("flux") / "fleet"
    return repo, flux_kustomize(repo, INCIDENT)


def test_discovery_finds_the_cluster_folders_and_the_shared_base(flux):
    repo, _ = flux
    found = discover_deploys(git_repo=repo)
    assert found.settings["service_path"] == "clusters/{env}/{service}, base/{service}"
    assert found.settings["tag_pattern"] == "" and found.settings["environments"] == ["prod"]
    layout = next(f for f in found.findings if f.setting == "deploys.service_path")
    assert "2 services (checkout, order) in environments prod, staging" in layout.evidence


def test_the_version_is_the_kustomization_new_tag(flux):
    repo, _shas = flux
    source = GitDeploys(repo, "", "clusters/{env}/{service}, base/{service}")
    records = source.read("checkout", INCIDENT - timedelta(hours=1), INCIDENT).records
    assert [(r.version, r.previous_version, r.environment, r.author) for r in records] == [
        ("1.1.0", "1.0.0", "prod", "flux-image-automation")
    ]
    diff = DeployTools(source, clock=lambda: INCIDENT).query_deploy_diff("1.1.0", "checkout")
    assert "images[registry.example.internal/checkout].newTag: 1.0.0 → 1.1.0" in diff.text


def test_a_base_change_is_a_deploy_of_the_service_in_every_environment(flux):
    repo, shas = flux
    source = GitDeploys(repo, "", "clusters/{env}/{service}, base/{service}")
    [base] = source.read("order", INCIDENT - timedelta(hours=1), INCIDENT).records
    assert (base.version, base.environment, base.files) == (
        f"config@{shas['base'][:7]}",
        "",
        ("base/order/deployment.yaml",),
    )
    report = diff_of(DeployTools(source, clock=lambda: INCIDENT).query_deploy_diff(base.version, "order"))
    assert report is not None and [(c.key, c.old, c.new) for c in report.key_changes] == [
        ("spec.replicas", "(absent)", "2")
    ]
