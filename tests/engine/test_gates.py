"""Every gate stops the run with its own stop reason and a labelled partial answer, never in silence."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from bot.engine.guards import action_signature, counted_steps, gate_after_step, gate_before_call, normalise_value
from bot.engine.loop import run_agent
from bot.engine.types import Budget, Question, Step, StopReason, Trace
from tests.engine.engine_tools import engine_toolbox
from tests.fakes.llm import ScriptedLLM, scripted_openai_llm, unanswered_tool_call_ids
from tools.base import Toolbox
from tools.calculate import calculate_tool

QUESTION = Question("Why is order p99 latency high since 15:05?")
CONCLUSION = {"content": "Established: p99 rose at 15:05. Likely cause: not yet identified. Check next: deploys."}


def call(name: str, **args: object) -> dict[str, object]:
    return {"name": name, "arguments": args}


def endless_calls(body: dict[str, Any]) -> dict[str, Any]:
    """A model that always wants one more, different, query (the conclusion request has no tools)."""
    if "tools" not in body:
        return CONCLUSION
    n = str(body["messages"][-1]["content"]).count("\n#") + 2  # one more step line each turn
    return {"content": f"Look at window {n}.", "tool_calls": [call("query_logs", service="order", range=f"{n}h")]}


def run(scripted: ScriptedLLM, budget: Budget, protocol: str = "native") -> Trace:
    return run_agent(QUESTION, scripted_openai_llm(scripted), engine_toolbox(), budget, protocol=protocol)  # type: ignore[arg-type]


def assert_partial(trace: Trace, reason: StopReason, scripted: ScriptedLLM) -> None:
    assert trace.stop_reason is reason
    assert not trace.complete
    assert trace.answer.startswith("Partial answer: the investigation stopped because")
    assert "not a confirmed root cause" in trace.answer
    assert all(unanswered_tool_call_ids(r.messages) == [] for r in scripted.chat_requests)


def test_max_steps_gate_asks_for_a_conclusion_without_tools(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.responder = endless_calls
    trace = run(scripted_llm, Budget(max_steps=3))

    assert_partial(trace, StopReason.MAX_STEPS, scripted_llm)
    assert len(trace.steps) == 3
    assert "3 of 3 steps used" in trace.answer
    assert "Established: p99 rose at 15:05." in trace.answer
    conclusion = scripted_llm.chat_requests[-1]
    assert "tools" not in conclusion.body
    assert "the step budget was used up" in conclusion.messages[0]["content"]
    assert "HikariPool" in conclusion.messages[1]["content"]  # the observations so far are in it
    assert all(m["role"] in ("system", "user") for m in conclusion.messages)
    assert trace.totals.prompt_tokens > sum(s.prompt_tokens for s in trace.steps)  # the conclusion is counted


def test_time_budget_gate(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {"content": "Slow check.", "tool_calls": [call("slow_check", seconds=0.3)]},
        CONCLUSION,
    )
    trace = run(scripted_llm, Budget(time_budget_s=0.2))

    assert_partial(trace, StopReason.TIME_BUDGET, scripted_llm)
    assert "the time budget ran out" in trace.answer
    assert [s.action for s in trace.steps] == ["slow_check"]


def test_a_tool_never_runs_past_the_time_budget(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"content": "Slow.", "tool_calls": [call("slow_check", seconds=3)]}, CONCLUSION)
    trace = run_agent(
        QUESTION, scripted_openai_llm(scripted_llm), engine_toolbox(), Budget(time_budget_s=1.0), tool_timeout_s=20.0
    )

    assert trace.steps[0].status == "error" and "timed out after 1 s" in trace.steps[0].observation
    assert trace.stop_reason is StopReason.TIME_BUDGET


def test_token_budget_gate_stops_before_the_next_call_would_exceed_it(scripted_llm: ScriptedLLM) -> None:
    usage = {"prompt_tokens": 9_000, "completion_tokens": 500}
    scripted_llm.script(
        {"content": "Metrics.", "tool_calls": [call("query_metrics", service="order", metric="qps")], "usage": usage},
        {"content": "Logs.", "tool_calls": [call("query_logs", service="order")], "usage": usage},
        {"content": "Deploys.", "tool_calls": [call("query_deploy_records", service="order")], "usage": usage},
        CONCLUSION,
    )
    trace = run(scripted_llm, Budget(token_budget=25_000))

    assert_partial(trace, StopReason.TOKEN_BUDGET, scripted_llm)
    # 2 steps used 19,000; a third prompt of at least 9,000 would pass 25,000
    assert len(trace.steps) == 2
    assert "19,000 tokens used of 25,000" in trace.answer


def test_repeated_action_gate_sees_through_key_order_case_whitespace_and_units(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {"content": "Logs.", "tool_calls": [call("query_logs", service="order", level="ERROR", range="1h")]},
        {"content": "Again.", "tool_calls": [call("query_logs", range="60m", level=" error ", service="Order")]},
        CONCLUSION,
    )
    trace = run(scripted_llm, Budget())

    assert_partial(trace, StopReason.REPEATED_ACTION, scripted_llm)
    assert [s.status for s in trace.steps] == ["ok", "refused"]
    assert "repeats step 1" in trace.steps[1].observation
    assert "it asked again for query_logs" in trace.answer


def test_default_arguments_count_for_repetition(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {"content": "Deploys.", "tool_calls": [call("query_deploy_records", service="order")]},
        {"content": "Again.", "tool_calls": [call("query_deploy_records", service="order", range="24h")]},
        CONCLUSION,
    )
    assert run(scripted_llm, Budget()).stop_reason is StopReason.REPEATED_ACTION


def test_a_failed_call_may_be_retried_once(scripted_llm: ScriptedLLM) -> None:
    bad = call("query_metrics", service="orders", metric="qps")
    scripted_llm.script(
        {"content": "Try.", "tool_calls": [bad]},
        {"content": "Retry.", "tool_calls": [bad]},
        {"content": "Again.", "tool_calls": [bad]},
        CONCLUSION,
    )
    trace = run(scripted_llm, Budget())

    assert [s.status for s in trace.steps] == ["error", "error", "refused"]
    assert trace.stop_reason is StopReason.REPEATED_ACTION


def test_format_error_gate_after_three_unreadable_replies(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {"content": "hmm, let me think about this"},
        {"content": "maybe the database"},
        {"content": "I am not sure"},
        CONCLUSION,
    )
    trace = run(scripted_llm, Budget(), protocol="text")

    assert_partial(trace, StopReason.FORMAT_ERRORS, scripted_llm)
    assert [s.status for s in trace.steps] == ["format_error"] * 3
    assert "3 unreadable replies in a row" in trace.answer


def test_forced_finish_mid_exchange_leaves_no_unanswered_tool_call_id(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {
            "content": "Two things.",
            "tool_calls": [
                call("query_metrics", service="order", metric="qps"),
                call("query_logs", service="order"),
                call("query_deploy_records", service="order"),
            ],
        },
        CONCLUSION,
    )
    trace = run(scripted_llm, Budget(max_steps=1))

    assert_partial(trace, StopReason.MAX_STEPS, scripted_llm)
    assert len(scripted_llm.chat_requests) == 2


def test_when_the_conclusion_call_fails_the_answer_is_built_from_observations(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {"content": "Metrics.", "tool_calls": [call("query_metrics", service="order", metric="p99_latency")]},
        {"status": 500, "repeat": 2},
    )
    trace = run(scripted_llm, Budget(max_steps=1))

    assert_partial(trace, StopReason.MAX_STEPS, scripted_llm)
    assert "The LLM was unavailable for the conclusion" in trace.answer
    assert "query_metrics" in trace.answer and "change: 15:05 212 ms -> 1,180 ms (x5.6)" in trace.answer
    assert any("conclusion" in note for note in trace.notes)


def test_oversized_arguments_are_refused_as_an_observation(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {"content": "Search.", "tool_calls": [call("query_logs", service="order", query="x" * 2_500)]},
        {"content": "Shorter.", "tool_calls": [call("query_logs", service="order", query="timeout")]},
        {"content": "Final Answer: pool timeouts."},
    )
    trace = run(scripted_llm, Budget())

    assert [s.status for s in trace.steps] == ["refused", "ok", "ok"]
    assert "the limit is 2,000" in trace.steps[0].observation
    assert trace.complete


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ({"service": "order", "range": "1h"}, {"range": "60m", "service": "order"}),
        ({"range": "1h"}, {"range": "3600s"}),
        ({"range": "90m"}, {"range": "1.5h"}),
        ({"level": "ERROR"}, {"level": "error"}),
        ({"service": "order"}, {"service": "  order "}),
        ({"limit": 5}, {"limit": 5.0}),
        ({"query": "connection   timeout"}, {"query": "connection timeout"}),
    ],
)
def test_signature_treats_equivalent_arguments_as_equal(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert action_signature("t", a) == action_signature("t", b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ({"range": "1h"}, {"range": "2h"}),
        ({"service": "order"}, {"service": "payment"}),
        ({"query": "Connection Timeout in pool"}, {"query": "connection timeout in pool"}),  # free text keeps case
    ],
)
def test_signature_tells_different_arguments_apart(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert action_signature("t", a) != action_signature("t", b)


def test_normalise_value_recurses_into_lists() -> None:
    assert normalise_value(["1h", "WARN"]) == ["3600s", "warn"]


def step(index: int, status: str, tokens: int = 0) -> Step:
    return Step(index, "", "t", {}, "", status, prompt_tokens=tokens)  # type: ignore[arg-type]


def test_gate_before_call_order_and_thresholds() -> None:
    budget = Budget(max_steps=2, time_budget_s=10, token_budget=1_000)
    assert gate_before_call([], budget, elapsed_s=0, tokens_used=0) is None
    assert gate_before_call([step(1, "ok"), step(2, "ok")], budget, elapsed_s=0, tokens_used=0) is StopReason.MAX_STEPS
    assert gate_before_call([], budget, elapsed_s=10, tokens_used=0) is StopReason.TIME_BUDGET
    assert gate_before_call([step(1, "ok", 400)], budget, elapsed_s=0, tokens_used=600) is StopReason.TOKEN_BUDGET
    assert gate_before_call([step(1, "ok", 300)], budget, elapsed_s=0, tokens_used=600) is None


def test_format_error_streak_resets_after_a_good_step() -> None:
    budget = Budget(max_format_errors=2)
    assert gate_after_step([step(1, "format_error"), step(2, "ok"), step(3, "format_error")], budget) is None
    assert gate_after_step([step(1, "format_error"), step(2, "format_error")], budget) is StopReason.FORMAT_ERRORS


def calculation_step(index: int) -> Step:
    return Step(index, "", "calculate", {"expression": f"{index} / 2"}, str(index / 2), "ok")


def test_the_first_calculations_of_a_run_do_not_count_against_the_step_budget() -> None:
    budget = Budget(max_steps=2)
    free = [step(1, "ok"), calculation_step(2), calculation_step(3), calculation_step(4)]
    assert counted_steps(free) == 1
    assert gate_before_call(free, budget, elapsed_s=0, tokens_used=0) is None
    past_the_cap = [*free, calculation_step(5)]  # the fourth calculation counts like any call
    assert counted_steps(past_the_cap) == 2
    assert gate_before_call(past_the_cap, budget, elapsed_s=0, tokens_used=0) is StopReason.MAX_STEPS


def test_free_calculations_still_count_against_time_and_tokens() -> None:
    budget = Budget(max_steps=8, time_budget_s=10, token_budget=1_000)
    calculations = [calculation_step(1), calculation_step(2)]
    assert gate_before_call(calculations, budget, elapsed_s=10, tokens_used=0) is StopReason.TIME_BUDGET
    assert gate_before_call(calculations, budget, elapsed_s=0, tokens_used=1_000) is StopReason.TOKEN_BUDGET


def endless_calculations() -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A model that asks for one more, different, ratio every turn."""
    asked = itertools.count(1)

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        if "tools" not in body:
            return CONCLUSION
        return {"content": "One more ratio.", "tool_calls": [call("calculate", expression=f"{next(asked)} / 7")]}

    return reply


def test_a_model_looping_on_calculate_is_stopped_after_its_free_calls(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.responder = endless_calculations()
    toolbox = Toolbox([*engine_toolbox(), calculate_tool()])
    trace = run_agent(QUESTION, scripted_openai_llm(scripted_llm), toolbox, Budget(max_steps=3))

    assert_partial(trace, StopReason.MAX_STEPS, scripted_llm)
    assert [s.action for s in trace.steps] == ["calculate"] * 6  # 3 free, then 3 that count
    assert "3 of 3 steps used" in trace.answer


def test_a_run_with_calculations_gets_its_full_step_budget_for_tools(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {"content": "The symptom.", "tool_calls": [call("query_metrics", service="order", metric="p99_latency")]},
        {"content": "How much.", "tool_calls": [call("calculate", expression="1180 / 212")]},
        {"content": "The errors.", "tool_calls": [call("query_logs", service="order")]},
        {"content": "And the change.", "tool_calls": [call("calculate", expression="(1180 - 212) / 212 * 100")]},
        {"content": "Thought: enough.\nFinal Answer:\nRoot cause: the pool. Evidence: p99 x5.6."},
    )
    toolbox = Toolbox([*engine_toolbox(), calculate_tool()])
    trace = run_agent(QUESTION, scripted_openai_llm(scripted_llm), toolbox, Budget(max_steps=3))

    assert trace.stop_reason is StopReason.FINISH
    assert [s.action for s in trace.steps] == ["query_metrics", "calculate", "query_logs", "calculate", "finish"]
    notes = [str(r.messages[-1]["content"]) for r in scripted_llm.chat_requests]
    assert "[Step 3 of 3: your last. Give your final answer now.]" in notes[-1]
