"""Suspects, not the nearest deploy; honest under failure: the playbook over the real Prometheus, SQLite and git."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot import wiring
from bot.engine.types import Question
from bot.eval import fact_named
from bot.eval.scoring import headline_from_answer
from tests.eval.harness import sandbox_settings


def _diagnose(box, tmp_path: Path, text: str | None = None, **overrides):
    settings = sandbox_settings(box, tmp_path, **overrides)
    tools = wiring.build_toolbox(settings, clock=lambda: box.now)  # the sandbox's clock, as the playbook's
    return wiring.build_playbook(settings)(Question(text or box.scenario.question), tools, now=box.now)


def test_the_earlier_of_two_deploys_is_blamed_when_its_diff_explains_the_symptom(make_sandbox, tmp_path):
    trace = _diagnose(make_sandbox("two-deploys-earlier"), tmp_path)
    headline = headline_from_answer(trace.answer)
    assert trace.complete
    assert "v3.3.0" in headline and "commandTimeout 2000 → 20" in headline
    assert "v3.3.1" not in headline  # one cause in the headline; the nearer deploy is the runner-up, said apart
    assert "the runner-up: deploy profile v3.3.1" in trace.answer and "what would tell them apart" in trace.answer


def test_a_surge_in_another_caller_of_the_shared_database_is_the_top_suspect(make_sandbox, tmp_path):
    trace = _diagnose(make_sandbox("batch-job-shared-db"), tmp_path)
    headline = headline_from_answer(trace.answer)
    assert headline.startswith("Likely cause: a traffic surge in reporting, another caller of the shared orders-db")
    assert any(s.args.get("service") == "reporting" and s.action == "query_metrics" for s in trace.steps)


def test_a_leak_deployed_hours_before_the_first_oom_kill_is_found(make_sandbox, tmp_path):
    trace = _diagnose(make_sandbox("leak-deploy-hours-before"), tmp_path)
    headline = headline_from_answer(trace.answer)
    assert fact_named("v1.14.0", headline) and fact_named("user_id", headline)
    assert any("h before the onset" in s.thought for s in trace.steps if s.action == "query_deploy_records")


def test_a_users_clock_time_is_checked_against_the_onset(sandbox, tmp_path):
    text = "why did the order service's p99 latency jump yesterday around 14:20?"
    trace = _diagnose(sandbox, tmp_path, text=text)
    assert "You said 14:20; the" in trace.answer and "change starts at 15:0" in trace.answer


DOWN: dict[str, dict[str, Any]] = {
    "Prometheus": {"prometheus": {"url": "http://127.0.0.1:9", "timeout_s": 1.0}},
    "the log store": {"logs": {"backend": "sqlite", "sqlite_path": "/nonexistent/opsbot/logs.db"}},
    "the deploy source": {"deploys": {"source": "git", "git_repo": "/nonexistent/opsbot/deploys"}},
}


@pytest.mark.parametrize("backend", list(DOWN))
@pytest.mark.parametrize("scenario", ["hikari-pool", "batch-job-shared-db", "cache-stampede"])
def test_with_each_backend_down_no_answer_is_complete_and_the_backend_is_named(
    make_sandbox, tmp_path, scenario, backend
):
    # a deploy's cause, a cause with no deploy, and one the WARN logs explain: none may rest on a failed check
    trace = _diagnose(make_sandbox(scenario), tmp_path, **DOWN[backend])
    assert not trace.complete, trace.answer
    assert f"Partial: {backend} could not be read" in headline_from_answer(trace.answer)
    assert "not checked:" in trace.answer
    assert "No deploy of" not in trace.answer or backend != "the deploy source"


def test_a_connection_cap_lowered_hours_before_the_daily_peak_is_named_over_a_nearer_deploy(make_sandbox, tmp_path):
    box = make_sandbox("loyalty-points-afternoon-500s")
    trace = _diagnose(box, tmp_path)
    headline = headline_from_answer(trace.answer)
    assert all(fact_named(f, headline) for f in ("loyalty-db", "max_connections", "too many clients"))
    assert not fact_named("rewards-api v4.2.0", headline)  # the deploy just before the onset is not the cause
    wide = [s for s in trace.steps if s.action == "query_deploy_records" and "hours after it lands" in s.thought]
    assert wide, "the day before the onset was read for changes whose effect can wait"


def test_a_steady_asked_service_hands_over_to_the_neighbour_that_degraded(make_sandbox, tmp_path):
    box = make_sandbox("lms-quiz-answers")
    headline = headline_from_answer(_diagnose(box, tmp_path).answer)
    assert headline.startswith("quiz-db itself looks healthy")
    assert fact_named("quiz-engine", headline) and fact_named("MaxRAMPercentage", headline)


def test_nodes_lost_under_several_services_at_once_are_the_cause_not_a_deploy(make_sandbox, tmp_path):
    box = make_sandbox("grocery-checkout-order-errors")
    trace = _diagnose(box, tmp_path, toolsets=True)  # the Kubernetes API stand-in, as `opsbot eval` has it
    headline = headline_from_answer(trace.answer)
    assert "no deploy caused this" in headline and fact_named("NotReady", headline)
    assert fact_named("eu-central-1b", headline) and not fact_named("courier-dispatch v3.0.0", headline)
    assert any(s.action == "query_k8s_events" for s in trace.steps)


def test_the_suspects_a_named_cause_rules_out_are_under_still_unknown_not_evidence(make_sandbox, tmp_path):
    trace = _diagnose(make_sandbox("two-deploys-earlier"), tmp_path)
    evidence, unknown = trace.answer.split("Evidence:")[1].split("Still unknown:")
    assert "suspect 1: deploy profile v3.3.0" in evidence and "profile/v3.3.0" in evidence, trace.answer
    assert "changed spring.redis.lettuce.commandTimeout: 2000 → 20" in evidence, trace.answer
    assert "suspect 2" not in evidence and "v3.3.1" not in evidence, trace.answer  # the runner-up's record or diff
    assert "the runner-up: deploy profile v3.3.1" in unknown, trace.answer
