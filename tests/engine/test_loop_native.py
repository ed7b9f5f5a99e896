"""The loop over native tool calls, end to end: ScriptedLLM over HTTP, the real openai client, real tools."""

from __future__ import annotations

import json

import pytest

from bot.engine.context import ContextLimits
from bot.engine.loop import run_agent
from bot.engine.types import Budget, Question, Step, StopReason
from tests.engine.engine_tools import engine_toolbox
from tests.fakes.llm import ScriptedLLM, scripted_openai_llm, unanswered_tool_call_ids

QUESTION = Question("Why is order p99 latency high since 15:05?")
ANSWER = "Root cause: order v2.8.1 raised maximumPoolSize."
EXCHANGES = ContextLimits(keep_recent_steps=1)  # the newest step re-sent as a tool-call exchange: the id contract


def user_text(messages: list[dict[str, object]]) -> str:
    """What the default context sends besides the system prompt: one user message (question, lines, newest)."""
    assert [m["role"] for m in messages] == ["system", "user"]
    return str(messages[1]["content"])


def call(name: str, **args: object) -> dict[str, object]:
    return {"name": name, "arguments": args}


def test_multi_step_native_run_reaches_finish(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {
            "content": "Symptom first: order p99.",
            "tool_calls": [call("query_metrics", service="order", metric="p99_latency")],
        },
        {
            "content": "Latency jumped at 15:05; errors then?",
            "tool_calls": [call("query_logs", service="order", level="ERROR")],
        },
        {"content": "Pool timeouts. What changed?", "tool_calls": [call("query_deploy_records", service="order")]},
        {"content": "Thought: deploy at 15:02 matches.\nFinal Answer: " + ANSWER},
    )
    trace = run_agent(QUESTION, scripted_openai_llm(scripted_llm), engine_toolbox(), Budget())

    assert trace.complete and trace.stop_reason is StopReason.FINISH
    assert trace.protocol == "native"
    assert trace.answer == ANSWER
    assert [s.action for s in trace.steps] == ["query_metrics", "query_logs", "query_deploy_records", "finish"]
    assert [s.status for s in trace.steps] == ["ok", "ok", "ok", "ok"]
    assert trace.steps[0].thought == "Symptom first: order p99."
    assert trace.steps[3].thought == "deploy at 15:02 matches."
    assert "x5.6" in trace.steps[0].observation
    assert trace.totals.tool_calls == 3 and trace.totals.steps == 4
    assert trace.totals.prompt_tokens == sum(s.prompt_tokens for s in trace.steps) > 0
    last = scripted_llm.chat_requests[-1]
    sent = user_text(last.messages)  # every step a line, the newest with its result in full, no tool message
    assert "#1 Symptom first: order p99. => query_metrics(order, p99_latency) -> change: " in sent
    assert "#3 Pool timeouts. What changed? => query_deploy_records(order)\n<observation>" in sent and "v2.8.1" in sent
    assert sent.endswith("[Step 4 of 8]")
    assert {t["function"]["name"] for t in last.body["tools"]} >= {"query_metrics", "query_logs"}


def test_every_tool_call_id_gets_an_answer_and_extra_calls_are_not_run(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {
            "content": "Check both.",
            "tool_calls": [call("query_metrics", service="order", metric="qps"), call("query_logs", service="order")],
        },
        {"content": "Final Answer: traffic is normal."},
    )
    trace = run_agent(QUESTION, scripted_openai_llm(scripted_llm), engine_toolbox(), Budget(), limits=EXCHANGES)

    assert [s.action for s in trace.steps] == ["query_metrics", "finish"]
    second = scripted_llm.chat_requests[1].messages
    tool_messages = [m for m in second if m["role"] == "tool"]
    assert len(tool_messages) == 2
    assert tool_messages[1]["content"].startswith("not run: one tool per step")
    assert all(unanswered_tool_call_ids(r.messages) == [] for r in scripted_llm.chat_requests)


def test_parallel_tools_run_every_requested_call(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {
            "content": "Both at once.",
            "tool_calls": [call("query_metrics", service="order", metric="qps"), call("query_logs", service="payment")],
        },
        {"content": "Final Answer: done."},
    )
    budget = Budget(parallel_tools=True)
    trace = run_agent(QUESTION, scripted_openai_llm(scripted_llm), engine_toolbox(), budget)

    assert [s.action for s in trace.steps] == ["query_metrics", "query_logs", "finish"]
    assert all(s.status == "ok" for s in trace.steps)
    sent = user_text(scripted_llm.chat_requests[1].messages)
    assert sent.count("<observation>") == 2 and "#1 Both at once. => query_metrics" in sent and "#2 query_logs" in sent


def test_tool_error_is_shown_to_model_and_corrected_next_step(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {"content": "Check orders.", "tool_calls": [call("query_metrics", service="orders", metric="p99_latency")]},
        {
            "content": "Wrong name; it is order.",
            "tool_calls": [call("query_metrics", service="order", metric="p99_latency")],
        },
        {"content": "Final Answer: latency rose at 15:05."},
    )
    trace = run_agent(QUESTION, scripted_openai_llm(scripted_llm), engine_toolbox(), Budget())

    assert [s.status for s in trace.steps] == ["error", "ok", "ok"]
    assert "known services: order, payment" in trace.steps[0].observation
    shown = user_text(scripted_llm.chat_requests[1].messages).split("query_metrics(orders, p99_latency)\n")[1]
    assert shown.startswith("[error]") and "known services: order, payment" in shown
    assert trace.complete and trace.totals.tool_errors == 1


def test_invalid_enum_value_lists_the_legal_values(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {"content": "Latency.", "tool_calls": [call("query_metrics", service="order", metric="latency")]},
        {"content": "Final Answer: stop."},
    )
    trace = run_agent(QUESTION, scripted_openai_llm(scripted_llm), engine_toolbox(), Budget())

    assert trace.steps[0].status == "error"
    assert "p99_latency" in trace.steps[0].observation and "error_rate" in trace.steps[0].observation


def test_unreadable_arguments_are_a_format_error_and_their_id_is_answered(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {"content": "Logs.", "tool_calls": [{"name": "query_logs", "arguments": "service=order level=ERROR"}]},
        {"content": "Fixed.", "tool_calls": [call("query_logs", service="order")]},
        {"content": "Final Answer: pool timeouts."},
    )
    trace = run_agent(QUESTION, scripted_openai_llm(scripted_llm), engine_toolbox(), Budget(), limits=EXCHANGES)

    assert [s.status for s in trace.steps] == ["format_error", "ok", "ok"]
    answered = [m for m in scripted_llm.chat_requests[1].messages if m["role"] == "tool"]
    assert "not a JSON object" in answered[0]["content"]
    assert trace.complete


def test_observer_gets_each_step_live_and_a_failing_observer_does_not_stop_the_run(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {"content": "Metrics.", "tool_calls": [call("query_metrics", service="order", metric="qps")]},
        {"content": "Final Answer: fine."},
    )
    seen: list[Step] = []

    def observer(step: Step) -> None:
        seen.append(step)
        raise RuntimeError("Slack is down")

    trace = run_agent(QUESTION, scripted_openai_llm(scripted_llm), engine_toolbox(), Budget(), on_step=observer)

    assert trace.complete
    assert seen == list(trace.steps)
    # the first step was observed before the model was asked again
    assert len(scripted_llm.chat_requests) == 2


def test_missing_thought_is_pointed_out_to_the_model(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {"content": "", "tool_calls": [call("query_metrics", service="order", metric="qps")]},
        {"content": "Final Answer: fine."},
    )
    run_agent(QUESTION, scripted_openai_llm(scripted_llm), engine_toolbox(), Budget())

    assert "No Thought was given" in user_text(scripted_llm.chat_requests[1].messages)


def test_thread_memory_and_step_budget_are_in_the_prompt(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"content": "Final Answer: see above."})
    question = Question("and payment?", history=("order p99 rose at 15:05 after v2.8.1",))
    run_agent(question, scripted_openai_llm(scripted_llm), engine_toolbox(), Budget(max_steps=5))

    messages = scripted_llm.chat_requests[0].messages
    assert "$" not in messages[0]["content"]  # the budget is in the note on every turn, not in the system prompt
    assert "order p99 rose at 15:05 after v2.8.1" in messages[1]["content"]
    assert messages[1]["content"].endswith("[Step 1 of 5]")
    assert json.dumps(messages).count('"role": "system"') == 1


@pytest.fixture(autouse=True, params=["lenient", "strict"])
def server_mode(request: pytest.FixtureRequest, scripted_llm: ScriptedLLM) -> str:
    """Every protocol test runs twice: against the lenient stand-in and the strict one (llama.cpp's behaviour)."""
    scripted_llm.strict = request.param == "strict"
    return str(request.param)
