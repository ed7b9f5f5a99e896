"""answer_once: one cheap answer, at most one lookup, and an honest answer when the LLM is down."""

from __future__ import annotations

from bot.engine.llm import OpenAILLM
from bot.engine.loop import answer_once
from bot.engine.types import Question, Step, StopReason
from tests.engine.engine_tools import engine_toolbox
from tests.fakes.llm import ScriptedLLM


def llm_for(scripted: ScriptedLLM) -> OpenAILLM:
    return OpenAILLM(base_url=scripted.base_url, api_key="test", model="big", cheap_model="small", max_retries=1)


def test_single_answer_uses_the_cheap_model_and_no_tools(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"content": "Hi! Ask me why a service is slow."})
    trace = answer_once(Question("hello"), llm_for(scripted_llm), engine_toolbox())

    assert trace.complete and trace.protocol == "single" and trace.model == "small"
    assert trace.answer == "Hi! Ask me why a service is slow."
    request = scripted_llm.chat_requests[0]
    assert request.body["model"] == "small" and "tools" not in request.body


def test_lookup_runs_one_tool_then_answers_without_tools(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {
            "content": "Last deploy?",
            "tool_calls": [
                {"name": "query_deploy_records", "arguments": {"service": "order"}},
                {"name": "query_logs", "arguments": {"service": "order"}},
            ],
        },
        {"content": "order v2.8.1 was deployed at 15:02 by alice."},
    )
    steps: list[Step] = []
    trace = answer_once(
        Question("last deploy of order?"),
        llm_for(scripted_llm),
        engine_toolbox(),
        allow_tool=True,
        on_step=steps.append,
    )

    assert [s.action for s in trace.steps] == ["query_deploy_records", "finish"]
    assert steps == list(trace.steps)
    assert trace.answer == "order v2.8.1 was deployed at 15:02 by alice."
    first, second = scripted_llm.chat_requests
    assert "tools" in first.body and "tools" not in second.body
    assert "<observation>" in second.messages[-1]["content"] and "v2.8.1" in second.messages[-1]["content"]
    assert all(m["role"] in ("system", "user") for m in second.messages)


def test_single_answer_with_the_llm_down_says_so(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"status": 500, "repeat": 2})
    trace = answer_once(Question("hello"), llm_for(scripted_llm), engine_toolbox())

    assert trace.stop_reason is StopReason.LLM_UNAVAILABLE and not trace.complete
    assert "The LLM was unavailable" in trace.answer
