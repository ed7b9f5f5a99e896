"""The Helm chart without helm (not packaged for Debian or PyPI): values references, helpers, block balance,
and each template parsed as YAML after a rough render (actions dropped, expressions replaced by a scalar)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.config import Settings
from tests.test_config import env_names

CHART = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "opsbot"
TEMPLATES = sorted((CHART / "templates").glob("*.yaml"))
VALUES: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())
_ACTION = re.compile(r"{{-?\s*(.*?)\s*-?}}", re.S)


def value_at(path: str) -> bool:
    node: Any = VALUES
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


def rough_render(text: str) -> str:
    """Drop lines that are only template actions; replace inline expressions with a plain scalar."""
    lines = [line for line in text.splitlines() if not re.fullmatch(r"\s*{{-?.*?-?}}\s*", line)]
    return _ACTION.sub("x", "\n".join(lines))


def test_chart_metadata() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2" and chart["name"] == "opsbot" and chart["type"] == "application"
    assert re.fullmatch(r"\d+\.\d+\.\d+", chart["version"])


@pytest.mark.parametrize(
    "template", [*TEMPLATES, *(CHART / "templates" / n for n in ("_helpers.tpl", "NOTES.txt"))], ids=lambda p: p.name
)
def test_every_values_reference_exists(template: Path) -> None:
    refs = set(re.findall(r"\.Values\.([A-Za-z0-9_.]+)", template.read_text()))
    assert [r for r in sorted(refs) if not value_at(r)] == []


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: p.name)
def test_blocks_balance_and_helpers_exist(template: Path) -> None:
    text = template.read_text()
    actions = _ACTION.findall(text)
    opened = sum(1 for a in actions if re.match(r"(if|range|with|define)\b", a))
    assert opened == sum(1 for a in actions if a == "end")
    defined = set(re.findall(r'define "([^"]+)"', (CHART / "templates" / "_helpers.tpl").read_text()))
    assert set(re.findall(r'include "([^"]+)"', text)) <= defined


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("deployment.yaml", "Deployment"),
        ("service.yaml", "Service"),
        ("configmap.yaml", "ConfigMap"),
        ("servicemonitor.yaml", "ServiceMonitor"),
        ("pvc.yaml", "PersistentVolumeClaim"),
        ("pdb.yaml", "PodDisruptionBudget"),
        ("serviceaccount.yaml", "ServiceAccount"),
        ("role.yaml", "Role"),
        ("rolebinding.yaml", "RoleBinding"),
    ],
)
def test_templates_are_yaml_of_their_kind(name: str, kind: str) -> None:
    doc = yaml.safe_load(rough_render((CHART / "templates" / name).read_text()))
    assert doc["kind"] == kind and doc["metadata"]["name"] in ("x", "x-read")


def test_deployment_has_probes_secret_reference_and_no_root() -> None:
    doc = yaml.safe_load(rough_render((CHART / "templates" / "deployment.yaml").read_text()))
    container = doc["spec"]["template"]["spec"]["containers"][0]
    assert container["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert {"configMapRef", "secretRef"} <= {k for source in container["envFrom"] for k in source}
    assert "existingSecret" in (CHART / "templates" / "deployment.yaml").read_text()
    assert VALUES["podSecurityContext"]["runAsNonRoot"] is True
    assert VALUES["securityContext"]["readOnlyRootFilesystem"] is True


def test_configmap_values_are_real_non_secret_settings() -> None:
    names = set(env_names(Settings))
    assert set(VALUES["config"]) <= names
    assert not [k for k in VALUES["config"] if re.search(r"TOKEN|KEY|SECRET|PASSWORD", k)]


def test_several_replicas_get_redis_a_rolling_update_and_a_disruption_budget() -> None:
    deployment = (CHART / "templates" / "deployment.yaml").read_text()
    assert "gt (int .Values.replicaCount) 1" in deployment and "RollingUpdate" in deployment
    assert "maxUnavailable: 0" in deployment and "terminationGracePeriodSeconds" in deployment
    assert "OPSBOT_REDIS__URL" in deployment and 'include "opsbot.redisUrl"' in deployment
    pdb = (CHART / "templates" / "pdb.yaml").read_text()
    assert pdb.startswith("{{- if gt (int .Values.replicaCount) 1 }}")
    # the grace period outlasts opsbot's own drain (OPSBOT_SERVER__SHUTDOWN_DRAIN_S)
    assert VALUES["terminationGracePeriodSeconds"] > Settings().server.shutdown_drain_s


def test_the_charts_own_redis_is_never_selected_as_an_opsbot_pod() -> None:
    docs = list(yaml.safe_load_all(rough_render((CHART / "templates" / "redis.yaml").read_text())))
    assert [d["kind"] for d in docs] == ["Deployment", "Service"]
    redis_text = (CHART / "templates" / "redis.yaml").read_text()
    assert "opsbot.selectorLabels" not in redis_text and "opsbot.redisSelectorLabels" in redis_text
    helpers = (CHART / "templates" / "_helpers.tpl").read_text()
    assert '{{ include "opsbot.name" . }}-redis' in helpers


def test_the_role_is_read_only_and_bound_to_the_pods_service_account() -> None:
    role = yaml.safe_load(rough_render((CHART / "templates" / "role.yaml").read_text()))
    granted = {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    assert {verb for _, _, verb in granted} == {"get", "list"}
    assert {resource for _, resource, _ in granted} == {"pods", "events", "deployments", "replicasets"}
    binding = (CHART / "templates" / "rolebinding.yaml").read_text()
    assert 'name: {{ include "opsbot.serviceAccountName" $ }}' in binding and "kind: ServiceAccount" in binding
    deployment = (CHART / "templates" / "deployment.yaml").read_text()
    assert 'serviceAccountName: {{ include "opsbot.serviceAccountName" . }}' in deployment
