"""A sandbox whose databases carry postgres_exporter series points the database toolset at them: the model can read
the exporter views (locks, the oldest transaction, connections) of the incident's database, as on a real stack."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bot.config import Settings
from bot.sandbox.exporters.postgres import database_targets
from bot.sandbox.scenario import load_scenario
from bot.sandbox.state import SandboxInfo
from bot.wiring.sandbox import sandbox_overrides
from bot.wiring.toolsets import build_database_tools
from tests.fakes.backends import RunningSandbox

NAME = "claims-api-midday-timeouts"


def test_each_database_with_exporter_series_is_a_target_with_its_callers() -> None:
    assert database_targets(load_scenario(NAME)) == {"claims-db": ["claims-api"]}
    assert database_targets(load_scenario("hikari-pool")) == {}  # no postgres_exporter series: no target


@pytest.fixture(scope="module")
def box(make_sandbox: Callable[[str], RunningSandbox]) -> RunningSandbox:
    return make_sandbox(NAME)


def _info(box: RunningSandbox) -> SandboxInfo:
    data = box.data
    return SandboxInfo(
        scenario=NAME,
        now=data.now,
        incident_at=data.incident_at,
        prometheus_url=box.prometheus.url,
        prometheus_pid=box.prometheus.pid,
        logs_db=data.logs_db,
        git_repo=data.git_repo,
        topology=data.topology,
        env_path=data.git_repo.parent / "opsbot.env",
        data_end=data.data_end,
        databases=database_targets(data.scenario),
    )


def test_the_env_file_and_the_eval_settings_turn_the_database_toolset_on(box: RunningSandbox) -> None:
    info = _info(box)
    assert '"claims-db": {"services": ["claims-api"]}' in info.env()["OPSBOT_DATABASE__TARGETS"]
    settings = sandbox_overrides(Settings(_env_file=None), info)  # type: ignore[call-arg]
    assert settings.database.targets["claims-db"].services == ["claims-api"]
    assert settings.database.targets["claims-db"].exporter and not settings.database.targets["claims-db"].dsn


def test_the_exporter_views_read_the_incidents_database(box: RunningSandbox) -> None:
    settings = sandbox_overrides(Settings(_env_file=None), _info(box))  # type: ignore[call-arg]
    tools = build_database_tools(settings)
    assert tools.names == ["claims-db", "claims-api"]  # a caller names its database too
    locks = tools.query_db_locks("claims-db", range="3h").text
    sessions = tools.query_db_sessions("claims-db", range="3h").text
    assert "exporter" in locks.lower() and "exclusive" in locks.lower(), locks
    assert "transaction" in sessions.lower(), sessions
    # the exporter's default series carry no application or user: said, never shown as "(none)/?"
    assert "name no application or user" in sessions and "(none)/?" not in sessions, sessions
