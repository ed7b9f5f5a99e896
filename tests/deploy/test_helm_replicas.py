"""The chart refuses a fleet on a node's SQLite file: values.schema.json (which helm checks on install, upgrade and
template; checked here with jsonschema), the Deployment template's guard, and the count it hands each pod."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft7Validator

CHART = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "opsbot"
VALUES: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())
SCHEMA = Draft7Validator(json.loads((CHART / "values.schema.json").read_text()))


def values(changes: dict[str, Any]) -> dict[str, Any]:
    """The chart's values with `changes` ({"config.OPSBOT_STORE__BACKEND": ...}) applied."""
    merged = copy.deepcopy(VALUES)
    for path, value in changes.items():
        *parents, key = path.split(".")
        node = merged
        for parent in parents:
            node = node[parent]
        node[key] = value
    return merged


def problems(given: dict[str, Any]) -> list[str]:
    return sorted(f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in SCHEMA.iter_errors(given))


def test_the_default_values_one_replica_on_sqlite_pass() -> None:
    assert VALUES["replicaCount"] == 1 and VALUES["config"]["OPSBOT_STORE__BACKEND"] == "sqlite"
    assert problems(VALUES) == []


def test_replicas_on_sqlite_or_on_a_node_volume_are_refused_naming_the_values_to_change() -> None:
    found = problems(values({"replicaCount": 3}))
    assert found == [
        "config.OPSBOT_STORE__BACKEND: 'elasticsearch' was expected",
        "persistence.enabled: False was expected",
    ]
    unset = values({"replicaCount": 2})
    del unset["config"]["OPSBOT_STORE__BACKEND"]  # the default store is SQLite
    assert problems(unset)[0] == "config: 'OPSBOT_STORE__BACKEND' is a required property"


def test_replicas_on_elasticsearch_without_a_node_volume_pass() -> None:
    fleet = values({"replicaCount": 3, "config.OPSBOT_STORE__BACKEND": "elasticsearch", "persistence.enabled": False})
    assert problems(fleet) == []


def test_the_template_refuses_the_same_and_tells_each_pod_how_many_run() -> None:
    deployment = (CHART / "templates" / "deployment.yaml").read_text()
    guard = deployment.split("apiVersion:", 1)[0]
    assert "gt (int .Values.replicaCount) 1" in guard
    assert '(.Values.config.OPSBOT_STORE__BACKEND | default "sqlite") "elasticsearch"' in guard
    assert guard.count("{{- fail ") == 2
    assert "set config.OPSBOT_STORE__BACKEND=elasticsearch" in guard and "set persistence.enabled=false" in guard
    configmap = (CHART / "templates" / "configmap.yaml").read_text()
    assert "OPSBOT_SERVER__REPLICAS: {{ .Values.replicaCount | quote }}" in configmap  # doctor checks it at start
