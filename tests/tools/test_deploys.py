"""Deploy records and diffs from a real git repository built here, and from the sandbox's ES deploy index."""

from __future__ import annotations

import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.wiring.elastic import es_client
from tests.fakes.faulty import closed_port_url
from tools.base import Toolbox, call_tool
from tools.deploys.elastic import ElasticsearchDeploys
from tools.deploys.git import GitDeploys
from tools.deploys.query import DeployTools

NOW = datetime(2026, 11, 28, 16, 0, tzinfo=UTC)


def git(repo: Path, *args: str, at: datetime = NOW, who: str = "ci") -> str:
    env = {**os.environ, "GIT_AUTHOR_DATE": at.isoformat(), "GIT_COMMITTER_DATE": at.isoformat()}
    identity = ["-c", f"user.name={who}", "-c", f"user.email={who}@example.com", "-c", "tag.gpgSign=false"]
    done = subprocess.run(["git", "-C", str(repo), *identity, *args], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def deploy(repo: Path, service: str, version: str, files: dict[str, str], at: datetime, who: str, summary: str):
    for name, text in files.items():
        path = repo / "services" / service / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(repo, "add", "-A", at=at)
    git(repo, "commit", "-q", "--allow-empty", "-m", f"{service}: {summary}", at=at, who=who)
    git(repo, "tag", "-a", f"{service}/{version}", "-m", f"{summary}\n\nauthor: {who}", at=at, who=who)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("deploys")
    git(repo, "init", "-q", "-b", "main")
    pool = "spring:\n  datasource:\n    hikari:\n      maximumPoolSize: {}\n"
    deploy(repo, "order", "v1.0.0", {"application.yaml": pool.format(50)}, NOW - timedelta(days=10), "ann", "Initial")
    deploy(repo, "payment", "v3.0.0", {"app.yaml": "retries: 3\n"}, NOW - timedelta(days=9), "bo", "Initial")
    big = "".join(f"line {i}\n" for i in range(400))
    changed = {"application.yaml": pool.format(200), "notes.txt": big}
    deploy(repo, "order", "v1.1.0", changed, NOW - timedelta(hours=2), "li.wei", "Raise Hikari pool size")
    deploy(repo, "payment", "v3.1.0", {"app.yaml": "retries: 5\n"}, NOW - timedelta(hours=1), "bo", "More retries")
    # an annotated tag on a commit that does not touch services/order is not an order deploy
    git(repo, "tag", "-a", "order/v1.1.1", "-m", "retag\n\nauthor: x", at=NOW - timedelta(minutes=30))
    git(repo, "tag", "order/v9.9.9")  # lightweight, on a commit that does not touch services/order either
    return repo


@pytest.fixture
def toolbox(repo: Path) -> Toolbox:
    return Toolbox(DeployTools(GitDeploys(repo), max_diff_chars=400, clock=lambda: NOW).specs())


def test_records_are_newest_first_with_version_author_summary_and_files(toolbox):
    result = call_tool(toolbox, "query_deploy_records", {"service": "*", "range": "24h"})
    lines = result.text.splitlines()
    assert "2 found, newest first" in lines[0]
    assert lines[1].startswith("2026-11-28T15:00:00Z payment/v3.1.0 (from v3.0.0) by bo: More retries")
    assert lines[2].startswith("2026-11-28T14:00:00Z order/v1.1.0 (from v1.0.0) by li.wei: Raise Hikari pool size")
    assert "files: services/order/application.yaml, services/order/notes.txt" in lines[2]


def test_records_of_one_service_in_an_explicit_window(toolbox):
    args = {"service": "order", "start": "2026-11-18T00:00Z", "end": "2026-11-28T15:30Z"}
    text = call_tool(toolbox, "query_deploy_records", args).text
    assert "order/v1.1.0" in text and "order/v1.0.0" in text and "payment" not in text.split("\n", 1)[1]
    records = [line for line in text.splitlines() if line.startswith("2026-")]
    assert not any("v1.1.1" in line or "v9.9.9" in line for line in records)
    # tags on commits that change nothing in services/order are named as not deploys, never dropped silently
    assert "1 tag in this window changes nothing in its service's folder" in text and "order/v9.9.9" in text


def test_no_deploys_in_the_window_names_the_latest_before_it(toolbox):
    result = call_tool(toolbox, "query_deploy_records", {"service": "order", "range": "30m"})
    assert result.status == "no_data"
    assert "none. The latest before it: order/v1.1.0 at 2026-11-28T14:00:00Z." in result.text


def test_diff_is_the_real_git_diff_of_the_service_folder_only(toolbox):
    result = call_tool(toolbox, "query_deploy_diff", {"version": "v1.1.0", "service": "order"})
    assert result.status == "ok"
    text = result.text
    assert text.startswith("deploy order/v1.1.0 at 2026-11-28T14:00:00Z by li.wei: Raise Hikari pool size")
    assert "-      maximumPoolSize: 50\n+      maximumPoolSize: 200" in text
    assert "payment" not in text and "\nindex " not in text


def test_long_diff_is_cut_with_a_marker(toolbox):
    text = call_tool(toolbox, "query_deploy_diff", {"version": "order/v1.1.0", "service": "order"}).text
    assert "… diff truncated: showing" in text and "line 399" not in text


def test_first_deploy_diff_shows_the_files_it_added(toolbox):
    text = call_tool(toolbox, "query_deploy_diff", {"version": "v3.0.0", "service": "payment"}).text
    assert "diff against the commit before it" in text and "+retries: 3" in text


@pytest.mark.parametrize("version", ["--output=/tmp/x", "../../etc/passwd", "v1..v2", "-rf", "v1.0.0;ls", "a b", ""])
def test_versions_are_strictly_validated(toolbox, version):
    result = call_tool(toolbox, "query_deploy_diff", {"version": version, "service": "order"})
    assert result.status == "error" and "invalid version" in result.text


def test_unknown_version_lists_the_services_versions(toolbox):
    result = call_tool(toolbox, "query_deploy_diff", {"version": "v1.2.0", "service": "order"})
    assert result.status == "error"
    assert "unknown version 'v1.2.0'" in result.text and "known: v1.1.1, v9.9.9, v1.1.0, v1.0.0" in result.text


def test_unknown_service_lists_services_with_deploys(toolbox):
    result = call_tool(toolbox, "query_deploy_records", {"service": "ordr"})
    assert result.status == "error" and "known: order, payment" in result.text and "'order'" in result.text
    result = call_tool(toolbox, "query_deploy_diff", {"version": "v1", "service": "--exec=sh"})
    assert result.status == "error" and "invalid service name" in result.text


def test_missing_repository_is_a_clear_observation(tmp_path):
    box = Toolbox(DeployTools(GitDeploys(tmp_path / "nope")).specs())
    result = call_tool(box, "query_deploy_records", {"service": "order"})
    assert result.status == "error" and "does not exist or is not a git repository" in result.text


def test_sandbox_repo_shows_the_pool_resize_and_the_red_herring(sandbox, sandbox_tools):
    at = sandbox.incident_at
    args = {"service": "*", "start": f"{at - timedelta(hours=2):%Y-%m-%dT%H:%MZ}", "end": f"{at:%Y-%m-%dT%H:%MZ}"}
    text = call_tool(sandbox_tools, "query_deploy_records", args).text
    assert "order/v2.8.1 (from v2.8.0) by li.wei" in text and "catalog/v1.9.4" in text
    diff = call_tool(sandbox_tools, "query_deploy_diff", {"version": "v2.8.1", "service": "order"}).text
    assert "+      maximumPoolSize: 200" in diff


def test_elasticsearch_deploy_index_gives_the_same_records_and_diff(sandbox, es_sandbox):
    tools = DeployTools(ElasticsearchDeploys(es_client(es_sandbox, plain_json=True), "deploys"))
    at = sandbox.incident_at
    records = tools.query_deploy_records("order", start=f"{at - timedelta(hours=2):%Y-%m-%dT%H:%MZ}", end="")
    assert records.status == "ok" and "order/v2.8.1 (from v2.8.0) by li.wei" in records.text
    diff = tools.query_deploy_diff("v2.8.1", "order")
    assert diff.status == "ok" and "+      maximumPoolSize: 200" in diff.text
    result = call_tool(Toolbox(tools.specs()), "query_deploy_diff", {"version": "v9.9.9", "service": "order"})
    assert result.status == "error" and "known: v2.8.1, v2.8.0" in result.text


def test_elasticsearch_deploys_down_is_a_clear_observation():
    tools = DeployTools(ElasticsearchDeploys(es_client(closed_port_url(), plain_json=True)))
    result = call_tool(Toolbox(tools.specs()), "query_deploy_records", {"service": "order"})
    assert result.status == "error" and "Elasticsearch is unreachable" in result.text


def test_git_too_slow_is_a_clear_observation(repo, tmp_path, monkeypatch):
    # a git that hangs (the process is replaced by a sleep, so the timeout's kill ends it): the 0.5 s timeout is what
    # ends the call, on any machine load (a timeout of a fraction of a millisecond raced the real git under load)
    slow = tmp_path / "bin"
    slow.mkdir()
    (slow / "git").write_text("#!/bin/sh\nexec sleep 30\n")
    (slow / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{slow}{os.pathsep}{os.environ['PATH']}")
    box = Toolbox(DeployTools(GitDeploys(repo, timeout_s=0.5)).specs())
    result = call_tool(box, "query_deploy_records", {"service": "order"})
    assert result.status == "error" and "git did not answer within" in result.text
