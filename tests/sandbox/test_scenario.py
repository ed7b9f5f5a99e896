"""Scenario files: loading, validation, relative times."""

from __future__ import annotations

import tomllib
from datetime import UTC, datetime
from importlib import resources

import pytest

from bot.sandbox.scenario import ScenarioError, incident_time, load_scenario, scenario_from_dict, scenario_names


def _raw(name: str) -> dict:
    return tomllib.loads((resources.files("bot.sandbox") / "scenarios" / f"{name}.toml").read_text())


def test_twelve_scenarios_ship_with_the_package():
    names = scenario_names()
    assert len(names) >= 12
    assert "hikari-pool" in names and "no-incident" in names


def test_default_scenario_tells_the_pool_story():
    scenario = load_scenario("hikari-pool")
    assert scenario.must_name == ("v2.8.1", "maximumPoolSize")
    deploy = next(d for d in scenario.deploys if d.version == "v2.8.1")
    assert (deploy.service, deploy.at_minutes) == ("order", -3)
    change = deploy.files[0]
    assert "maximumPoolSize: 50" in change.before and "maximumPoolSize: 200" in change.after
    assert scenario.topology["order"] == ["payment", "orders-db"]
    assert any("Connection is not available" in p.message for p in scenario.logs)


def test_red_herrings_are_listed():
    herrings = load_scenario("red-herring-deploy").red_herrings
    assert [(type(h).__name__, h.service) for h in herrings] == [("Deploy", "search")]


def test_unknown_scenario_names_the_known_ones():
    with pytest.raises(ScenarioError, match=r"known: .*hikari-pool"):
        load_scenario("hikari")


def test_reference_to_an_unknown_service_is_rejected():
    raw = _raw("hikari-pool")
    raw["timeline"][0]["service"] = "ordr"
    with pytest.raises(ScenarioError, match="unknown service 'ordr'"):
        scenario_from_dict(raw)


def test_unknown_metric_and_shape_are_rejected():
    raw = _raw("hikari-pool")
    raw["timeline"][0] |= {"metric": "latency", "shape": "spike"}
    with pytest.raises(ScenarioError, match=r"effect metric 'latency'.*effect shape 'spike'"):
        scenario_from_dict(raw)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("yesterday 15:05", datetime(2026, 11, 28, 15, 5, tzinfo=UTC)),
        ("today 09:30", datetime(2026, 11, 29, 9, 30, tzinfo=UTC)),
        ("-45m", datetime(2026, 11, 29, 15, 26, tzinfo=UTC)),
    ],
)
def test_incident_time_is_relative_to_the_run_clock(spec, expected):
    assert incident_time(spec, datetime(2026, 11, 29, 16, 11, 30, tzinfo=UTC)) == expected


def test_bad_incident_spec_says_what_is_allowed():
    with pytest.raises(ScenarioError, match="yesterday HH:MM"):
        incident_time("last tuesday", datetime(2026, 11, 29, tzinfo=UTC))
