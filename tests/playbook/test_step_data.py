"""The playbook's steps carry their tools' data, and each observation is exactly the text rendered from that data:
the model and the code that reads the data see the same facts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from bot import wiring
from bot.engine.types import Question, Step
from tests.eval.harness import sandbox_settings
from tools.analysis.ranking import render_ranking
from tools.base import ToolData, call_tool
from tools.calculate import number_to_text
from tools.database.locks import render_locks
from tools.database.replication import render_replication
from tools.database.sessions import render_connections, render_sessions
from tools.database.storage import render_storage
from tools.deploys.records import render_deploys, render_diff
from tools.kubernetes.objects import render_events, render_pods, render_rollouts
from tools.logs.render import render_logs
from tools.metrics.series import render_series, render_services
from tools.metrics.views import render_breakdown
from tools.results import KINDS
from tools.runbooks.hits import render_hits

RENDERED: dict[str, tuple[str, Callable[[Any], str]]] = {  # tool -> (its data's kind, what renders its text)
    "query_metrics": ("metric_series", render_series),
    "list_services": ("service_list", render_services),
    "query_logs": ("log_summary", render_logs),
    "query_deploy_records": ("deploy_list", render_deploys),
    "query_deploy_diff": ("diff_report", render_diff),
    "query_pods": ("pod_list", render_pods),
    "query_k8s_events": ("event_list", render_events),
    "query_rollout_history": ("rollout_history", render_rollouts),
    "search_runbooks": ("runbook_hits", render_hits),
    "query_db_sessions": ("db_sessions", render_sessions),
    "query_db_connections": ("db_connections", render_connections),
    "query_db_locks": ("db_locks", render_locks),
    "query_db_replication": ("db_replication", render_replication),
    "query_db_storage": ("db_storage", render_storage),
    "find_changes": ("change_ranking", render_ranking),
    "calculate": ("calculation", lambda c: number_to_text(c.value)),
}


# query_metrics(by=...) returns a second kind, rendered by render_breakdown (the playbook asks for it to read a
# deploy per version, a canary)
ALSO_RENDERED: dict[str, Callable[[Any], str]] = {"metric_breakdown": render_breakdown}


def test_every_kind_has_a_renderer_here() -> None:
    assert {kind for kind, _ in RENDERED.values()} | set(ALSO_RENDERED) == set(KINDS)


def assert_rendered_from_data(steps: list[Step]) -> set[str]:
    """Every tool step that answered has its tool's kind of data, and its observation is that data rendered."""
    seen = set()
    for step in steps:
        if step.action == "finish":
            continue
        if step.status == "error":
            assert step.data is None, step
            continue
        kind, render = RENDERED[step.action]
        data: ToolData | None = step.data
        assert data is not None, step
        if data.kind in ALSO_RENDERED and step.action == "query_metrics" and step.args.get("by"):
            kind, render = data.kind, ALSO_RENDERED[data.kind]
        assert data.kind == kind, step
        assert render(data) == step.observation, step.action
        seen.add(step.action)
    return seen


@pytest.mark.parametrize("name", ["hikari-pool", "crashloop-env-enum", "collection-gap", "slow-query-migration"])
def test_each_observation_is_its_data_rendered(make_sandbox, tmp_path, name):
    box = make_sandbox(name)
    settings = sandbox_settings(box, tmp_path, toolsets=True)
    toolbox = wiring.build_toolbox(settings, clock=lambda: box.now)
    steps: list[Step] = []
    wiring.build_playbook(settings)(Question(box.scenario.question), toolbox, on_step=steps.append, now=box.now)
    service = next(s.args["service"] for s in steps if s.action == "query_metrics")
    at = box.incident_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    extra: list[tuple[str, dict[str, str]]] = [
        ("find_changes", {"service": service, "around": at}),
        ("list_services", {}),
        ("query_logs", {"service": service, "range": "6h", "onset": at}),
        ("calculate", {"expression": "1180 / 212"}),
    ]
    pods = next((s.args["service"] for s in steps if s.action == "query_pods" and s.args["service"]), None)
    if pods is not None:  # a scenario with a cluster
        extra += [("query_k8s_events", {"namespace": "", "range": "1d"})]
        extra += [("query_rollout_history", {"namespace": "", "deployment": pods})]
    for tool, args in extra:
        result = call_tool(toolbox, tool, args)
        steps.append(Step(len(steps) + 1, "", tool, args, result.text, result.status, data=result.data))
    seen = assert_rendered_from_data(steps)
    assert {"query_metrics", "query_logs", "query_deploy_records", "find_changes", "list_services"} <= seen
    if name == "crashloop-env-enum":
        # every built-in tool, each with its data; the database views need a Postgres (tests/tools/database)
        assert seen == {tool for tool in RENDERED if not tool.startswith("query_db_")}
