"""The tool catalogue the model sees, pinned: any change to a name, description or schema shows in review.

After an intended change, regenerate the snapshot and commit it with the change:
    OPSBOT_UPDATE_CATALOGUE=1 .venv/bin/python -m pytest tests/tools/test_catalogue.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bot import wiring
from tests.tools.conftest import tool_settings
from tools.base import Toolbox

SNAPSHOT = Path(__file__).with_name("catalogue.snapshot.json")


def catalogue() -> list[dict[str, object]]:
    specs = wiring.build_tool_specs(tool_settings())
    return [{"name": s.name, "description": s.description, "parameters": s.parameters} for s in specs]


def test_catalogue_matches_the_committed_snapshot():
    current = json.dumps(catalogue(), indent=2, ensure_ascii=False) + "\n"
    if os.environ.get("OPSBOT_UPDATE_CATALOGUE") == "1":
        SNAPSHOT.write_text(current, encoding="utf-8")
    assert current == SNAPSHOT.read_text(encoding="utf-8"), (
        "the tool catalogue changed; review the diff and run with OPSBOT_UPDATE_CATALOGUE=1 to accept it"
    )


def test_toolbox_has_every_tool_once():
    box = wiring.build_toolbox(tool_settings())
    assert box.names == [
        "query_metrics",
        "list_services",
        "query_logs",
        "query_deploy_records",
        "query_deploy_diff",
        "find_changes",
        "calculate",
    ]
    assert box.redact is not None


def test_duplicate_tool_names_fail_at_startup():
    specs = wiring.build_tool_specs(tool_settings())
    with pytest.raises(ValueError, match="duplicate tool name 'query_logs'"):
        Toolbox([*specs, specs[2]])


def test_every_description_says_when_legal_values_and_how_much():
    for spec in wiring.build_tool_specs(tool_settings())[:6]:
        text = spec.description
        assert "Use it" in text and "Legal" in text and "Returns" in text, spec.name


def test_each_fact_is_stated_once_in_the_description_not_again_per_parameter():
    """Legal values live in the description; a parameter description would send them twice on every request."""
    for spec in wiring.build_tool_specs(tool_settings()):
        described = [name for name, prop in spec.parameters["properties"].items() if "description" in prop]
        assert described == [], spec.name
        assert all(f"{name}" in spec.description for name in spec.parameters["properties"]), spec.name
