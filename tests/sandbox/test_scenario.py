"""Scenario files: loading, validation, relative times."""

from __future__ import annotations

import tomllib
from datetime import UTC, datetime
from importlib import resources
from typing import Any

import pytest

from bot.sandbox.scenario import (
    EXAMPLES,
    ScenarioError,
    incident_time,
    load_scenario,
    scenario_from_dict,
    scenario_names,
)


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


def _with(raw: dict, **changes: Any) -> dict:
    """hikari-pool with `changes`: `order` merges into the order service, the others replace top-level keys."""
    changed = {**raw, **{k: v for k, v in changes.items() if k != "order"}}
    changed["services"] = {**raw["services"], "order": {**raw["services"]["order"], **dict(changes.get("order", {}))}}
    return changed


EFFECT = {"service": "order", "at_minutes": 0}


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"order": {"colour": "red"}}, r"service order: unknown keys \['colour'\]; a service takes"),
        ({"timeline": [{**EFFECT, "metric": "p99_ms", "to": 900, "on_node": "node-1"}]}, "needs `per_pod = true`"),
        ({"timeline": [{**EFFECT, "metric": "disk_used_gb", "to": 90}]}, "set its healthy level `disk_used_gb"),
        ({"order": {"disk_used_gb": 10}}, "disk_used_gb needs `disk_capacity_gb` too"),
        ({"order": {"gc_pause_ms": 20}}, r"gc_pause_ms needs `runtime` one of \('jvm', 'go'\)"),
        ({"order": {"log_format": "xml"}}, "log_format 'xml' is not one of"),
        ({"timeline": [{**EFFECT, "metric": "qps", "to": 9, "shape": "periodic"}]}, "0 < for_minutes < every_minutes"),
        ({"must_not_name": ["v2.8.1"]}, "must_not_name 'v2.8.1' is also in must_name"),
        (
            {"order": {"per_pod": True}, "timeline": [{**EFFECT, "metric": "qps", "to": 9, "on_version": "v9.9.9"}]},
            r"on_version 'v9.9.9' is not one of \['v2.8.0', 'v2.8.1'\]",
        ),
        (
            {
                "deploys": [
                    {
                        "service": "order",
                        "version": "v2.8.1",
                        "at_minutes": -3,
                        "author": "a",
                        "summary": "s",
                        "pods": 1,
                    }
                ]
            },
            r"a canary \(`pods`\) needs `per_pod = true`",
        ),
        (
            {
                "deploys": [
                    {
                        "service": "order",
                        "version": "v2.8.1",
                        "at_minutes": -3,
                        "author": "a",
                        "summary": "s",
                        "files": [{"path": "../payment/x.yaml", "before": "", "after": "x"}],
                    }
                ]
            },
            "must be a path inside services/order/",
        ),
        (
            {
                "deploys": [
                    {"service": "order", "version": "v2.7.3", "at_minutes": -2000, "author": "a", "summary": "s"}
                ]
            },
            r"deploy order v2.7.3: that version is already deployed .* give this deploy a later version",
        ),
        (
            {
                "logs": [
                    {
                        "service": "order",
                        "level": "INFO",
                        "logger": "l",
                        "message": "m",
                        "per_minute": 1,
                        "fields": {"message": "x"},
                    }
                ]
            },
            "field 'message' is a field every document has",
        ),
        (
            {
                "logs": [
                    {
                        "service": "order",
                        "level": "INFO",
                        "logger": "l",
                        "message": "m",
                        "per_minute": 1,
                        "fields": {"pid": 4242},
                    }
                ]
            },
            r"field 'pid' must be text \(write pid = \"4242\"\)",
        ),
        (
            {"order": {"replicas": 4}, "kubernetes": {"pods": [{"service": "order", "replicas": 3}]}},
            "pods are counted twice",
        ),
    ],
)
def test_a_format_mistake_is_refused_with_the_key_to_fix(changes, problem):
    with pytest.raises(ScenarioError, match=problem):
        scenario_from_dict(_with(_raw("hikari-pool"), **changes))


def test_a_config_only_deploy_without_a_version_is_tagged_after_the_running_one():
    deploy = {"service": "order", "config_only": True, "at_minutes": -30, "author": "a", "summary": "s"}
    scenario = scenario_from_dict(_with(_raw("hikari-pool"), deploys=[*_raw("hikari-pool")["deploys"], deploy]))
    assert [d.version for d in scenario.deploys if d.config_only] == ["v2.8.0-config.1"]


def test_the_examples_load_and_stay_out_of_the_suite():
    examples = scenario_names(EXAMPLES)
    assert examples == ["examples/clock-skew-401", "examples/hpa-cap-daily-peak", "examples/node-not-ready-zone-b"]
    assert not set(examples) & set(scenario_names())
    for name in examples:
        scenario = load_scenario(name)
        assert scenario.must_not_name and all(fact in scenario.root_cause for fact in scenario.must_name)
