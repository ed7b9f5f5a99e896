"""deploys.source picks a deploy source from the registry in tools/deploys/, read through the environment and
status filters; the registry and the setting name the same sources."""

from __future__ import annotations

import typing

import pytest

from bot import wiring
from bot.config import DeploysSettings
from tests.tools.conftest import tool_settings
from tools.deploys.argocd import ArgoCDDeploys
from tools.deploys.elastic import ElasticsearchDeploys
from tools.deploys.filters import FilteredDeploys
from tools.deploys.git import GitDeploys
from tools.deploys.github import GitHubDeploys
from tools.deploys.registry import SOURCES, Connections, build_deploy_source


def test_the_registry_and_the_setting_name_the_same_sources() -> None:

    assert set(SOURCES) == set(typing.get_args(DeploysSettings.model_fields["source"].annotation))


@pytest.mark.parametrize(
    ("deploys", "kind"),
    [
        ({"source": "git", "service_path": "envs/{env}/{service}", "tag_pattern": ""}, GitDeploys),
        ({"source": "index", "index": "cd-events", "environment_field": "env"}, ElasticsearchDeploys),
        ({"source": "github", "github": {"repos": {"order": "acme/order"}, "token": "t"}}, GitHubDeploys),
        (
            {"source": "argocd", "argocd": {"url": "http://127.0.0.1:9", "app_pattern": "{service}-{env}"}},
            ArgoCDDeploys,
        ),
    ],
)
def test_each_source_is_built_from_its_settings_behind_the_filters(deploys: dict[str, object], kind: type) -> None:
    settings = tool_settings(elasticsearch={"url": "http://127.0.0.1:9"}, deploys={**deploys, "environments": ["prod"]})
    source = wiring.build_deploy_source(settings)
    assert isinstance(source, FilteredDeploys) and isinstance(source.inner, kind)
    assert source.keep.environments == ("prod",) and "failure" in source.keep.excluded_statuses


def test_the_old_setting_names_still_read() -> None:
    assert DeploysSettings.model_validate({"backend": "elasticsearch"}).source == "index"
    assert DeploysSettings.model_validate({"backend": "kubernetes"}).source == "kubernetes"


def test_a_source_the_registry_does_not_have_is_refused() -> None:
    never = Connections(elasticsearch=lambda: None, kubernetes=lambda: None)
    with pytest.raises(ValueError, match=r"deploys\.source 'svn' is not one of git, index, github, argocd, kubernetes"):
        build_deploy_source({"source": "svn"}, never)


def test_the_old_and_the_new_name_may_not_disagree() -> None:
    with pytest.raises(ValueError, match="disagrees with source 'git'"):
        DeploysSettings.model_validate({"backend": "kubernetes", "source": "git"})
    assert DeploysSettings.model_validate({"backend": "elasticsearch", "source": "index"}).source == "index"
