"""Shared by the eval and playbook tests: Settings for a running sandbox, and the ScriptedLLM replays.

Replays are data (tests/fixtures/replays/<scenario>.json, the held-out ones under heldout/): the model replies
of a realistic ReAct run over the real tools. Times in them are written as placeholders filled from the
sandbox's incident time, so the same file works on any day: $window (incident -2 h / +2 h, ISO interval),
$incident, $deploys_start / $deploys_end (incident -60 min / +5 min), $logs_start / $logs_end (incident
-30 min / +30 min).
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from string import Template
from typing import Any

from bot.config import MetricTemplate, Settings, default_metric_catalogue
from bot.sandbox.control import SANDBOX_METRIC_TEMPLATES

REPLAYS = Path(__file__).resolve().parent.parent / "fixtures" / "replays"

# The sandbox's extra catalogue entries (its Prometheus also holds memory and restart series).
SANDBOX_METRICS = {name: MetricTemplate.model_validate(t) for name, t in SANDBOX_METRIC_TEMPLATES.items()}


def sandbox_settings(
    box: Any, state_dir: Path, *, llm_base_url: str = "", toolsets: bool = False, **overrides: Any
) -> Settings:
    """Settings pointing every backend at `box` (a RunningSandbox); no LLM unless a base URL is given.

    toolsets=True also turns on what `opsbot eval` turns on: the runbooks of the sandbox's repository and, for a
    scenario with a cluster, its Kubernetes API stand-in."""
    values: dict[str, Any] = {
        "llm": {
            "base_url": llm_base_url,
            "api_key": "test" if llm_base_url else "",
            "max_retries": 0,
            "model": "scripted-model",
            "timeout_s": 10.0,
        },
        "prometheus": {"url": box.prometheus_url, "metrics": {**default_metric_catalogue(), **SANDBOX_METRICS}},
        "logs": {"backend": "sqlite", "sqlite_path": box.logs_db},
        "deploys": {"source": "git", "git_repo": box.git_repo},
        "topology": box.topology,
        "store": {"backend": "sqlite", "sqlite_path": state_dir / "traces.db"},
        "agent": {"max_steps": 10, "time_budget_s": 60.0},
    }
    if toolsets:
        values["runbooks"] = {"enabled": True, "path": box.runbooks_dir}
    if toolsets and box.kubeconfig is not None:
        namespaces = list(box.scenario.kube_namespaces) or [box.kube_namespace]  # node events live in "default"
        values["kubernetes"] = {"enabled": True, "kubeconfig": str(box.kubeconfig), "namespaces": namespaces}
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def replay_names(folder: str = "") -> list[str]:
    """Scenario refs with a replay, as scenario_names gives them ("heldout/<name>" for folder="heldout")."""
    prefix = f"{folder}/" if folder else ""
    return sorted(prefix + p.stem for p in (REPLAYS / folder).glob("*.json"))


def replay_for(name: str, box: Any) -> list[dict[str, Any]]:
    """The scripted replies for scenario `name`, with times filled from the sandbox's incident."""
    incident = box.incident_at

    def iso(delta_minutes: int) -> str:
        return (incident + timedelta(minutes=delta_minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")

    values = {
        "window": f"{iso(-120)}/{iso(120)}",
        "incident": iso(0),
        "deploys_start": iso(-60),
        "deploys_end": iso(5),
        "logs_start": iso(-30),
        "logs_end": iso(30),
    }
    text = Template((REPLAYS / f"{name}.json").read_text(encoding="utf-8")).substitute(values)
    replies: list[dict[str, Any]] = json.loads(text)["replies"]
    return replies
