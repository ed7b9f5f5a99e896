"""An instruction inside a log line changes nothing about which tools exist or run."""

from __future__ import annotations

import json

from bot.engine.loop import run_agent
from bot.engine.types import Budget, Question
from tests.fakes.llm import ScriptedLLM, scripted_openai_llm
from tests.safety.conftest import INJECTION, leaky_toolbox

QUESTION = Question("Why is order p99 high since 15:05?")


def tool_names(body: dict) -> list[str]:
    return sorted(t["function"]["name"] for t in body.get("tools", []))


def test_injected_instruction_does_not_change_the_allowed_tools(scripted_llm: ScriptedLLM) -> None:
    # The scripted model "obeys" the injection: it asks for a tool that does not exist.
    scripted_llm.script(
        {"content": "Read the logs.", "tool_calls": [{"name": "read_logs", "arguments": {"service": "order"}}]},
        {"content": "The log says so.", "tool_calls": [{"name": "delete_everything", "arguments": {"confirm": True}}]},
        {"content": "Final Answer: the order DB pool is exhausted."},
    )
    toolbox = leaky_toolbox()
    before = sorted(toolbox.names)
    trace = run_agent(QUESTION, scripted_openai_llm(scripted_llm), toolbox, Budget(max_steps=5))

    requests = scripted_llm.chat_requests
    assert INJECTION.split(" with")[0] in json.dumps(requests[1].body)  # the model did see the injected line
    assert all(tool_names(r.body) == before for r in requests if "tools" in r.body)
    assert sorted(toolbox.names) == before
    refused = next(s for s in trace.steps if s.action == "delete_everything")
    assert refused.status == "error"
    assert "unknown tool" in refused.observation and "read_logs" in refused.observation
    assert trace.answer.endswith("the order DB pool is exhausted.")


def test_observations_are_fenced_as_data_in_the_prompt(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {"content": "Read the logs.", "tool_calls": [{"name": "read_logs", "arguments": {"service": "order"}}]},
        {"content": "Final Answer: pool exhausted."},
    )
    run_agent(QUESTION, scripted_openai_llm(scripted_llm), leaky_toolbox(), Budget(max_steps=3))
    second = scripted_llm.chat_requests[1].body["messages"]
    system = next(m["content"] for m in second if m["role"] == "system")
    sent = next(m["content"] for m in second if m["role"] == "user")  # the newest result, under its step
    fenced = sent[sent.index("<observation>") : sent.index("</observation>")]
    assert INJECTION.split(" with")[0] in fenced
    assert "data" in system.lower() and "<observation>" in system
