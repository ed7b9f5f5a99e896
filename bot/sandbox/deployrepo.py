"""A GitOps deploy repository for a scenario, built with the real `git` CLI.

Layout: services/<service>/{application.yaml, deployment.yaml, kustomization.yaml, CHANGELOG.md} (and hpa.yaml
for a service with an autoscaler; the scenario's files may sit in sub-folders) and runbooks/*.md (the shared
sandbox runbooks and the scenario's own, from the first commit). A deploy is a commit touching that folder
(kustomization's image tag, the CHANGELOG, the scenario's file changes), with author and committer dates at the
deploy time, and an annotated tag `<service>/<version>` whose tagger date is the deploy time. A config-only deploy
leaves the image tag as it was. Two older deploys per service come first, so every deploy has a previous one.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from datetime import datetime, timedelta
from importlib import resources
from pathlib import Path

from bot.sandbox.scenario import Deploy, FileChange, Scenario, ScenarioError, Service

BASELINE_DAYS_BEFORE = (9, 5, 1)  # the running version's predecessors, then the running version itself
_SUMMARIES = (
    "Bump dependencies to the latest patch releases",
    "Add request metrics for the admin endpoints",
    "Lower log level of health checks to DEBUG",
    "Fix pagination off-by-one in list endpoints",
    "Refactor retry settings into one place",
    "Update base image to the latest security patch",
)


@dataclass(frozen=True)
class DeployRecord:
    """One deploy as the tools and the ES `deploys` index see it."""

    service: str
    version: str
    previous_version: str
    at: datetime
    author: str
    summary: str
    commit: str
    diff: str
    red_herring: bool = False
    image_version: str = ""  # the image tag it runs ("" = its version; a config-only deploy keeps the previous)


def previous_version(version: str) -> str:
    """v2.8.1 -> v2.8.0, v2.8.0 -> v2.7.3, v3.0.0 -> v2.9.0."""
    match = re.fullmatch(r"v(\d+)\.(\d+)\.(\d+)", version)
    if match is None:
        raise ScenarioError(f"version {version!r} is not vMAJOR.MINOR.PATCH")
    major, minor, patch = map(int, match.groups())
    if patch:
        return f"v{major}.{minor}.{patch - 1}"
    return f"v{major}.{minor - 1}.3" if minor else f"v{major - 1}.9.0"


def baseline_deploys(scenario: Scenario) -> list[Deploy]:
    """Older routine deploys per service, ending with the version running before the incident."""
    out = []
    for n, svc in enumerate(s for s in scenario.services if s.kind != "external"):
        versions = [svc.version]
        for _ in BASELINE_DAYS_BEFORE[1:]:
            versions.insert(0, previous_version(versions[0]))
        for i, (version, days) in enumerate(zip(versions, BASELINE_DAYS_BEFORE, strict=True)):
            at_minutes = -(days * 1440) - 97 * n - 31 * i - 300  # spread over working hours of other days
            summary = _SUMMARIES[(n + i) % len(_SUMMARIES)]
            out.append(Deploy(svc.name, version, at_minutes, f"{svc.name}-team", summary))
    return out


def baseline_clashes(scenario: Scenario) -> list[str]:
    """A deploy that reuses a version without being a rollback. The sandbox deploys each service's `version` and its
    two predecessors itself; a scenario may roll back to a version that ran before (another one runs in between),
    but not to one of those predecessors (the author never saw them), and not deploy the running version again."""
    problems, running, seen = [], dict[str, str](), set[tuple[str, str]]()
    predecessors = {(d.service, d.version) for d in baseline_deploys(scenario)}
    predecessors -= {(s.name, s.version) for s in scenario.services}
    for deploy in sorted([*baseline_deploys(scenario), *scenario.deploys], key=lambda d: d.at_minutes):
        key = (deploy.service, deploy.version)
        if key in seen and (key in predecessors or running.get(deploy.service) == deploy.version):
            problems.append(
                f"deploy {deploy.service} {deploy.version}: that version is already deployed (the sandbox deploys"
                " the service's `version`, running before the incident, after two predecessors); give this deploy"
                " a later version, or lower the service's `version`"
            )
        seen.add(key)
        running[deploy.service] = deploy.version
    return problems


def build_deploy_repo(scenario: Scenario, repo: Path, now: datetime) -> list[DeployRecord]:
    """Create the repository at `repo` (must not exist) and return every deploy, oldest first."""
    incident = scenario.incident_at(now)
    deploys = sorted([*baseline_deploys(scenario), *scenario.deploys], key=lambda d: d.at_minutes)
    repo.mkdir(parents=True)
    run_git(repo, "init", "-q", "-b", "main")
    first = deploys[0]
    _bootstrap(scenario, repo, incident + timedelta(minutes=first.at_minutes - 1440))
    running: dict[str, str] = {}
    images: dict[str, str] = {}
    records = []
    for deploy in deploys:
        at = incident + timedelta(minutes=deploy.at_minutes)
        image = images.get(deploy.service, deploy.version) if deploy.config_only else deploy.version
        svc = scenario.service(deploy.service)
        records.append(_deploy(svc, deploy, repo, at, running.get(deploy.service, ""), image))
        running[deploy.service], images[deploy.service] = deploy.version, image
    return records


def _bootstrap(scenario: Scenario, repo: Path, at: datetime) -> None:
    for svc in (s for s in scenario.services if s.kind != "external"):
        folder = repo / "services" / svc.name
        folder.mkdir(parents=True)
        later_first = sorted(scenario.deploys, key=lambda d: -d.at_minutes)  # the earliest deploy's 'before' wins
        first_changes = {f.path: f.before for d in later_first if d.service == svc.name for f in d.files if f.before}
        files = {**_default_files(svc), **first_changes}
        for name, text in files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text.strip("\n") + "\n")
    (repo / "runbooks").mkdir()
    for name, text in runbook_files(scenario).items():
        (repo / "runbooks" / name).write_text(text.strip("\n") + "\n")
    (repo / "README.md").write_text("# deploys\n\nGitOps state of every service; tag <service>/<version> = a deploy.\n")
    run_git(repo, "add", "-A")
    _commit(repo, "Bootstrap service manifests", "platform-team", at)


def runbook_files(scenario: Scenario) -> dict[str, str]:
    """name -> Markdown of the runbooks the sandbox repository holds: bot/sandbox/runbooks, then the scenario's."""
    shared = resources.files("bot.sandbox") / "runbooks"
    books = {p.name: p.read_text(encoding="utf-8") for p in shared.iterdir() if p.name.endswith(".md")}
    return books | {book.file: book.text for book in scenario.runbooks}


def _default_files(svc: Service) -> dict[str, str]:
    port = 5432 if svc.kind == "database" else 8080
    files = {
        "application.yaml": (
            f"server:\n  port: {port}\nmanagement:\n  endpoints.web.exposure.include: health,prometheus\n"
        ),
        "deployment.yaml": _deployment_yaml(svc),
        "kustomization.yaml": _kustomization(svc, "v0.0.0"),
        "CHANGELOG.md": f"# {svc.name} changelog\n",
    }
    if "hpa_max_replicas" in svc.signals:
        files["hpa.yaml"] = (
            f"apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: {svc.name}\nspec:\n"
            f"  scaleTargetRef:\n    apiVersion: apps/v1\n    kind: Deployment\n    name: {svc.name}\n"
            f"  minReplicas: {int(svc.baseline('hpa_min_replicas'))}\n"
            f"  maxReplicas: {int(svc.signals['hpa_max_replicas'])}\n"
        )
    return files


def _deployment_yaml(svc: Service) -> str:
    """The Deployment manifest; a service that sets its replicas, requests or limits has them here too."""
    resources = '          resources:\n            limits:\n              cpu: "2"\n              memory: 2Gi\n'
    sized = {
        k: v
        for k, v in svc.signals.items()
        if k.endswith(("_limit_cores", "_limit_mb", "_request_cores", "_request_mb"))
    }
    if sized:
        resources = "          resources:\n" + "".join(
            f"            {kind}:\n" + "".join(f"              {line}\n" for line in lines)
            for kind, lines in _resource_lines(sized).items()
        )
    return (
        f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {svc.name}\nspec:\n"
        f"  replicas: {int(svc.signals.get('replicas', 3))}\n"
        f"  template:\n    spec:\n      containers:\n        - name: {svc.name}\n"
        f"          image: registry.example.internal/{svc.name}\n" + resources
    )


def _resource_lines(sized: dict[str, float]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, value in sized.items():
        kind = "limits" if "_limit_" in key else "requests"
        text = f'cpu: "{value:g}"' if key.startswith("cpu") else f"memory: {value:g}Mi"
        out.setdefault(kind, []).append(text)
    return dict(sorted(out.items(), key=lambda kv: kv[0] != "requests"))


def _kustomization(svc: Service, version: str) -> str:
    resources = "  - deployment.yaml\n" + ("  - hpa.yaml\n" if "hpa_max_replicas" in svc.signals else "")
    return f"resources:\n{resources}images:\n  - name: registry.example.internal/{svc.name}\n    newTag: {version}\n"


def _deploy(svc: Service, deploy: Deploy, repo: Path, at: datetime, previous: str, image: str) -> DeployRecord:
    folder = repo / "services" / svc.name
    (folder / "kustomization.yaml").write_text(_kustomization(svc, image))
    changelog = folder / "CHANGELOG.md"
    changelog.write_text(changelog.read_text() + f"\n## {deploy.version}\n- {deploy.summary}\n")
    for change in deploy.files:
        _apply(folder, change, deploy)
    run_git(repo, "add", "-A")
    commit = _commit(repo, f"{svc.name}: {deploy.summary} ({deploy.version})", deploy.author, at)
    tag = f"{svc.name}/{deploy.version}"
    # a rollback redeploys a version that ran before: its tag moves to the deploy that brings it back
    run_git(
        repo, "tag", "-a", "-f", tag, "-m", f"{deploy.summary}\n\nauthor: {deploy.author}", author=deploy.author, at=at
    )
    diff = run_git(repo, "diff", f"{svc.name}/{previous}", tag, "--", f"services/{svc.name}") if previous else ""
    return DeployRecord(
        svc.name, deploy.version, previous, at, deploy.author, deploy.summary, commit, diff, deploy.red_herring, image
    )


def _apply(folder: Path, change: FileChange, deploy: Deploy) -> None:
    target = folder / change.path
    current = target.read_text() if target.exists() else ""
    if current.strip() != change.before.strip():
        raise ScenarioError(f"{deploy.service} {deploy.version}: 'before' of {change.path} does not match the repo")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(change.after.strip("\n") + "\n")


def _commit(repo: Path, message: str, author: str, at: datetime) -> str:
    run_git(repo, "commit", "-q", "-m", message, author=author, at=at)
    return run_git(repo, "rev-parse", "HEAD").strip()


def run_git(
    repo: Path, *args: str, author: str = "platform-team", at: datetime | None = None, stdin: str | None = None
) -> str:
    """Run git with an explicit identity and dates (a fresh machine may have no global identity)."""
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"}
    if at is not None:
        stamp = at.isoformat()
        env |= {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
    identity = [
        "-c",
        f"user.name={author}",
        "-c",
        f"user.email={author}@example.com",
        "-c",
        "tag.gpgSign=false",
        "-c",
        "commit.gpgSign=false",
    ]
    done = subprocess.run(
        ["git", "-C", str(repo), *identity, *args], env=env, input=stdin, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args[:2])} failed: {done.stderr.strip()}")
    return done.stdout
