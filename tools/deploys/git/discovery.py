"""What a deploy repository's history and tree show: the tag scheme, the service-folder layout, the environments and
how versions are set; and whether configured patterns match anything (for `opsbot init` and `opsbot doctor`).

Every finding carries its evidence (counts and examples). Nothing is guessed silently: what could not be found is
said as such.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from tools.base import ToolError
from tools.deploys.git.cli import GitRepo
from tools.deploys.git.commits import folder_changes, log_commits, split_by_folder
from tools.deploys.git.layout import Layout
from tools.deploys.git.source import GitDeploys
from tools.deploys.git.tags import TagPattern, scan_tags
from tools.deploys.git.versions import CONFIG_PREFIX
from tools.deploys.query import Finding

TAG_PATTERNS = ("{service}/{version}", "{service}-{version}", "{service}@{version}", "{service}_{version}")
_WORDS = "prod production prd live staging stage stg dev develop development qa test testing uat preprod sandbox demo"
ENVIRONMENT_WORDS = frozenset([*_WORDS.split(" "), "pre-prod", "canary", "perf"])
PRODUCTION_WORDS = ("prod", "production", "prd", "live")
# Folders that structure a repository rather than name a service.
_STRUCTURE = frozenset(
    [
        *("apps", "applications", "services", "envs", "environments", "clusters", "overlays", "base", "bases"),
        *("templates", "charts", "manifests", "deploy", "deployments", "k8s", "kubernetes", "helm", "kustomize"),
        *("releases", "components", "infra", "platform", "argocd", "flux"),
    ]
)
_MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
_HISTORY = 200
_EXAMPLES = 3


def discover_repository(path: str | Path) -> tuple[dict[str, object], list[Finding], list[str]]:
    """The git settings a repository calls for (tag_pattern, service_path, environments), each with its evidence,
    and what could not be found."""
    repo = GitRepo(path)
    settings: dict[str, object] = {"source": "git", "git_repo": str(path)}
    findings, missing = [], []
    tag_finding = _tag_finding(repo)
    layout, evidence = infer_layout(_tree(repo))
    if layout:
        settings["service_path"] = layout
        findings.append(Finding("deploys.service_path", layout, evidence))
        findings += _history_findings(repo, Layout(layout), settings)
    else:
        missing.append(f"no service folders: no YAML or JSON manifests in {path} form a folder-per-service layout")
    if tag_finding is not None and tag_finding.ok:
        settings["tag_pattern"] = tag_finding.value
    else:
        settings["tag_pattern"] = ""  # deploys are commits: no tag scheme to wait for
    no_tags = Finding("deploys.tag_pattern", "", "the repository has no tags: deploys are commits")
    findings.append(tag_finding or no_tags)
    return settings, findings, missing


def check_repository(source: GitDeploys) -> list[Finding]:
    """The repository answers; the tag pattern and the folder layout match something (each named when not)."""
    try:
        folders = source.folders()
        scan = source.tag_scan()
    except ToolError as exc:
        return [Finding("deploys.git_repo", str(source.repo.path), str(exc), ok=False)]
    findings = []
    if scan is not None and not scan.tags:
        findings.append(_unmatched_tags(source.tag_pattern.pattern if source.tag_pattern else "", scan.all_names))
    if scan is not None and scan.tags:
        examples = ", ".join(f"{t.service}/{t.version}" for t in scan.tags[:_EXAMPLES])
        evidence = f"{len(scan.tags)} tags match: {examples}"
        findings.append(Finding("deploys.tag_pattern", scan_pattern(source), evidence))
    if not folders:
        suggestion, evidence = infer_layout(_tree(source.repo))
        hint = f"folders that hold manifests suggest {suggestion!r} ({evidence})" if suggestion else "no manifests"
        findings.append(
            Finding(
                "deploys.service_path",
                str(source.layout),
                f"matches no folder in {source.repo.path}; {hint}",
                ok=False,
                suggestion=suggestion,
            )
        )
    else:
        services = sorted({p.service for p in folders})
        envs = sorted({p.environment for p in folders if p.environment})
        where = f"; environments: {', '.join(envs)}" if envs else ""
        evidence = f"{len(folders)} service folders: {_listed(services)}{where}"
        findings.append(Finding("deploys.service_path", str(source.layout), evidence))
    return findings


def scan_pattern(source: GitDeploys) -> str:
    return source.tag_pattern.pattern if source.tag_pattern else ""


def infer_tag_pattern(names: Sequence[str]) -> tuple[str, int]:
    """The tag pattern that matches the most tag names with a version that starts with a digit, and how many."""
    best, count = "", 0
    for pattern in TAG_PATTERNS:
        matcher = TagPattern(pattern)
        hits = sum(1 for n in names if (m := matcher.match(f"refs/tags/{n}")) and m[1].lstrip("v")[:1].isdigit())
        if hits > count:
            best, count = pattern, hits
    return best, count


def infer_layout(paths: Iterable[str]) -> tuple[str, str]:
    """The folder pattern that names the most services among the folders holding manifests, with its evidence;
    ("", "") when no folder holds one. Folders it leaves out that name services of their own (a kustomize `base/`
    shared by every environment) add a second pattern."""
    folders = {p.rsplit("/", 1)[0] for p in paths if p.endswith(_MANIFEST_SUFFIXES) and "/" in p}
    best, evidence = _best_layout(folders)
    if not best:
        return "", ""
    rest = {f for f in folders if Layout(best).place(f) is None}
    second, more = _best_layout(rest)
    if second and int(more.split(" ", 1)[0]) >= 2:
        return f"{best}, {second}", f"{evidence}; {more} under {second}"
    return best, evidence


def _best_layout(folders: Iterable[str]) -> tuple[str, str]:
    votes: dict[str, set[tuple[str, str]]] = {}
    for folder in folders:
        for template, service, env in _templates(folder.split("/")):
            votes.setdefault(template, set()).add((service, env))
    if not votes:
        return "", ""

    def rank(t: str) -> tuple[int, bool, int]:
        return (len({s for s, _ in votes[t]}), "{env}" in t, -len(t))

    best = max(votes, key=rank)
    services = sorted({s for s, _ in votes[best]})
    envs = sorted({e for _, e in votes[best] if e})
    where = f" in environments {', '.join(envs)}" if envs else ""
    return best, f"{len(services)} services ({_listed(services)}){where}"


def _templates(segments: list[str]) -> Iterable[tuple[str, str, str]]:
    """(pattern, service, env) for every way the folder's segments can be read as a service folder."""
    env_at = next((i for i, s in enumerate(segments) if _is_environment(s)), None)
    for i, segment in enumerate(segments):
        if i == env_at or segment.lower() in _STRUCTURE or not segment[:1].isalnum():
            continue
        end = max(i, env_at if env_at is not None else i) + 1
        parts = ["{service}" if j == i else "{env}" if j == env_at else segments[j] for j in range(end)]
        yield "/".join(parts), segment, segments[env_at] if env_at is not None and env_at < end else ""


def _is_environment(segment: str) -> bool:
    words = segment.lower().replace("_", "-").split("-")
    return segment.lower() in ENVIRONMENT_WORDS or any(w in ENVIRONMENT_WORDS for w in words)


def _tag_finding(repo: GitRepo) -> Finding | None:
    scan = scan_tags(repo, TagPattern("{service}/{version}"))
    if not scan.all_names:
        return None
    pattern, hits = infer_tag_pattern(scan.all_names)
    if not hits:
        return Finding(
            "deploys.tag_pattern",
            "",
            f"{len(scan.all_names)} tags, none names a service and a version "
            f"(e.g. {', '.join(scan.all_names[:_EXAMPLES])}): deploys are read from commits",
            ok=False,
        )
    found = scan_tags(repo, TagPattern(pattern)).tags
    kinds = Counter("annotated" if t.annotated else "lightweight" for t in found)
    examples = ", ".join(f"{t.service}/{t.version}" for t in found[:_EXAMPLES])
    how = ", ".join(f"{n} {k}" for k, n in kinds.items())
    evidence = f"{hits} of {len(scan.all_names)} tags match ({how}): {examples}"
    return Finding("deploys.tag_pattern", pattern, evidence)


def _unmatched_tags(pattern: str, names: Sequence[str]) -> Finding:
    if not names:
        return Finding("deploys.tag_pattern", pattern, "the repository has no tags: deploys are read from commits")
    suggestion, hits = infer_tag_pattern(names)
    evidence = f"matches none of the {len(names)} tags (e.g. {', '.join(names[:_EXAMPLES])})"
    if hits:
        return Finding(
            "deploys.tag_pattern",
            pattern,
            f"{evidence}; {suggestion!r} matches {hits}",
            ok=False,
            suggestion=suggestion,
        )
    return Finding("deploys.tag_pattern", pattern, f"{evidence}: deploys are read from commits")


def _history_findings(repo: GitRepo, layout: Layout, settings: dict[str, object]) -> list[Finding]:
    """How the newest commits set versions, the environments, and the commits outside every service folder."""
    commits = log_commits(repo, f"--max-count={_HISTORY}", "HEAD")
    touched, outside = split_by_folder(layout, commits)
    changes = folder_changes(repo, touched)
    config = sum(1 for c in changes if c.version.startswith(CONFIG_PREFIX))
    evidence = (
        f"of the newest {len(commits)} commits, {len(changes) - config} folder changes set an image tag and "
        f"{config} change configuration only (version config@<sha>); {len(outside)} commits touch no service folder"
    )
    findings = [Finding("deploys.versions", "image tag, else config@<sha>", evidence)]
    envs = Counter(p.environment for p in {c.place for c in changes} if p.environment)
    production = [e for e in envs if e.lower() in PRODUCTION_WORDS]
    if production:
        settings["environments"] = production
        listed = ", ".join(f"{e} ({n} services)" for e, n in sorted(envs.items(), key=lambda en: (-en[1], en[0])))
        findings.append(Finding("deploys.environments", ", ".join(production), f"environments in folders: {listed}"))
    return findings


def _tree(repo: GitRepo) -> list[str]:
    return repo.run("ls-tree", "-r", "--name-only", "HEAD").splitlines()


def _listed(names: Sequence[str]) -> str:
    return ", ".join(names[:8]) + (f" +{len(names) - 8} more" if len(names) > 8 else "")
