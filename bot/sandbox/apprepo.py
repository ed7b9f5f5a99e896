"""The applications behind the sandbox's images: one git repository (`apps.git`, beside the deploy repository) in
which each service's code is its own history (branch `<service>`), built with the real `git` CLI, so the commits
between two image versions can be read as a team's source repository gives them.

Each image version is a tag `<service>/<version>` on the commit it was built from. Between two versions come one
routine commit (the deploy's summary, touching a source file and the changelog) and then the commits the scenario
gives the deploy (`[[deploys.commits]]`: "switch cache client to sync mode"), each dated evenly between the
previous deploy and this one, by its own author. A config-only deploy builds no image, so it adds nothing here.
One repository written by one `git fast-import` costs two git processes per sandbox, not three per commit.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

from bot.sandbox.deployrepo import baseline_deploys, run_git
from bot.sandbox.scenario import CodeCommit, Deploy, Scenario, Service

APPS_REPO = "apps.git"
REF_PATTERN = "{service}/{version}"  # the tag of a service's image version


def app_repo_path(deploy_repo: Path) -> Path:
    """Where the application repository of the sandbox whose deploy repository is `deploy_repo` is."""
    return deploy_repo.parent / APPS_REPO


def build_app_repo(scenario: Scenario, repo: Path, now: datetime) -> list[str]:
    """The bare repository at `repo` (must not exist); returns the services it holds (external ones have none)."""
    incident = scenario.incident_at(now)
    deploys = sorted([*baseline_deploys(scenario), *scenario.deploys], key=lambda d: d.at_minutes)
    history = _History()
    held = []
    for svc in (s for s in scenario.services if s.kind != "external"):
        images = [d for d in deploys if d.service == svc.name and not d.config_only]
        if images:
            _service_history(history, svc, images, incident)
            held.append(svc.name)
    repo.mkdir(parents=True)
    run_git(repo, "init", "-q", "--bare", "-b", held[0] if held else "main")
    run_git(repo, "fast-import", "--quiet", stdin=history.stream())
    return held


def _service_history(history: _History, svc: Service, deploys: list[Deploy], incident: datetime) -> None:
    previous = incident + timedelta(minutes=deploys[0].at_minutes - 1440)
    history.start(svc)
    history.commit(CodeCommit(f"Initial import of {svc.name}", f"{svc.name}-team", ("README.md",)), previous)
    built: set[str] = set()
    for deploy in deploys:
        if deploy.version in built:  # going back to an image built before (a rollback) builds nothing new
            continue
        built.add(deploy.version)
        at = incident + timedelta(minutes=deploy.at_minutes)
        routine = CodeCommit(deploy.summary, deploy.author, (_source(svc), "CHANGELOG.md"))
        commits = [routine, *(replace(c, author=c.author or deploy.author) for c in deploy.commits)]
        for k, commit in enumerate(commits, 1):
            history.commit(commit, previous + (at - previous) * k / (len(commits) + 1))
        history.tag(f"{svc.name}/{deploy.version}")
        previous = at


class _History:
    """A fast-import stream: per service a branch of commits, each file gaining a line naming the change, and a tag
    per image version."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.marks = 0
        self.svc: Service | None = None
        self.files: dict[str, str] = {}
        self.first = True  # the service's first commit starts its own history (no parent)

    def start(self, svc: Service) -> None:
        self.svc, self.files, self.first = svc, {}, True

    def commit(self, commit: CodeCommit, at: datetime) -> None:
        assert self.svc is not None
        self.marks += 1
        who = f"{commit.author} <{commit.author}@example.com> {int(at.timestamp())} +0000"
        head = [f"commit refs/heads/{self.svc.name}", f"mark :{self.marks}", f"author {who}", f"committer {who}"]
        self.parts += [*head, _data(commit.subject), *([] if self.first else [f"from :{self.marks - 1}"])]
        self.first = False
        for path in commit.files or (_source(self.svc),):
            self.files[path] = self.files.get(path, "") + f"# {commit.subject}\n"
            self.parts += [f"M 100644 inline {path}", _data(self.files[path])]

    def tag(self, version: str) -> None:
        self.parts += [f"reset refs/tags/{version}", f"from :{self.marks}"]

    def stream(self) -> str:
        return "\n".join([*self.parts, "done", ""])


def _data(text: str) -> str:
    """fast-import's `data <bytes>` followed by the text."""
    return f"data {len(text.encode())}\n{text}"


def _source(svc: Service) -> str:
    return f"src/{svc.name.replace('-', '_')}/service.py"
