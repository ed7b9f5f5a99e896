"""The playbook over the real tools and real backends (Prometheus, SQLite logs, git), with no model at all."""

from __future__ import annotations

import functools

import pytest

from bot import wiring
from bot.config import MetricTemplate, default_metric_catalogue
from bot.engine.types import Question, Step, StopReason
from bot.eval import fact_named
from bot.playbook.diagnosis import run_playbook, window_from_question
from bot.routing.respond import MODEL_DOWN_NOTE
from bot.wiring.toolsets import SANDBOX_RUNBOOKS
from tests.eval.harness import SANDBOX_METRICS, sandbox_settings
from tests.fakes.backends import free_port
from tests.fakes.kubeapi import FakeKubeAPI, container_status, pod

OTHER_SCENARIOS = (
    "bad-release-npe",
    "downstream-failure",
    "red-herring-deploy",
    "slow-query-migration",
    "memory-leak-oom",
    "cpu-saturation",
)


def _diagnose(box, tmp_path, text: str | None = None, steps: list[Step] | None = None, **overrides):
    settings = sandbox_settings(box, tmp_path, **overrides)
    playbook = wiring.build_playbook(settings)  # the topology and the catalogue's metric roles bound
    question = Question(text or box.scenario.question)
    return playbook(
        question,
        wiring.build_toolbox(settings, clock=lambda: box.now),
        on_step=steps.append if steps is not None else None,
        now=box.now,
    )


def _renamed_catalogue(drop_role: str = "") -> dict[str, MetricTemplate]:
    """The sandbox's catalogue under an operator's own names; `drop_role` is left without a role."""
    metrics = {**default_metric_catalogue(), **SANDBOX_METRICS}
    return {
        f"svc_{name}": m.model_copy(update={"role": "" if m.role == drop_role else m.role})
        for name, m in metrics.items()
    }


def test_default_scenario_names_the_deploy_and_the_changed_key(sandbox, tmp_path):
    trace = _diagnose(sandbox, tmp_path)
    assert trace.complete and trace.stop_reason is StopReason.FINISH
    assert "v2.8.1" in trace.answer and "maximumPoolSize 50 → 200" in trace.answer
    assert "15:02" in trace.answer  # the deploy time
    assert "HikariPool-1 - Connection is not available" in trace.answer  # the top error, quoted
    assert "WITHOUT a model" in trace.answer


def test_trace_has_the_loops_shape_and_each_step_explains_itself(sandbox, tmp_path):
    seen: list[Step] = []
    trace = _diagnose(sandbox, tmp_path, steps=seen)
    assert trace.protocol == "playbook" and trace.model == ""
    assert list(trace.steps) == seen  # every step was emitted as it happened, in order
    assert [s.index for s in trace.steps] == list(range(1, len(trace.steps) + 1))
    assert all(s.thought and s.action for s in trace.steps)
    assert trace.steps[-1].action == "finish" and "v2.8.1" in trace.steps[-1].thought  # ends as the loop does
    actions = [s.action for s in trace.steps]
    assert actions.index("query_metrics") < actions.index("query_deploy_records") < actions.index("query_deploy_diff")
    assert actions.index("query_deploy_diff") < actions.index("query_logs")
    deploy_step = trace.steps[actions.index("query_deploy_records")]
    assert "checking order's deploys" in deploy_step.thought and "15:0" in deploy_step.thought
    assert trace.totals.tool_calls == len(trace.steps) - 1 and trace.totals.tokens == 0


@pytest.mark.parametrize("name", OTHER_SCENARIOS)
def test_other_scenarios_name_their_root_cause(make_sandbox, tmp_path, name):
    box = make_sandbox(name)
    trace = _diagnose(box, tmp_path)
    missing = [f for f in box.scenario.must_name if not fact_named(f, trace.answer)]
    assert not missing, trace.answer


def test_no_named_service_scans_every_service_and_picks_the_strongest_change(sandbox, tmp_path):
    trace = _diagnose(sandbox, tmp_path, text="something is off since yesterday 15:05, can you look?")
    assert "v2.8.1" in trace.answer
    assert any("scanning" in s.thought for s in trace.steps)


def test_a_service_the_bot_does_not_know_gets_a_scan_that_says_it_chose_the_service(sandbox, tmp_path):
    # found as a new user: asked about "profile" (not in this topology), the answer was about order, and said nothing
    trace = _diagnose(sandbox, tmp_path, text="profile has been timing out since yesterday 15:05, which deploy?")
    unknowns = trace.answer.split("Still unknown:")[1]
    assert "whether this is the service you meant: the question names none I know (" in unknowns
    assert "order" in unknowns.split("none I know (")[1].split(")")[0] and "name one to check it" in unknowns


def test_backend_down_gives_an_honest_partial_answer(sandbox, tmp_path):
    down = {"url": "http://127.0.0.1:9", "timeout_s": 1.0}
    trace = _diagnose(sandbox, tmp_path, prometheus=down)
    assert not trace.complete
    assert trace.steps and trace.steps[0].status == "error"
    assert "WITHOUT a model" in trace.answer


def test_window_is_centred_on_the_time_the_question_names(sandbox):
    window = window_from_question(sandbox.scenario.question, sandbox.now)
    start, end = window.range_arg.split("/")
    assert start.endswith("13:05:00Z") and end.endswith("17:05:00Z")


def test_unreachable_llm_falls_back_to_the_playbook_through_the_full_path(sandbox, tmp_path):
    dead = free_port()  # nothing listens here: the model is configured but out of reach
    settings = sandbox_settings(sandbox, tmp_path, llm_base_url=f"http://127.0.0.1:{dead}/v1")
    trace = wiring.build_responder(settings)(Question(sandbox.scenario.question), None)
    assert trace.protocol == "playbook" and MODEL_DOWN_NOTE in trace.answer
    assert "v2.8.1" in trace.answer and "maximumPoolSize" in trace.answer


def test_an_incident_that_came_back_is_told_as_a_spike_with_its_recovery(make_sandbox, tmp_path):
    trace = _diagnose(make_sandbox("cache-stampede"), tmp_path)
    symptom = trace.answer.split("Symptom: ", 1)[1].splitlines()[0]
    assert symptom.startswith("gateway p99 latency spiked at ") and "(its level before the spike)" in symptom
    assert "it recovered to ~" in symptom and "went from" not in symptom
    assert "median" not in trace.answer


def test_renamed_catalogue_entries_are_read_by_their_role(sandbox, tmp_path):
    trace = _diagnose(sandbox, tmp_path, prometheus={"url": sandbox.prometheus_url, "metrics": _renamed_catalogue()})
    assert trace.complete and "v2.8.1" in trace.answer and "maximumPoolSize 50 → 200" in trace.answer
    assert "order svc p99 latency went from" in trace.answer  # the operator's metric name, as the tool showed it
    assert {s.args.get("metric") for s in trace.steps if s.action == "query_metrics"} >= {"svc_p99_latency"}
    assert "not checked" not in trace.answer  # every role is configured


def test_a_role_no_metric_has_is_named_in_the_answer(sandbox, tmp_path):
    metrics = _renamed_catalogue(drop_role="latency")
    trace = _diagnose(sandbox, tmp_path, prometheus={"url": sandbox.prometheus_url, "metrics": metrics})
    assert "no catalogue metric has the role latency" in trace.answer
    assert "svc_p99_latency" not in {s.args.get("metric") for s in trace.steps}


def test_a_catalogue_without_golden_roles_says_so_instead_of_finding_nothing(sandbox, tmp_path):
    metrics = {name: m.model_copy(update={"role": ""}) for name, m in default_metric_catalogue().items()}
    trace = _diagnose(sandbox, tmp_path, prometheus={"url": sandbox.prometheus_url, "metrics": metrics})
    assert not trace.complete and trace.answer.startswith("No conclusion: no metric in the catalogue has the role")
    assert "latency, errors, traffic, cpu, memory, restarts" in trace.answer
    assert [s.action for s in trace.steps] == ["finish"]


def test_playbook_without_roles_reads_no_metric_and_says_why(sandbox, tmp_path):
    settings = sandbox_settings(sandbox, tmp_path)
    trace = run_playbook(
        Question(sandbox.scenario.question), wiring.build_toolbox(settings), topology=sandbox.topology, now=sandbox.now
    )
    assert "no metric in the catalogue has the role" in trace.answer and not trace.complete


def test_unnamed_service_outside_the_topology_is_found_through_list_services(sandbox, tmp_path):
    trace = _diagnose(sandbox, tmp_path, text="something is off since yesterday 15:05, can you look?", topology={})
    assert trace.steps[0].action == "list_services" and trace.steps[0].status == "ok"
    assert "order" in trace.steps[0].observation.splitlines()
    assert "v2.8.1" in trace.answer


def test_first_catalogue_entry_with_a_role_wins(sandbox, tmp_path):
    p95 = MetricTemplate(promql="sum(up)", unit="s", description="p95", role="latency")
    metrics = {**default_metric_catalogue(), "p95_latency": p95}
    settings = sandbox_settings(sandbox, tmp_path, prometheus={"url": sandbox.prometheus_url, "metrics": metrics})
    playbook = wiring.build_playbook(settings)
    assert isinstance(playbook, functools.partial)
    roles = playbook.keywords["metric_roles"]
    assert roles == {
        "latency": "p99_latency",
        "traffic": "qps",
        "errors": "error_rate",
        "client_errors": "client_error_rate",
        "rate_limited": "rate_limited",
        "cpu": "cpu_usage",
    }


def test_the_answer_cites_the_runbook_section_that_documents_the_failure(sandbox, tmp_path):
    seen: list[Step] = []
    trace = _diagnose(sandbox, tmp_path, steps=seen, runbooks={"enabled": True, "path": str(SANDBOX_RUNBOOKS)})
    search = next(s for s in seen if s.action == "search_runbooks")
    assert "HikariPool" in search.args["query"] and search.args["service"] == "order"
    assert "the closest runbook section: Runbook: order-latency.md § Connection pool" in trace.answer


def test_without_runbooks_the_playbook_does_not_search_for_one(sandbox, tmp_path):
    trace = _diagnose(sandbox, tmp_path)
    assert "search_runbooks" not in [s.action for s in trace.steps] and "Runbook:" not in trace.answer


def test_with_kubernetes_on_the_playbook_reads_the_pods_and_cites_the_oom_kill(make_sandbox, tmp_path):
    box = make_sandbox("memory-leak-oom")
    kube = FakeKubeAPI()
    oom = container_status(
        "cart",
        ready=False,
        restarts=4,
        waiting="CrashLoopBackOff",
        last_reason="OOMKilled",
        last_exit=137,
        last_finished=box.incident_at,
    )
    kube.add("shop", "pods", pod("cart-7c9-x1", {"app": "cart"}, [oom], namespace="shop"))
    try:
        seen: list[Step] = []
        trace = _diagnose(
            box,
            tmp_path,
            steps=seen,
            runbooks={"enabled": True, "path": str(SANDBOX_RUNBOOKS)},
            kubernetes={
                "enabled": True,
                "kubeconfig": str(kube.write_kubeconfig(tmp_path / "kc")),
                "namespaces": ["shop"],
            },
        )
    finally:
        kube.stop()
    # every pod first (is one node at fault?), then the asked service's own
    assert [s.args for s in seen if s.action == "query_pods"] == [
        {"namespace": "", "service": ""},
        {"namespace": "", "service": "cart"},
    ]
    assert "cart pods: 1, 1 not ready, 4 restarts in total; OOMKilled exit 137, CrashLoopBackOff" in trace.answer
    assert "v3.1.0" in trace.answer and "expireAfterWrite" in trace.answer  # the deploy is still the cause
    assert "Runbook: pod-oomkilled.md §" in trace.answer
