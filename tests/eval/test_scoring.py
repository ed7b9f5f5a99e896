"""Scoring: a wrong answer is a miss, an invented number is caught, the report is stored for comparison."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from bot import wiring
from bot.config import Settings, StoreSettings
from bot.engine.types import Question, Step, StopReason, Totals, Trace
from bot.eval import (
    EvalCase,
    case_from_scenario,
    corrected_tool_errors,
    fact_named,
    report_to_dict,
    report_to_table,
    run_eval,
    says_no_incident,
)
from bot.eval.scoring import headline_from_answer
from bot.sandbox.scenario import load_scenario
from tests.eval.harness import replay_for, sandbox_settings
from tests.eval.test_suite import intent_or

WRONG_FINAL = {
    "content": "Thought: payment looks guilty.\nFinal Answer:\nRoot cause: the payment service is slow.\n"
    "Evidence:\n- payment latency.\nConfidence: low."
}
INVENTED_FINAL = {
    "content": "Thought: enough.\nFinal Answer:\nRoot cause: deploy order v2.8.1 raised maximumPoolSize from 50 to "
    "200.\nEvidence:\n- order p99 peaked at 4,321 ms.\nConfidence: high."
}


def _run_scripted(sandbox, scripted_llm, tmp_path, final: dict[str, Any]):
    replies = [*replay_for("hikari-pool", sandbox)[:-1], final]
    scripted_llm.responder = intent_or(replies)
    responder = wiring.build_responder(sandbox_settings(sandbox, tmp_path, llm_base_url=scripted_llm.base_url))
    case = case_from_scenario(sandbox.scenario)
    return run_eval([case], lambda c: responder(Question(c.question, source="eval"), None), mode="model")


def test_wrong_scripted_answer_is_scored_as_a_miss(sandbox, scripted_llm, tmp_path):
    report = _run_scripted(sandbox, scripted_llm, tmp_path, WRONG_FINAL)
    [result] = report.results
    assert not result.hit
    assert set(result.missing) == {"v2.8.1", "maximumPoolSize"}
    assert "miss hikari-pool: headline misses: v2.8.1, maximumPoolSize" in report_to_table(report)


def test_invented_number_is_caught_by_the_grounding_check(sandbox, scripted_llm, tmp_path):
    report = _run_scripted(sandbox, scripted_llm, tmp_path, INVENTED_FINAL)
    [result] = report.results
    assert result.hit  # the facts are right ...
    assert any("4,321" in claim or "4321" in claim for claim in result.unverified)  # ... the number is not
    assert report_to_dict(report)["totals"]["unverified"] >= 1


def test_facts_match_case_and_separator_insensitively():
    assert fact_named("maximumPoolSize", "raised `hikari.maximum_pool_size` to 200")
    assert fact_named("v2.8.1", "order version 2.8.1 was deployed")
    assert not fact_named("v2.8.1", "order v2.8.10 was deployed")
    assert not fact_named("maximumPoolSize", "the pool is exhausted")


def test_no_incident_needs_a_clear_statement_and_no_blamed_cause():
    assert says_no_incident("No incident found: order's metrics show no significant change.")
    assert says_no_incident("Everything looks healthy; nothing is wrong with checkout.")
    assert not says_no_incident("Likely cause: deploy v1.2 changed the timeout. There is no other issue.")
    assert not says_no_incident("p99 rose from 200 ms to 1.2 s at 15:05.")


def _step(index: int, action: str, status: str) -> Step:
    return Step(index, "t", action, {}, "obs", status)  # type: ignore[arg-type]


def test_tool_error_counts_as_corrected_only_when_the_next_step_retries_it_successfully():
    steps = (
        _step(1, "query_metrics", "error"),
        _step(2, "query_metrics", "ok"),
        _step(3, "query_logs", "error"),
        _step(4, "query_deploy_records", "ok"),
    )
    trace = Trace("t", "q", "native", steps, "a", True, StopReason.FINISH, Totals(steps=4, tool_calls=4, tool_errors=2))
    assert corrected_tool_errors(trace) == 1


def test_report_is_appended_to_the_trace_store(tmp_path):
    trace = Trace("t1", "q", "playbook", (), "No incident found.", False, StopReason.FINISH, Totals())
    report = run_eval([EvalCase("quiet", "is all ok?", (), True)], lambda c: trace, mode="playbook")
    settings = Settings(_env_file=None, store=StoreSettings(sqlite_path=tmp_path / "traces.db"))  # type: ignore[call-arg]
    store = wiring.build_store(settings)
    store.save_eval_run(report_to_dict(report))
    [saved] = store.eval_runs(limit=5)
    assert saved["run_id"] == report.run_id
    assert saved["totals"]["hits"] == 1
    json.dumps(saved)


def test_the_answer_formats_root_cause_label_is_not_blame():
    assert says_no_incident("Root cause: no incident: checkout's metrics show no change point.")
    assert not says_no_incident("Root cause: a bad deploy. There is no incident elsewhere.")


def test_only_a_scenario_that_expects_no_incident_is_scored_as_one():
    assert case_from_scenario(load_scenario("no-incident")).no_incident
    # An incident that shows only in logs has no metric timeline, yet "nothing is wrong" must not pass for it.
    logs_only = dataclasses.replace(load_scenario("cert-expiry"), timeline=())
    assert not case_from_scenario(logs_only).no_incident


def test_a_fact_found_only_in_the_evidence_is_not_a_headline_hit():
    answer = (
        "Likely cause: payment degraded first.\n\nEvidence:\n- deploy order v2.8.1 changed maximumPoolSize.\n\n"
        "Still unknown:\n- nothing specific"
    )
    trace = Trace("t", "q", "playbook", (), answer, True, StopReason.FINISH, Totals())
    result = run_eval([EvalCase("pool", "why?", ("v2.8.1", "maximumPoolSize"))], lambda c: trace, mode="playbook")
    [row] = result.results
    assert not row.hit and row.evidence_hit and set(row.missing) == {"v2.8.1", "maximumPoolSize"}
    totals = report_to_dict(result)["totals"]
    assert totals["headline_hits"] == 0 and totals["evidence_hits"] == 1
    assert headline_from_answer(answer) == "Likely cause: payment degraded first."
    assert headline_from_answer("Root cause: x.\nEvidence:\n- y") == "Root cause: x."


def _answered(answer: str) -> Trace:
    return Trace("t", "q", "playbook", (), answer, True, StopReason.FINISH, Totals())


def test_a_headline_that_blames_a_decoy_is_a_miss_even_when_it_names_the_cause():
    case = EvalCase("pool", "why?", ("v2.8.1", "maximumPoolSize"), must_not_name=("catalog v1.9.4",))
    both = "Likely cause: deploy order v2.8.1 (maximumPoolSize 50 -> 200) or catalog v1.9.4.\nEvidence:\n- x"
    decoy_in_evidence = (
        "Likely cause: deploy order v2.8.1 raised maximumPoolSize.\nEvidence:\n- catalog v1.9.4 came earlier"
    )
    report = run_eval([case], lambda c: _answered(both), mode="playbook")
    [row] = report.results
    assert not row.hit and not row.evidence_hit and row.blamed == ("catalog v1.9.4",) and row.missing == ()
    assert "miss pool: headline blames the decoy catalog v1.9.4" in report_to_table(report)
    [ruled_out] = run_eval([case], lambda c: _answered(decoy_in_evidence), mode="playbook").results
    assert ruled_out.hit and ruled_out.blamed == ()  # naming the decoy as ruled out in the evidence is fine


def test_a_scenarios_decoys_reach_its_case():
    scenario = dataclasses.replace(load_scenario("red-herring-deploy"), must_not_name=("search",))
    assert case_from_scenario(scenario).must_not_name == ("search",)


def test_a_decoy_ruled_out_in_the_headline_is_not_blamed():
    case = EvalCase("zone", "why?", ("eu-central-1b", "NotReady"), must_not_name=("v7.4.0",))
    cleared = [
        "Likely cause: zone eu-central-1b went NotReady at 14:03; not the 13:56 deploy of game-launch v7.4.0.",
        "Likely cause: nodes in eu-central-1b went NotReady, rather than game-launch v7.4.0.",
        "Likely cause: eu-central-1b NotReady. The deploy game-launch v7.4.0 came after the onset.",
        "Likely cause: eu-central-1b nodes NotReady (game-launch v7.4.0 is not the cause).",
        "Likely cause: eu-central-1b NotReady, no deploy caused this (game-launch v7.4.0 cannot explain it).",
        "Likely cause: eu-central-1b NotReady. The launch config change (game-launch/v7.4.0, 13:56 by ana) is not the "
        "mechanism: nodes failed first.",
        "Likely cause: eu-central-1b NotReady. The game-launch v7.4.0 pool change did not break launches.",
        "Likely cause: eu-central-1b NotReady. The game-launch v7.4.0 deploy is most likely not the cause.",
        "Likely cause: eu-central-1b NotReady; game-launch v7.4.0 is not dropping the launches.",
    ]
    for headline in cleared:
        [row] = run_eval([case], _answering(headline), mode="playbook").results
        assert row.hit and row.blamed == (), headline


def test_a_decoy_blamed_beside_a_ruled_out_clause_is_still_blamed():
    case = EvalCase("zone", "why?", ("eu-central-1b",), must_not_name=("v7.4.0",))
    blamed = [
        "Likely cause: deploy game-launch v7.4.0 at 13:56, not the eu-central-1b outage.",
        "Likely cause: game-launch v7.4.0 broke launches in eu-central-1b.",
        "Likely cause: eu-central-1b lost capacity; not a zone outage but game-launch v7.4.0 is to blame.",
        "Likely cause: game-launch v7.4.0 raised the pool so connections could not be served in eu-central-1b.",
        "Likely cause: the pool change (game-launch v7.4.0, 13:56) starved eu-central-1b of connections.",
        "Likely cause: game-launch v7.4.0 (not the eu-central-1b outage) starved the pool.",
    ]
    for headline in blamed:
        [row] = run_eval([case], _answering(headline), mode="playbook").results
        assert not row.hit and row.blamed == ("v7.4.0",), headline


def _answering(headline: str) -> Callable[[EvalCase], Trace]:
    return lambda case: _answered(f"{headline}\nEvidence:\n- x")
