"""The time of reading deploys from git: a GitOps repository read by commits, and a tagged one read by tags (with the
tag reader as it was before commits were read, loaded from git history, for comparison).

Run on demand:  .venv/bin/python -m pytest tests/bench/bench_deploys.py -s
It prints a table; it asserts only that each read found deploys, never a timing.
"""

from __future__ import annotations

import importlib.util
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.tools.deploys.repos import git, helm_values, init
from tools.deploys.git import GitDeploys
from tools.deploys.git.discovery import discover_repository

NOW = datetime(2026, 11, 28, 15, 0, tzinfo=UTC)
SERVICES = [f"svc{i:02d}" for i in range(20)]
COMMITS = 400  # one every 15 minutes: the last 24 h hold 96
REPEATS = 5
BEFORE = "fddc763"  # the commit whose tools/deploys/git.py read annotated tags only


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    times, result = [], None
    for _ in range(REPEATS):
        started = time.perf_counter()
        result = call()
        times.append((time.perf_counter() - started) * 1000)
    return result, statistics.median(times)


def build(repo: Path, *, tags: bool) -> None:
    """COMMITS commits over 20 services × 2 environments: image bumps, a pool change every 7th, a README every 11th."""
    init(repo)
    running: dict[str, str] = {}
    for i in range(COMMITS):
        at = NOW - timedelta(minutes=15 * (COMMITS - i))
        service, env = SERVICES[i % len(SERVICES)], ("prod", "staging")[(i // len(SERVICES)) % 2]
        path = "README.md" if i % 11 == 0 else f"envs/{env}/{service}/values.yaml"
        if path not in running or i % 3:  # an image bump; every third commit changes the pool under the running tag
            running[path] = f"v1.{i}.0"
        text = f"# {i}\n" if i % 11 == 0 else helm_values(service, running[path], pool=20 - (i % 3 == 0) * 16)
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
        git(repo, "add", "-A", at=at)
        git(repo, "commit", "-q", "-m", f"change {i}", at=at)
        if tags and i % 11:
            git(repo, "tag", "-a", f"{service}/v1.{i}.0", "-m", f"release {i}", at=at)


def old_tag_reader(tmp: Path) -> Any:
    source = subprocess.run(["git", "show", f"{BEFORE}:tools/deploys/git.py"], capture_output=True, text=True)
    if source.returncode != 0:
        return None
    path = tmp / "old_git_deploys.py"
    path.write_text(source.stdout)
    spec = importlib.util.spec_from_file_location("old_git_deploys", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while they are built
    spec.loader.exec_module(module)
    return module.GitDeploys


@pytest.mark.bench
def test_bench_git_deploys(tmp_path: Path) -> None:
    gitops, tagged = tmp_path / "gitops", tmp_path / "tagged"
    build(gitops, tags=False)
    build(tagged, tags=True)
    day = (NOW - timedelta(hours=24), NOW)
    source = GitDeploys(gitops, "", "envs/{env}/{service}")
    rows: list[tuple[str, int, float]] = []
    found, ms = timed(lambda: source.read(None, *day))
    rows.append(("commits: every service, 24 h", len(found.records), ms))
    found, ms = timed(lambda: source.read("svc03", *day))
    rows.append(("commits: one service, 24 h", len(found.records), ms))
    versions, ms = timed(lambda: source.versions("svc03"))
    rows.append(("commits: versions of one service", len(versions), ms))
    config = next(v for v in versions if v.startswith("config@"))
    diff, ms = timed(lambda: source.diff("svc03", config))
    rows.append(("commits: diff of a config change", len(diff.key_changes or ()), ms))
    settings, ms = timed(lambda: discover_repository(gitops)[0])
    rows.append(("discovery of the repository", len(settings), ms))
    tags = GitDeploys(tagged, "{service}/{version}", "envs/{env}/{service}")
    found, ms = timed(lambda: tags.read(None, *day))
    rows.append(("tags (now): every service, 24 h", len(found.records), ms))
    before = old_tag_reader(tmp_path)
    if before is not None:
        old = before(tagged, "{service}/{version}", "envs/*/{service}/*")
        records, ms = timed(lambda: old.records(None, *day))
        rows.append((f"tags (at {BEFORE}): every service, 24 h", len(records), ms))
    print(f"\n{COMMITS} commits, {len(SERVICES)} services × 2 environments; median of {REPEATS} runs")
    for name, count, ms in rows:
        print(f"  {name:<44} {count:>5} found  {ms:>8.1f} ms")
    assert all(count for _, count, _ in rows)
