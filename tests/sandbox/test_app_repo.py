"""The applications' repository behind the sandbox's images (real git) and the scenario key that fills it,
`[[deploys.commits]]`: optional, so every older scenario file stays valid."""

from __future__ import annotations

import subprocess
import tomllib
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from bot.config import Settings
from bot.sandbox.apprepo import build_app_repo
from bot.sandbox.deployrepo import build_deploy_repo
from bot.sandbox.scenario import CodeCommit, ScenarioError, load_scenario, scenario_from_dict
from bot.sandbox.state import SandboxInfo
from bot.wiring import sandbox_overrides

NOW = datetime(2026, 11, 28, 15, 0, tzinfo=UTC)


def _raw(name: str) -> dict[str, Any]:
    return tomllib.loads((resources.files("bot.sandbox") / "scenarios" / f"{name}.toml").read_text())


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def _with_deploy(**deploy: Any) -> dict[str, Any]:
    raw = _raw("hikari-pool")
    base = {"service": "order", "version": "v2.9.0", "at_minutes": -30, "author": "ann", "summary": "s"}
    return {**raw, "deploys": [*raw["deploys"], {**base, **deploy}]}


def test_a_deploys_commits_are_read_with_their_authors_and_files() -> None:
    commits = [{"subject": "switch cache client to sync mode", "author": "li", "files": ["src/cache.py"]}]
    scenario = scenario_from_dict(_with_deploy(commits=commits))
    deploy = next(d for d in scenario.deploys if d.version == "v2.9.0")
    assert deploy.commits == (CodeCommit("switch cache client to sync mode", "li", ("src/cache.py",)),)


@pytest.mark.parametrize(
    ("deploy", "problem"),
    [
        ({"config_only": True, "commits": [{"subject": "x"}]}, "config_only deploy ships no image"),
        ({"commits": [{"subject": " "}]}, "needs a `subject`"),
        ({"commits": [{"subject": "x", "files": ["../etc/passwd"]}]}, "inside the application repository"),
    ],
)
def test_a_commit_that_cannot_be_built_is_refused_naming_the_key(deploy: dict[str, Any], problem: str) -> None:
    with pytest.raises(ScenarioError, match=problem):
        scenario_from_dict(_with_deploy(**deploy))


def test_each_service_has_its_own_history_tagged_per_image_version(tmp_path: Path) -> None:
    scenario = load_scenario("bad-release-npe")
    held = build_app_repo(scenario, tmp_path / "apps.git", NOW)
    internal = [s.name for s in scenario.services if s.kind != "external"]
    assert held == internal
    log = _git(tmp_path / "apps.git", "log", "--format=%an|%s", "checkout/v4.11.2..checkout/v4.12.0").splitlines()
    assert log == [
        "mara.l|Turn features.newDiscountEngine on by default",
        "tom.b|DiscountService.apply: read the cart's promotion before the coupon check",
        "tom.b|Enable the new discount engine",
    ]
    other = _git(tmp_path / "apps.git", "log", "--format=%s", "checkout/v4.12.0").splitlines()
    assert not any("autumn campaign" in s for s in other)  # another service's commits are not in its history


def test_a_rollback_to_a_built_image_adds_no_commits(tmp_path: Path) -> None:
    raw = _with_deploy()
    raw["deploys"].append({"service": "order", "version": "v2.8.0", "at_minutes": -10, "author": "ann", "summary": "r"})
    build_app_repo(scenario_from_dict(raw), tmp_path / "apps.git", NOW)
    repo = tmp_path / "apps.git"
    tags = _git(repo, "tag", "--list", "order/*").split()
    assert tags == ["order/v2.7.2", "order/v2.7.3", "order/v2.8.0", "order/v2.8.1", "order/v2.9.0"]
    # deploys: v2.9.0 at -30, back to v2.8.0 at -10 (nothing built), v2.8.1 at -3 (the branch's tip)
    assert _git(repo, "rev-parse", "refs/heads/order").strip() == _git(repo, "rev-parse", "order/v2.8.1").strip()
    assert _git(repo, "merge-base", "--is-ancestor", "order/v2.8.0", "order/v2.9.0") == ""  # the old tag stays put


def test_a_rollback_builds_in_the_deploy_repository_and_its_tag_moves_to_the_rollback(tmp_path: Path) -> None:
    raw = _with_deploy()
    raw["deploys"].append({"service": "order", "version": "v2.8.0", "at_minutes": -10, "author": "ann", "summary": "r"})
    records = build_deploy_repo(scenario_from_dict(raw), tmp_path / "deploys", NOW)
    order = [(r.version, r.previous_version) for r in records if r.service == "order"]
    assert order[-3:] == [("v2.9.0", "v2.8.0"), ("v2.8.0", "v2.9.0"), ("v2.8.1", "v2.8.0")]
    rollback = next(r for r in records if r.service == "order" and r.previous_version == "v2.9.0")
    assert _git(tmp_path / "deploys", "rev-parse", "order/v2.8.0^{commit}").strip() == rollback.commit


def _info(folder: Path) -> SandboxInfo:
    return SandboxInfo(
        "memory-leak-oom",
        NOW,
        NOW,
        "http://127.0.0.1:9",
        0,
        folder / "logs.db",
        folder / "deploys",
        {},
        folder / "env",
        NOW,
    )


def test_the_sandbox_points_the_code_source_at_its_application_repository(tmp_path: Path) -> None:
    build_app_repo(load_scenario("memory-leak-oom"), tmp_path / "apps.git", NOW)
    settings = sandbox_overrides(Settings(_env_file=None), _info(tmp_path))  # type: ignore[call-arg]
    code = settings.deploys.code
    assert (code.source, code.repo_pattern, code.ref_pattern) == (
        "git",
        str(tmp_path / "apps.git"),
        "{service}/{version}",
    )
    env = _info(tmp_path).env()
    assert env["OPSBOT_DEPLOYS__CODE__SOURCE"] == "git"
    assert env["OPSBOT_DEPLOYS__CODE__REPO_PATTERN"] == str(tmp_path / "apps.git")
    own: dict[str, Any] = {"deploys": {"code": {"source": "github", "repo_pattern": "acme/{service}"}}}
    configured = Settings(_env_file=None, **own)  # type: ignore[call-arg]
    assert sandbox_overrides(configured, _info(tmp_path)).deploys.code.source == "github"  # the team's own wins
    assert sandbox_overrides(Settings(_env_file=None), _info(tmp_path / "older")).deploys.code.source == "off"  # type: ignore[call-arg]
