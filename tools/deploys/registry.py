"""Every deploy source by the name `deploys.source` gives it, built from the deploys settings as plain values.

Adding a source is a module in this folder, one entry in SOURCES, and its settings in the deploys section. Each
source is read through the environment and status filters (tools/deploys/filters.py). The clients other settings
sections describe (Elasticsearch, the Kubernetes API) come built, on first use, through Connections.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tools.deploys.filters import DeployFilter, FilteredDeploys
from tools.deploys.query import DeploySource

if TYPE_CHECKING:
    from tools.deploys.appcode import CodeSource
    from tools.deploys.rest import RestClient

Options = Mapping[str, Any]  # the deploys settings section as plain values (secrets unwrapped by the caller)


@dataclass(frozen=True)
class Connections:
    """Clients built from other settings sections, each on first use."""

    elasticsearch: Callable[[], Any]
    kubernetes: Callable[[], Any]
    kubernetes_namespaces: Sequence[str] = ("default",)
    kubernetes_timeout_s: float = 10.0


def _git(o: Options, c: Connections) -> DeploySource:
    from tools.deploys.git import GitDeploys

    return GitDeploys(o["git_repo"], o["tag_pattern"], o["service_path"], timeout_s=float(o.get("git_timeout_s", 10)))


def _index(o: Options, c: Connections) -> DeploySource:
    from tools.deploys.elastic import DeployFields, ElasticsearchDeploys

    names = ("timestamp", "service", "version", "previous_version", "author", "commit", "summary", "diff")
    optional = ("environment", "status", "started", "finished", "action")
    fields = DeployFields(**{n: o.get(f"{n}_field", "") for n in (*names, *optional)})
    return ElasticsearchDeploys(c.elasticsearch(), o["index"], fields)


def _github(o: Options, c: Connections) -> DeploySource:
    from tools.deploys.github import GitHubDeploys

    g = o["github"]
    return GitHubDeploys(_github_client(g), g["repos"], max_pages=g["max_pages"])


def _github_client(g: Options) -> RestClient:
    from tools.deploys.rest import RestClient

    headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
    return RestClient(
        g["api_url"],
        name="GitHub",
        token=g["token"],
        token_setting="deploys.github.token",
        timeout_s=g["timeout_s"],
        headers=headers,
    )


def _argocd(o: Options, c: Connections) -> DeploySource:
    from tools.deploys.argocd import ArgoCDDeploys
    from tools.deploys.git.cli import GitRepo
    from tools.deploys.rest import RestClient

    a = o["argocd"]
    client = RestClient(
        a["url"],
        name="Argo CD",
        token=a["token"],
        token_setting="deploys.argocd.token",
        timeout_s=a["timeout_s"],
        verify_tls=a["verify_tls"],
    )
    clone = GitRepo(a["git_repo"]) if a["git_repo"] else None
    return ArgoCDDeploys(
        client, app_pattern=a["app_pattern"], environment_from=a["environment_from"], apps=a["apps"], git=clone
    )


def _kubernetes(o: Options, c: Connections) -> DeploySource:
    from tools.deploys.kubernetes import KubernetesDeploys

    return KubernetesDeploys(c.kubernetes(), list(c.kubernetes_namespaces), timeout_s=c.kubernetes_timeout_s)


SOURCES: dict[str, Callable[[Options, Connections], DeploySource]] = {
    "git": _git,
    "index": _index,
    "github": _github,
    "argocd": _argocd,
    "kubernetes": _kubernetes,
}


def build_code_source(options: Options) -> CodeSource | None:
    """The applications' repositories `options["code"]` names (None when off): the commits behind an image bump."""
    from tools.deploys.appcode import RefPattern

    code = options.get("code") or {"source": "off"}
    limits = {"max_commits": code["max_commits"], "max_files": code["max_files"]}
    refs = RefPattern(code["ref_pattern"])
    if code["source"] == "git":
        from tools.deploys.appcode.git import GitCode

        return GitCode(code["repos"], code["repo_pattern"], refs, **limits)
    if code["source"] == "github":
        from tools.deploys.appcode.github import GitHubCode

        return GitHubCode(_github_client(options["github"]), code["repos"], code["repo_pattern"], refs, **limits)
    return None


def build_deploy_source(options: Options, connections: Connections) -> FilteredDeploys:
    """The source `options["source"]` names, read through the environment and status filters."""
    name = options["source"]
    if name not in SOURCES:
        raise ValueError(f"deploys.source {name!r} is not one of {', '.join(SOURCES)}")
    keep = DeployFilter(tuple(options.get("environments", ())), tuple(options.get("exclude_statuses", ())))
    return FilteredDeploys(SOURCES[name](options, connections), keep)
