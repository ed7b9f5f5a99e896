"""The Grafana dashboard only queries metrics opsbot's Telemetry actually exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

from bot.http.telemetry import Telemetry

DASHBOARD_PATH = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "opsbot-dashboard.json"
DASHBOARD = json.loads(DASHBOARD_PATH.read_text())
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "gauge": ("",)}


def exported_names() -> set[str]:
    return {
        family.name + suffix for family in Telemetry().registry.collect() for suffix in SUFFIXES.get(family.type, ("",))
    }


def test_every_panel_queries_exported_metrics() -> None:
    exprs = [t["expr"] for p in DASHBOARD["panels"] for t in p["targets"]]
    used = {name for e in exprs for name in re.findall(r"\bopsbot_[a-z_]+", e)}
    assert used and used <= exported_names()


def test_dashboard_covers_every_exported_family() -> None:
    text = json.dumps(DASHBOARD)
    families = {f.name for f in Telemetry().registry.collect()}
    assert [f for f in sorted(families) if f not in text] == []


def test_panels_use_the_datasource_variable_and_do_not_overlap() -> None:
    assert DASHBOARD["templating"]["list"][0]["type"] == "datasource"
    cells = [(p["gridPos"]["x"], p["gridPos"]["y"]) for p in DASHBOARD["panels"]]
    assert len(cells) == len(set(cells))
    assert all(p["datasource"]["uid"] == "${datasource}" for p in DASHBOARD["panels"])
