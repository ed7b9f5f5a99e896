"""GitOps repositories as teams keep them, built with the real `git` CLI: no tags, a deploy is a commit.

- Argo CD app-of-apps: `apps/root.yaml` (the Application of Applications), `apps/<service>-<env>.yaml`, and the
  Helm values each one deploys, `envs/<env>/<service>/values.yaml` (`image.tag`, and for a Spring service its
  `spring:` block, where the pool size sits many lines below `spring:`);
- Flux with kustomize: `clusters/<env>/apps.yaml` (a Flux Kustomization), `apps/<env>/<service>/kustomization.yaml`
  (`images:` with `newTag`) and `apps/<env>/<service>/configmap.yaml`.
Each change is a commit with author and committer dates at its time; one commit touches no service's folder.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

Files = dict[str, str]
Params = dict[str, str]


@dataclass(frozen=True)
class Change:
    """One change a team pushes: new parameters for one service in one environment (an image tag, a setting)."""

    service: str
    minutes: int  # relative to the incident
    author: str
    message: str
    updates: Mapping[str, str] = field(default_factory=dict)
    env: str = "prod"


def helm_values(service: str, params: Params) -> str:
    text = f"""replicaCount: 6
image:
  repository: registry.example.com/shop/{service}
  tag: "{params["tag"]}"
  pullPolicy: IfNotPresent
resources:
  requests:
    cpu: 500m
    memory: 1Gi
"""
    if "pool" in params:
        text += f"""spring:
  application:
    name: {service}
  datasource:
    url: jdbc:postgresql://{service}-db.shop:5432/{service}
    username: {service}
    hikari:
      connection-timeout: 30000
      idle-timeout: 600000
      max-lifetime: 1800000
      minimum-idle: 2
      maximum-pool-size: {params["pool"]}
  jpa:
    open-in-view: false
management:
  endpoints:
    web:
      exposure:
        include: health,prometheus
"""
    return text


def argocd_files(service: str, env: str, params: Params) -> Files:
    app = f"""apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: {service}-{env}
  namespace: argocd
spec:
  project: shop
  source:
    repoURL: https://git.example.com/platform/shop-deploy.git
    path: charts/spring-service
    helm:
      valueFiles:
        - ../../envs/{env}/{service}/values.yaml
  destination:
    server: https://kubernetes.default.svc
    namespace: shop-{env}
"""
    return {f"apps/{service}-{env}.yaml": app, f"envs/{env}/{service}/values.yaml": helm_values(service, params)}


def flux_files(service: str, env: str, params: Params) -> Files:
    kustomization = f"""apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: shop-{env}
resources:
  - ../../base/{service}
  - configmap.yaml
images:
  - name: ghcr.io/acme/{service}
    newTag: "{params["tag"]}"
"""
    settings = "".join(f'  {key}: "{value}"\n' for key, value in sorted(params.items()) if key != "tag")
    settings = settings or "  LOG_FORMAT: json\n"
    configmap = f"""apiVersion: v1
kind: ConfigMap
metadata:
  name: {service}-config
data:
{settings}"""
    folder = f"apps/{env}/{service}"
    return {f"{folder}/kustomization.yaml": kustomization, f"{folder}/configmap.yaml": configmap}


ROOTS: dict[str, Callable[[list[str]], Files]] = {
    "argocd": lambda envs: {
        "apps/root.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: root\n"
        "spec:\n  source:\n    path: apps\n",
        "README.md": "Deployments of the shop. Every commit to envs/<env>/<service>/ is rolled out by Argo CD.\n",
    },
    "flux": lambda envs: {
        **{
            f"clusters/{env}/apps.yaml": "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n"
            f"metadata:\n  name: apps\n  namespace: flux-system\nspec:\n  path: ./apps/{env}\n  prune: true\n"
            for env in envs
        },
        "README.md": "Flux reconciles clusters/<env>; each service lives in apps/<env>/<service>.\n",
    },
}
LAYOUTS: dict[str, Callable[[str, str, Params], Files]] = {"argocd": argocd_files, "flux": flux_files}


def build_gitops_repo(
    repo: Path, layout: str, start: Mapping[tuple[str, str], Params], changes: list[Change], incident: datetime
) -> list[tuple[Change, str]]:
    """The repository at `repo`: a first commit with every (service, env) at its `start` parameters three days
    before the incident, then each change as its own commit. Returns each change with its commit sha."""
    render = LAYOUTS[layout]
    state = {key: dict(params) for key, params in start.items()}
    repo.mkdir(parents=True)
    _git(repo, None, "init", "-q", "-b", "main")
    files = ROOTS[layout](sorted({env for _, env in state}))
    for (service, env), params in state.items():
        files |= render(service, env, params)
    _commit(repo, files, "platform-team", "Bootstrap the shop's deployments", incident - timedelta(days=3))
    shas = []
    for change in sorted(changes, key=lambda c: c.minutes):
        when = incident + timedelta(minutes=change.minutes)
        if change.service:
            state[(change.service, change.env)].update(change.updates)
            touched = render(change.service, change.env, state[(change.service, change.env)])
        else:  # a commit that touches no service's folder
            touched = {"README.md": (repo / "README.md").read_text() + change.message + "\n"}
        shas.append((change, _commit(repo, touched, change.author, change.message, when)))
    return shas


def _commit(repo: Path, files: Files, author: str, message: str, when: datetime) -> str:
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    _git(repo, None, "add", "-A")
    _git(repo, (author, when), "commit", "-q", "-m", message)
    return _git(repo, None, "rev-parse", "HEAD").strip()


def _git(repo: Path, who: tuple[str, datetime] | None, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    if who is not None:
        name, when = who
        stamp = when.strftime("%Y-%m-%dT%H:%M:%S+0000")
        email = f"{name}@example.com"
        env |= {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": stamp}
        env |= {"GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email, "GIT_COMMITTER_DATE": stamp}
    else:
        env |= {"GIT_AUTHOR_NAME": "builder", "GIT_AUTHOR_EMAIL": "b@example.com"}
        env |= {"GIT_COMMITTER_NAME": "builder", "GIT_COMMITTER_EMAIL": "b@example.com"}
    done = subprocess.run(["git", "-C", str(repo), *args], env=env, capture_output=True, text=True, check=True)
    return done.stdout
