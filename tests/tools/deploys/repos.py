"""Deploy repositories as teams keep them, built with the real `git` CLI: an Argo CD app-of-apps repository with Helm
values per service folder and no tags, a Flux repository whose kustomizations set `images: newTag`, and a repository
of plain manifests.

The Argo CD repository holds the planted incident: a configuration-only commit shrinks order's DB pool 20 → 4 in
`envs/prod/order/values.yaml`, where `spring:` is many lines above the changed line (outside the hunk's context).
"""

from __future__ import annotations

import os
import subprocess
from datetime import datetime, timedelta
from pathlib import Path


def git(repo: Path, *args: str, at: datetime | None = None, who: str = "ci") -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}
    if at is not None:
        env |= {"GIT_AUTHOR_DATE": at.isoformat(), "GIT_COMMITTER_DATE": at.isoformat()}
    identity = ["-c", f"user.name={who}", "-c", f"user.email={who}@example.com", "-c", "tag.gpgSign=false"]
    identity += ["-c", "commit.gpgSign=false"]
    done = subprocess.run(["git", "-C", str(repo), *identity, *args], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def commit(repo: Path, files: dict[str, str], message: str, at: datetime, who: str = "ci") -> str:
    """Write `files` (path -> text), commit them at `at` as `who`, return the sha."""
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(repo, "add", "-A", at=at)
    git(repo, "commit", "-q", "-m", message, at=at, who=who)
    return git(repo, "rev-parse", "HEAD").strip()


def init(repo: Path) -> Path:
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    return repo


def helm_values(service: str, tag: str, pool: int = 20) -> str:
    """Helm values of a Spring Boot service: the pool size sits deep under `spring:`, many lines below it."""
    return f"""\
replicaCount: 3
image:
  repository: registry.example.internal/{service}
  tag: {tag}
  pullPolicy: IfNotPresent
config:
  spring:
    application:
      name: {service}
    jpa:
      open-in-view: false
      properties:
        hibernate:
          jdbc:
            batch_size: 50
    datasource:
      url: jdbc:postgresql://{service}-db:5432/{service}
      username: {service}
      hikari:
        connection-timeout: 30000
        idle-timeout: 600000
        max-lifetime: 1800000
        minimum-idle: 2
        maximum-pool-size: {pool}
        leak-detection-threshold: 0
        pool-name: HikariPool-1
        validation-timeout: 5000
resources:
  limits:
    cpu: "2"
    memory: 2Gi
"""


def application(service: str, env: str) -> str:
    """An Argo CD Application of the app-of-apps root, pointing at the service's values folder."""
    return f"""\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: {service}-{env}
  namespace: argocd
spec:
  project: {env}
  source:
    repoURL: https://git.example.internal/platform/deploys.git
    path: envs/{env}/{service}
    targetRevision: main
  destination:
    server: https://kubernetes.default.svc
    namespace: {service}-{env}
"""


def argo_app_of_apps(repo: Path, incident_at: datetime) -> dict[str, str]:
    """The Argo CD repository; returns name -> sha of the commits tests refer to."""
    init(repo)
    base = incident_at - timedelta(days=3)
    files = {"README.md": "# deploys\n\nArgo CD app-of-apps; one folder per environment and service.\n"}
    for env in ("prod", "staging"):
        for service in ("order", "payment", "inventory"):
            files[f"apps/{env}/{service}.yaml"] = application(service, env)
            tag = "v1.4.0" if service == "order" else "v2.0.0"
            files[f"envs/{env}/{service}/values.yaml"] = helm_values(service, tag)
    shas = {"bootstrap": commit(repo, files, "Bootstrap app-of-apps", base, "platform")}
    prod, staging = "envs/prod/order/values.yaml", "envs/staging/order/values.yaml"
    steps = [
        ("order-1.5.0", {prod: helm_values("order", "v1.5.0")}, "order: release v1.5.0", -180, "li.wei"),
        ("readme", {"README.md": "# deploys\n\nSee docs/ for releases.\n"}, "docs: release process", -120, "ann"),
        ("staging-rc", {staging: helm_values("order", "v1.6.0-rc1")}, "order: v1.6.0-rc1 to staging", -60, "li.wei"),
        ("pool", {prod: helm_values("order", "v1.5.0", pool=4)}, "order: tune DB pool", -12, "bo"),
        ("payment", {"envs/prod/payment/values.yaml": helm_values("payment", "v2.1.0")}, "payment: v2.1.0", -5, "ann"),
    ]
    for name, changed, message, minutes, who in steps:
        shas[name] = commit(repo, changed, message, incident_at + timedelta(minutes=minutes), who)
    return shas


def kustomization(service: str, tag: str) -> str:
    return f"""\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../../../base/{service}
images:
  - name: registry.example.internal/{service}
    newTag: {tag}
"""


def flux_kustomize(repo: Path, incident_at: datetime) -> dict[str, str]:
    """A Flux repository: clusters/<env>/<service>/kustomization.yaml sets `images: newTag`; a shared base."""
    init(repo)
    files = {"base/order/deployment.yaml": "kind: Deployment\n", "base/checkout/deployment.yaml": "kind: Deployment\n"}
    for env in ("prod", "staging"):
        for service in ("order", "checkout"):
            files[f"clusters/{env}/{service}/kustomization.yaml"] = kustomization(service, "1.0.0")
    shas = {"bootstrap": commit(repo, files, "flux bootstrap", incident_at - timedelta(days=2), "platform")}
    shas["checkout"] = commit(
        repo,
        {"clusters/prod/checkout/kustomization.yaml": kustomization("checkout", "1.1.0")},
        "checkout 1.1.0",
        incident_at - timedelta(minutes=7),
        "flux-image-automation",
    )
    shas["base"] = commit(
        repo,
        {"base/order/deployment.yaml": "kind: Deployment\nspec: {replicas: 2}\n"},
        "order base: 2 replicas",
        incident_at - timedelta(minutes=30),
        "ann",
    )
    return shas
