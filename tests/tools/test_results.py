"""Typed tool results: every kind reads back equal from its stored JSON, and the accessors find the facts on a step."""

from __future__ import annotations

import dataclasses
import importlib
import json
import pkgutil
from datetime import timedelta

import pytest

import tools
from bot.engine.types import Step
from tests.tools.result_samples import AT, log_summary, metric_series, samples
from tools.base import ToolData, ToolResult
from tools.calculate import Calculation
from tools.deploys.records import DeployList
from tools.metrics.series import render_series
from tools.resultjson import data_from_json, data_to_json
from tools.results import (
    KINDS,
    data_of,
    deploys_of,
    logs_of,
    new_signatures_of,
    series_of,
    services_of,
    signatures_of,
)

SAMPLES = samples()


def stored(data: ToolData) -> dict:
    """What a trace store keeps and gives back: strict JSON."""
    return json.loads(json.dumps(data_to_json(data), allow_nan=False))


@pytest.mark.parametrize("sample", SAMPLES, ids=[f"{s.kind}-{i}" for i, s in enumerate(SAMPLES)])
def test_every_kind_reads_back_equal_from_its_stored_json(sample: ToolData) -> None:
    assert data_from_json(stored(sample)) == sample


def test_the_samples_cover_every_listed_kind() -> None:
    assert {s.kind for s in SAMPLES} == set(KINDS)


def _all_subclasses(cls: type) -> set[type]:
    found: set[type] = set(cls.__subclasses__())
    return found | {sub for c in found for sub in _all_subclasses(c)}


def test_every_tool_data_class_in_tools_is_a_listed_frozen_kind() -> None:
    for module in pkgutil.walk_packages(tools.__path__, "tools."):
        if module.name != "tools.mcp.client":  # the MCP client needs the mcp package; its results are text only
            importlib.import_module(module.name)
    classes = {c for c in _all_subclasses(ToolData) if c.__module__.startswith("tools.")}
    assert classes == set(KINDS.values())
    for cls in classes:
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, cls  # type: ignore[attr-defined]
        assert "kind" not in {f.name for f in dataclasses.fields(cls)}, cls  # the tag has the key to itself


def test_a_ratio_keeps_every_digit_the_text_rounds_away() -> None:
    series = data_from_json(stored(metric_series()))
    assert isinstance(series, type(metric_series()))
    drop = series.changes[0]
    assert drop.after == 138.436 and drop.ratio == 138.436 / 212.0  # the text prints "x0.7"
    assert series.summary.cells[1][1] == 212.123456789


def test_the_drop_the_text_rounds_to_x07_is_a_drop_of_0653_in_the_data() -> None:
    step = step_with(metric_series(), "query_metrics")
    assert "138 ms (x0.7)" in render_series(metric_series())  # read back from the text: 0.7, "no change"
    series = series_of(step)
    assert series is not None and round(series.changes[0].ratio or 0, 3) == 0.653


def test_times_are_aware_utc_and_defaults_are_left_out_of_the_stored_form() -> None:
    form = stored(DeployList(None, metric_series().window, (), 0))
    assert form == {
        "kind": "deploy_list",
        "service": None,
        "window": {"start": "2026-11-28T12:05:00Z", "end": "2026-11-28T16:05:07.250000+00:00"},
        "records": [],
        "total": 0,
    }
    assert data_from_json(form) == DeployList(None, metric_series().window, (), 0)
    assert data_from_json(stored(metric_series())).stop.last_at.tzinfo is not None  # type: ignore[attr-defined]


def test_a_non_finite_number_is_stored_as_null_so_the_json_stays_strict() -> None:
    assert stored(Calculation("1e308 * 10", float("inf")))["value"] is None


def test_an_unknown_or_malformed_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown tool result kind 'movie'"):
        data_from_json({"kind": "movie"})
    with pytest.raises(ValueError, match="does not fit"):
        data_from_json({"kind": "calculation", "expression": "1+1"})  # its value is missing
    with pytest.raises(ValueError, match="not a tool result kind"):
        data_to_json(type("Stray", (ToolData,), {"kind": "calculation"})())


def test_timedelta_reads_back_as_a_timedelta() -> None:
    ranking = next(s for s in SAMPLES if s.kind == "change_ranking")
    assert stored(ranking)["lookback"] == 21_600.0
    assert data_from_json(stored(ranking)).lookback == timedelta(hours=6)  # type: ignore[attr-defined]


def step_with(data: ToolData | None, action: str = "query_logs") -> Step:
    return Step(1, "", action, {}, "text", "ok", data=data)


def test_signatures_of_reads_the_error_or_the_warn_block() -> None:
    step = step_with(log_summary())
    [error] = signatures_of(step)
    assert error.count == 256 and error.first_at == AT and "30000ms" in error.example.message
    [warn] = signatures_of(step, "WARN")
    assert warn.template == "lock wait on <n> rows"
    assert new_signatures_of(step) == (error,)
    assert logs_of(step) is step.data


def test_accessors_find_nothing_on_another_kind_a_text_only_tool_or_an_error() -> None:
    series = step_with(metric_series(), "query_metrics")
    assert series_of(series) is series.data and logs_of(series) is None and signatures_of(series) == ()
    assert deploys_of(step_with(None, "github_search")) is None
    assert services_of(step_with(None)) == ()
    assert data_of(ToolResult("ok", "2", Calculation("1+1", 2)), Calculation) == Calculation("1+1", 2)
