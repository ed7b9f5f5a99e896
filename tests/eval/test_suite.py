"""The eval harness over every scenario, twice: with the playbook and with ScriptedLLM replays.

Each run takes the full path a user's question takes (wiring.build_responder: intent gate -> loop or
playbook -> tools -> the scenario's real Prometheus, SQLite logs and git deploy repo). Sandboxes come from
the session-scoped `make_sandbox` fixture (tests/fakes/backends.py), so each scenario's Prometheus
starts once for both modes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from bot import wiring
from bot.engine.types import Question, Trace
from bot.eval import EvalCase, EvalReport, case_from_scenario, report_to_table, run_eval
from bot.sandbox.scenario import HELDOUT, load_scenario, scenario_names
from tests.eval.conftest import record_report
from tests.eval.harness import replay_for, replay_names, sandbox_settings

DEFAULT = "hikari-pool"
# Scored strictly (the headline must name the facts; a decoy blamed is a miss). The bar is 90 % of the whole suite.
# The suite holds 109: the 34 written with the playbook score 34/34 (24 + the three that need the Kubernetes and runbook
# toolsets + the two whose incident is older than the default 24 h window + two dependencies that stopped serving +
# two of them beside a wobbling sibling + a gap in metrics collection), the 16 written blind by outside authors 16/16
# (0/16 at first, then 8/16; tests/eval/blind_scores.md) once the playbook has hypotheses without a deploy (a zone or
# node gone, a drain, an operation by a named actor, a credential refused, stale data from a producer, a 429 the error
# rate does not count, a retry setting's storm), and 12 more written blind as training data 12/12 (5/12 at each of 6
# run clocks at first) once those hypotheses are weighed against the deploys on the same evidence (a leak hours old in
# the dependency that ran out of heap, the deepest degraded service's canary, nodes lost under pods the walk did not
# survey, a drain of a steady store, stale data three hops out, a campaign on a shared provider account, a day-old
# retry setting): 62/62 at each of 6 run clocks. 11 more written blind as training data (operations, databases, third
# parties) 11/11 (1/11 at first) once a statement's session holding others up, a neighbour's pool taking a shared
# server's slots, a caller's retries, the host that refuses a credential, a status a healthy service's neighbour
# receives and data a paused replay left behind are weighed: 73/73 at each of 6 run clocks. 12 more written blind as
# training data (infrastructure, runtime flags, rollouts, stale data; 5/12 at first) once a canary is read per version,
# a reconnect storm, a node at fault, stale data at any level and a runtime flag's own lines are weighed: 85/85 at
# each of 6 run clocks (b9024c1). 12 more written blind as training data (capacity, zones, failovers, DDL, stale
# data, a third party's 429, a canary, a log level, GC flags; 6/12 at first) once a failover storm, a throttled
# statement, a shared limit and stale data's own start are weighed: 97/97 at each of 6 run clocks (8c5d733). 12 more
# written blind as training data (9/12 at first) once a migration on another table than the one sessions wait on, a
# caller's change followed at once by its shared dependency's surge and retry lines as clients log them are weighed.
# Two misses fail CI.
PLAYBOOK_MIN_HITS = 108
# The held-out scenarios were written before the playbook was tuned and are never tuned on: this floor guards
# the bar of 75 %, and the table is printed so the held-out number is always reported apart from the suite's.
# 11/11 at each of 8 run clocks (00:05 … 21:00) once the walk weighs changes (crashloop-renamed-flag and
# session-store-bind-localhost had depended on the clock), so the floor is 9: two misses still pass.
HELDOUT_MIN_HITS = 9
# ScriptedLLM replays over the held-out scenarios (tests/fixtures/replays/heldout/): written after the scenarios,
# like the suite's. The floor is what they score today minus one; the table is printed either way.
HELDOUT_REPLAY_MIN_HITS = 5


def _full_path(settings: Any) -> Callable[[str], Trace]:
    responder = wiring.build_responder(settings)
    return lambda text: responder(Question(text, source="eval"), None)


@pytest.fixture(scope="module")
def playbook_report(make_sandbox, tmp_path_factory) -> EvalReport:
    state = tmp_path_factory.mktemp("eval-playbook")

    def diagnose(case: EvalCase) -> Trace:
        settings = sandbox_settings(make_sandbox(case.name), state, toolsets=True)
        return _full_path(settings)(case.question)

    cases = [case_from_scenario(load_scenario(n)) for n in scenario_names()]
    report = run_eval(cases, diagnose, mode="playbook")
    record_report("opsbot eval: playbook (no model) over the suite", report_to_table(report))
    return report


@pytest.fixture(scope="module")
def heldout_report(make_sandbox, tmp_path_factory) -> EvalReport:
    state = tmp_path_factory.mktemp("eval-heldout")

    def diagnose(case: EvalCase) -> Trace:
        return _full_path(sandbox_settings(make_sandbox(case.scenario_ref), state, toolsets=True))(case.question)

    cases = [case_from_scenario(load_scenario(ref), source=ref) for ref in scenario_names(HELDOUT)]
    report = run_eval(cases, diagnose, mode="playbook", scenario_set=HELDOUT)
    record_report("opsbot eval: playbook (no model) over the held-out scenarios", report_to_table(report))
    return report


def test_playbook_holds_up_on_the_held_out_scenarios(heldout_report: EvalReport):
    assert len(heldout_report.results) == len(scenario_names(HELDOUT)) >= 6
    assert heldout_report.hits >= HELDOUT_MIN_HITS, report_to_table(heldout_report)


def intent_or(replies: list[dict[str, Any]]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Serve the replay in order; an intent-classification request (no tools, intent prompt) gets "diagnose"."""
    pending = list(replies)

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        system = str((body.get("messages") or [{}])[0].get("content", ""))
        if not body.get("tools") and system.startswith("You route messages"):
            return {"content": '{"route": "diagnose", "confidence": 0.9, "reason": "asks why"}'}
        return pending.pop(0) if pending else {"status": 500, "message": "replay exhausted"}

    return respond


def _replayed(make_sandbox: Any, llm: Any, state: Any, folder: str, title: str) -> EvalReport:
    """Every scenario of `folder` ("" = the suite) through the full path, the model's replies from its replay."""

    def diagnose(case: EvalCase) -> Trace:
        box = make_sandbox(case.scenario_ref)
        llm.reset()
        llm.responder = intent_or(replay_for(case.scenario_ref, box))
        settings = sandbox_settings(box, state, llm_base_url=llm.base_url, toolsets=True)
        return _full_path(settings)(case.question)

    cases = [case_from_scenario(load_scenario(ref), source=ref) for ref in scenario_names(folder)]
    report = run_eval(cases, diagnose, mode="model", model="scripted-model", scenario_set=folder or "suite")
    llm.reset()
    record_report(f"opsbot eval: ScriptedLLM replays over {title}", report_to_table(report))
    return report


@pytest.fixture(scope="module")
def replay_report(make_sandbox, tmp_path_factory, scripted_llm_server) -> EvalReport:
    return _replayed(make_sandbox, scripted_llm_server, tmp_path_factory.mktemp("eval-replay"), "", "the suite")


@pytest.fixture(scope="module")
def heldout_replay_report(make_sandbox, tmp_path_factory, scripted_llm_server) -> EvalReport:
    state = tmp_path_factory.mktemp("eval-heldout-replay")
    return _replayed(make_sandbox, scripted_llm_server, state, HELDOUT, "the held-out scenarios")


def test_replayed_model_runs_hold_up_on_the_held_out_scenarios(heldout_replay_report: EvalReport):
    assert len(heldout_replay_report.results) == len(scenario_names(HELDOUT))
    assert heldout_replay_report.hits >= HELDOUT_REPLAY_MIN_HITS, report_to_table(heldout_replay_report)
    for result in heldout_replay_report.results:
        assert result.error == "" and result.unverified == (), result


def test_playbook_names_the_root_cause_on_the_default_and_most_others(playbook_report: EvalReport):
    hits = {r.scenario for r in playbook_report.results if r.hit}
    assert DEFAULT in hits
    assert len(hits) >= PLAYBOOK_MIN_HITS, report_to_table(playbook_report)
    assert playbook_report.evidence_hits >= PLAYBOOK_MIN_HITS, report_to_table(playbook_report)


def test_playbook_runs_are_labelled_and_never_fail(playbook_report: EvalReport):
    for result in playbook_report.results:
        assert result.error == "", result
        assert result.protocol == "playbook" and result.route in ("diagnose", "lookup")
        assert result.prompt_tokens == 0 and result.completion_tokens == 0


def test_every_scenario_was_diagnosed_from_its_own_data(playbook_report: EvalReport):
    # tests/sandbox/test_every_scenario.py checks each scenario's series in Prometheus; here each playbook run
    # got real observations back (a run against an empty or missing backend would find nothing to cite).
    assert [r.scenario for r in playbook_report.results] == scenario_names()
    assert all(r.tool_calls > r.tool_errors for r in playbook_report.results), report_to_table(playbook_report)


def test_replayed_model_runs_score_every_scenario(replay_report: EvalReport):
    misses = [r for r in replay_report.results if not r.hit]
    assert not misses, report_to_table(replay_report)
    for result in replay_report.results:
        assert result.protocol == "native" and result.stop_reason == "finish"
        assert result.prompt_tokens > 0 and result.completion_tokens > 0
        assert result.unverified == (), result
    by_name = {r.scenario: r for r in replay_report.results}
    # the replays include an empty reply (dns-failure) and a tool error fixed on the next step (downstream-failure)
    assert by_name["dns-failure"].format_errors == 1 and by_name["dns-failure"].format_error_rate > 0
    assert by_name["downstream-failure"].tool_errors == 1 and by_name["downstream-failure"].tool_errors_corrected == 1


def test_replay_file_exists_for_every_scenario():
    assert replay_names() == scenario_names()
    assert replay_names(HELDOUT) == scenario_names(HELDOUT)
