"""The deploys section: which source deploy records come from, its settings, and which deploys are suspects."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, model_validator

from bot.config.section import DEFAULT_STATE_DIR, Section


class GitHubDeploysSettings(Section):
    """The GitHub Deployments API (deploys.source = "github"): one repository per service."""

    api_url: str = "https://api.github.com"  # GitHub Enterprise Server: https://<host>/api/v3
    token: SecretStr = SecretStr("")  # a token that may read deployments, statuses and contents
    repos: dict[str, str] = Field(default_factory=dict)  # service -> "owner/repo"
    timeout_s: float = 10.0
    max_pages: int = 5  # pages of 100 deployments read per repository


class ArgoCDDeploysSettings(Section):
    """Argo CD's application history (deploys.source = "argocd")."""

    url: str = ""  # https://argocd.example.com
    token: SecretStr = SecretStr("")  # an API token (argocd account generate-token)
    verify_tls: bool = True
    timeout_s: float = 10.0
    apps: list[str] = Field(default_factory=list)  # [] = every app the token can list
    app_pattern: str = "{service}"  # how an app's name names its service, and maybe its environment: {service}-{env}
    # Where an app's environment comes from when app_pattern has no {env}.
    environment_from: Literal["namespace", "project", "cluster"] = "namespace"
    git_repo: str = ""  # a local clone of the repository behind the apps, for diffs; "" = revisions only


class AppCodeSettings(Section):
    """The applications' own repositories: the commits behind an image bump, shown by query_deploy_diff."""

    source: Literal["off", "git", "github"] = "off"  # github: the deploys.github API URL and token
    repos: dict[str, str] = Field(default_factory=dict)  # service -> a local clone (git) or "owner/repo" (github)
    repo_pattern: str = ""  # every other service: /srv/src/{service} (git) or acme/{service} (github)
    # The ref an image version names: {version} (the tag is the version), v{version}, {sha} (the commit id inside
    # the version, as in sha-3f2a9c1), {service} too.
    ref_pattern: str = "{version}"
    max_commits: int = 10  # the newest commits shown; the text says how many more there were
    max_files: int = 8  # files shown per commit


class DeploysSettings(Section):
    """Where deploy records come from (`source`) and which of them are suspects (`environments`, statuses).

    `backend` is the old name of `source` and `elasticsearch` the old name of `index`; both are still read."""

    source: Literal["git", "index", "github", "argocd", "kubernetes"] = "git"
    # Deploys to other environments are not suspects (they are listed as left out); [] = every environment.
    environments: list[str] = Field(default_factory=list)
    exclude_statuses: list[str] = Field(
        default_factory=lambda: ["failure", "failed", "error", "errored", "cancelled", "canceled", "aborted"]
    )
    git_repo: Path = DEFAULT_STATE_DIR / "deploys.git"
    # "" = no tags: every commit that touches a service folder is a deploy (also when no tag matches the pattern).
    tag_pattern: str = "{service}/{version}"
    # Service folders: {service} and {env} stand for one path segment each; several patterns comma-separated.
    service_path: str = "services/{service}"
    index: str = "deploys"
    # Field names in the deploy-events index (a dotted name reads a nested object); how service and version are
    # queried (keyword, .keyword sub-field, phrase match) is read from the index's mapping.
    timestamp_field: str = "@timestamp"
    service_field: str = "service"
    version_field: str = "version"
    previous_version_field: str = "previous_version"
    author_field: str = "author"
    commit_field: str = "commit"
    summary_field: str = "summary"
    diff_field: str = "diff"
    environment_field: str = ""  # "" = the index records no environment
    status_field: str = ""  # "" = the index records no status
    started_field: str = ""  # when the rollout started; "" = the index records no rollout times
    finished_field: str = ""  # when the rollout finished (all pods on the new version)
    action_field: str = ""  # "rollback" / "restart" where the index says so; "" = rollbacks are read from versions
    github: GitHubDeploysSettings = Field(default_factory=GitHubDeploysSettings)
    argocd: ArgoCDDeploysSettings = Field(default_factory=ArgoCDDeploysSettings)
    code: AppCodeSettings = Field(default_factory=AppCodeSettings)
    max_diff_chars: int = 6_000

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        if isinstance(data, dict) and "backend" in data:
            data = dict(data)
            old = data.pop("backend")
            named = "index" if old == "elasticsearch" else old
            if data.setdefault("source", named) != named:
                raise ValueError(f"deploys.backend {old!r} (the old name) disagrees with source {data['source']!r}")
        return data
