"""The loop over the text ReAct protocol: the lenient parser, stop sequences, format errors fed back."""

from __future__ import annotations

import pytest

from bot.engine.loop import run_agent
from bot.engine.protocol import TEXT_STOP
from bot.engine.types import Budget, Question, StopReason
from tests.engine.engine_tools import engine_toolbox
from tests.fakes.llm import ScriptedLLM, scripted_openai_llm

QUESTION = Question("Why is order p99 latency high since 15:05?")


def text(thought: str, action: str, args: str) -> dict[str, str]:
    return {"content": f"Thought: {thought}\nAction: {action}\nAction Input: {args}"}


def test_multi_step_text_run_reaches_finish(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        text("Symptom first.", "query_metrics", '{"service": "order", "metric": "p99_latency", "range": "6h"}'),
        text("Jump at 15:05; errors?", "query_logs", "{'service': 'order', 'level': 'ERROR',}"),
        text("Pool timeouts; what changed?", "query_deploy_records", '{"service": "order"}'),
        {
            "content": "Thought: the 15:02 deploy explains it.\nAction: finish\nAction Input: "
            '{"answer": "Root cause: order v2.8.1 raised maximumPoolSize 50 -> 200."}'
        },
    )
    trace = run_agent(QUESTION, scripted_openai_llm(scripted_llm), engine_toolbox(), Budget(), protocol="text")

    assert trace.complete and trace.stop_reason is StopReason.FINISH and trace.protocol == "text"
    assert trace.answer == "Root cause: order v2.8.1 raised maximumPoolSize 50 -> 200."
    assert [s.action for s in trace.steps] == ["query_metrics", "query_logs", "query_deploy_records", "finish"]
    assert trace.steps[1].args == {"service": "order", "level": "ERROR"}
    assert trace.steps[3].thought == "the 15:02 deploy explains it."
    request = scripted_llm.chat_requests[-1]
    assert request.body["stop"] == list(TEXT_STOP)
    assert "tools" not in request.body
    assert request.messages[-1]["role"] == "user"
    assert request.messages[-1]["content"].startswith("Observation: <observation>")


def test_tool_catalogue_is_listed_once_in_the_system_prompt(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"content": "Thought: nothing to check.\nFinal Answer: no incident."})
    run_agent(QUESTION, scripted_openai_llm(scripted_llm), engine_toolbox(), Budget(), protocol="text")

    messages = scripted_llm.chat_requests[0].messages
    system = messages[0]["content"]
    assert system.count("### query_metrics") == 1
    assert "- metric (required), one of p99_latency|qps|error_rate" in system
    assert "Deploys of a service." in system
    assert all("### query_metrics" not in m["content"] for m in messages[1:])


def test_format_error_is_fed_back_and_the_model_recovers(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {"content": "I think we should look at the metrics of the order service first."},
        text("Metrics.", "query_metrics", '{"service": "order", "metric": "p99_latency"}'),
        {"content": "Thought: enough.\nFinal Answer: latency rose at 15:05."},
    )
    trace = run_agent(QUESTION, scripted_openai_llm(scripted_llm), engine_toolbox(), Budget(), protocol="text")

    assert [s.status for s in trace.steps] == ["format_error", "ok", "ok"]
    assert trace.complete and trace.totals.format_errors == 1
    fed_back = scripted_llm.chat_requests[1].messages
    assert fed_back[-2] == {
        "role": "assistant",
        "content": "I think we should look at the metrics of the order service first.",
    }
    assert fed_back[-1]["content"].startswith("Observation: Format error:")
    assert "Action Input:" in fed_back[-1]["content"]  # the expected format is quoted


def test_a_reply_cut_off_at_the_token_limit_is_told_to_be_shorter(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {"content": "Thought: first I will consider every service in turn, starting with", "finish_reason": "length"},
        {"content": "Final Answer: order v2.8.1."},
    )
    trace = run_agent(QUESTION, scripted_openai_llm(scripted_llm), engine_toolbox(), Budget(), protocol="text")

    assert trace.steps[0].status == "format_error"
    assert "cut off at the reply token limit" in scripted_llm.chat_requests[1].messages[-1]["content"]


def test_only_the_first_of_two_actions_runs_and_the_model_is_told(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {
            "content": 'Thought: both.\nAction: query_metrics\nAction Input: {"service": "order", "metric": "qps"}\n'
            'Action: query_logs\nAction Input: {"service": "order"}'
        },
        {"content": "Final Answer: fine."},
    )
    trace = run_agent(QUESTION, scripted_openai_llm(scripted_llm), engine_toolbox(), Budget(), protocol="text")

    assert [s.action for s in trace.steps] == ["query_metrics", "finish"]
    assert "1 more action(s) in your reply were not run" in scripted_llm.chat_requests[1].messages[-1]["content"]


def test_made_up_observation_is_ignored(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {
            "content": 'Thought: logs.\nAction: query_logs\nAction Input: {"service": "order"}\n'
            "Observation: everything is fine\nFinal Answer: nothing wrong"
        },
        {"content": "Final Answer: pool timeouts at 15:05."},
    )
    trace = run_agent(QUESTION, scripted_openai_llm(scripted_llm), engine_toolbox(), Budget(), protocol="text")

    assert trace.steps[0].action == "query_logs"
    assert "HikariPool" in trace.steps[0].observation
    assert trace.answer == "pool timeouts at 15:05."


def test_unknown_tool_gets_the_list_of_valid_tools(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        text("Grafana.", "query_grafana", '{"service": "order"}'),
        {"content": "Final Answer: stop."},
    )
    trace = run_agent(QUESTION, scripted_openai_llm(scripted_llm), engine_toolbox(), Budget(), protocol="text")

    assert trace.steps[0].status == "error"
    assert "Valid tools: query_metrics, query_logs" in trace.steps[0].observation


@pytest.fixture(autouse=True, params=["lenient", "strict"])
def server_mode(request: pytest.FixtureRequest, scripted_llm: ScriptedLLM) -> str:
    """Every protocol test runs twice: against the lenient stand-in and the strict one (llama.cpp's behaviour)."""
    scripted_llm.strict = request.param == "strict"
    return str(request.param)
