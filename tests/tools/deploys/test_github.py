"""Deploy records from the GitHub Deployments API, read from a stand-in that speaks its wire format over real HTTP
(pagination by Link header, bearer auth, 429 with Retry-After, 5xx, slow replies) and computes compare and contents
from a real git repository."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot import wiring
from tests.fakes.github import FakeGitHub
from tests.tools.conftest import tool_settings
from tests.tools.deploys.repos import commit, helm_values, init
from tools.base import Toolbox, call_tool
from tools.results import deploys_of, diff_of

NOW = datetime(2026, 11, 28, 15, 0, tzinfo=UTC)
TOKEN = "ghp_test"
OLD_PREVIEWS = 120  # more than one page of 100


@pytest.fixture(scope="module")
def github(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeGitHub]:
    repo = init(tmp_path_factory.mktemp("gh") / "order-service")
    app = "src/main/resources/application.yaml"
    first = commit(
        repo,
        {app: helm_values("order", "v1.0.0"), "src/Order.java": "class Order {}\n"},
        "init",
        NOW - timedelta(days=20),
    )
    rc = commit(repo, {"src/Order.java": "class Order { int v = 2; }\n"}, "faster checkout", NOW - timedelta(hours=3))
    release = commit(
        repo,
        {app: helm_values("order", "v1.0.0", pool=4), "db/migration/V2__idx.sql": "CREATE INDEX idx ON orders(ts);\n"},
        "tune pool, index orders",
        NOW - timedelta(hours=2),
    )
    broken = commit(repo, {"src/Order.java": "class Order { int v = 3; }\n"}, "hotfix", NOW - timedelta(hours=1))
    fake = FakeGitHub(TOKEN)
    fake.add_repo("acme/order-service", repo)
    for i in range(OLD_PREVIEWS):
        fake.deploy("acme/order-service", first, f"preview-{i}", NOW - timedelta(days=15, minutes=i), ref="main")
    fake.deploy("acme/order-service", first, "production", NOW - timedelta(days=10), ref="v1.0.0", creator="ann")
    fake.deploy("acme/order-service", rc, "staging", NOW - timedelta(minutes=150), ref="v1.1.0-rc1", creator="li")
    fake.deploy(
        "acme/order-service",
        release,
        "production",
        NOW - timedelta(minutes=110),
        ref="v1.1.0",
        creator="li",
        description="Release v1.1.0",
    )
    fake.deploy("acme/order-service", broken, "production", NOW - timedelta(minutes=50), "failure", ref="v1.1.1")
    with fake:
        yield fake


def toolbox(url: str, token: str = TOKEN, **deploys: Any) -> Toolbox:
    github = {"api_url": url, "token": token, "repos": {"order": "acme/order-service"}, "timeout_s": 2.0}
    settings = tool_settings(deploys={"source": "github", "github": github, **deploys})
    return wiring.build_toolbox(settings, clock=lambda: NOW)


def records(github: FakeGitHub, **deploys: Any) -> tuple[Any, str]:
    result = call_tool(toolbox(github.url, **deploys), "query_deploy_records", {"service": "order", "range": "6h"})
    assert result.status in ("ok", "no_data"), result.text
    return deploys_of(result), result.text


def test_deployments_are_records_with_environment_and_latest_status(github: FakeGitHub) -> None:
    found, text = records(github)
    assert found is not None
    assert [(r.version, r.environment, r.status, r.author) for r in found.records] == [
        ("v1.1.0", "production", "success", "li"),
        ("v1.1.0-rc1", "staging", "success", "li"),
    ]
    assert found.records[0].previous_version == "v1.0.0" and found.records[0].summary == "Release v1.1.0"
    assert "left out 1 deploy that did not succeed (order/v1.1.1 failure)" in text


def test_the_environment_filter_leaves_the_staging_candidate_out(github: FakeGitHub) -> None:
    found, text = records(github, environments=["production"])
    assert found is not None and [r.version for r in found.records] == ["v1.1.0"]
    assert "left out 1 deploy outside production (order/v1.1.0-rc1 in staging)" in text


def test_every_page_is_followed_and_every_request_carries_the_token(github: FakeGitHub) -> None:
    github.requests.clear()
    records(github)
    listed = [r for r in github.requests if r.path.endswith("/deployments")]
    assert [r.query.get("page", "1") for r in listed] == ["1", "2"]
    assert all(r.authorization == f"Bearer {TOKEN}" for r in github.requests)
    assert all(r.headers.get("X-GitHub-Api-Version") == "2022-11-28" for r in github.requests)


def test_the_diff_is_the_compare_between_the_previous_successful_deploy_and_this_one(github: FakeGitHub) -> None:
    result = call_tool(toolbox(github.url), "query_deploy_diff", {"version": "v1.1.0", "service": "order"})
    report = diff_of(result)
    assert result.status == "ok" and report is not None, result.text
    assert (
        "commits" in result.text and "faster checkout (ci)" in result.text and "tune pool, index orders" in result.text
    )
    assert [(c.key, c.old, c.new) for c in report.key_changes] == [
        ("config.spring.datasource.hikari.maximum-pool-size", "20", "4")
    ]
    assert report.risky_lines == ("db/migration/V2__idx.sql: CREATE INDEX idx ON orders(ts);",)
    assert set(report.record.files) == {
        "src/main/resources/application.yaml",
        "db/migration/V2__idx.sql",
        "src/Order.java",
    }


def test_a_wrong_token_is_githubs_own_answer_naming_the_setting(github: FakeGitHub) -> None:
    result = call_tool(toolbox(github.url, token="nope"), "query_deploy_records", {"service": "order"})
    assert result.status == "error"
    assert "GitHub answered HTTP 401" in result.text and "Bad credentials" in result.text
    assert "check deploys.github.token" in result.text


def test_a_short_retry_after_is_waited_for_once(github: FakeGitHub) -> None:
    github.fail_next(429, body={"message": "API rate limit exceeded"}, Retry_After="1")
    found, _ = records(github)
    assert found is not None and len(found.records) == 2


def test_a_long_retry_after_is_reported_not_waited_for(github: FakeGitHub) -> None:
    github.fail_next(403, body={"message": "You have exceeded a secondary rate limit"}, Retry_After="60")
    result = call_tool(toolbox(github.url), "query_deploy_records", {"service": "order"})
    assert result.status == "error" and "secondary rate limit" in result.text
    assert "rate limited: Retry-After 60 s" in result.text


def test_a_gateway_error_is_retried_once_and_a_server_error_is_reported(github: FakeGitHub) -> None:
    github.fail_next(502, body={"message": "Server Error"})
    found, _ = records(github)
    assert found is not None and len(found.records) == 2
    github.fail_next(500, body={"message": "Something went wrong"})
    result = call_tool(toolbox(github.url), "query_deploy_records", {"service": "order"})
    assert (
        result.status == "error" and "GitHub answered HTTP 500" in result.text and "Something went wrong" in result.text
    )


def test_a_slow_reply_is_a_timeout_that_names_it(github: FakeGitHub) -> None:
    github.fail_next(0, delay_s=3.0)
    result = call_tool(toolbox(github.url), "query_deploy_records", {"service": "order"})
    assert result.status == "error" and "GitHub did not answer within 2 s" in result.text


def test_an_unknown_repository_is_a_check_that_fails(github: FakeGitHub, tmp_path: Path) -> None:
    settings = tool_settings(
        deploys={
            "source": "github",
            "github": {
                "api_url": github.url,
                "token": TOKEN,
                "repos": {"order": "acme/order-service", "cart": "acme/kart"},
            },
        }
    )
    checks = wiring.build_deploy_source(settings).check()
    assert [(c.value, c.ok) for c in checks] == [("cart = acme/kart", False), ("order = acme/order-service", True)]
    assert "HTTP 404" in checks[0].evidence
