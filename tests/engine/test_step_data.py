"""Steps carry the data their tool's observation was rendered from: the loop and the one-shot lookup put it there,
text-only tools and errors leave it empty, and a trace's JSON form keeps it (older traces, without it, still load)."""

from __future__ import annotations

import json

from bot.engine.loop import answer_once, run_agent
from bot.engine.types import Budget, Question, Step, StopReason, Totals, Trace, trace_from_dict, trace_to_dict
from tests.engine.engine_tools import engine_toolbox
from tests.fakes.llm import ScriptedLLM, scripted_openai_llm
from tests.tools.result_samples import samples
from tools.base import Toolbox
from tools.calculate import Calculation, calculate_tool
from tools.results import calculation_of


def toolbox() -> Toolbox:
    """The engine's tools (dump_logs is text-only, as an MCP server's tools are) and calculate, which returns data."""
    return Toolbox([*engine_toolbox(), calculate_tool()])


def call(name: str, **args: object) -> dict[str, object]:
    return {"name": name, "arguments": args}


def test_the_loop_puts_each_tools_data_on_its_step(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {"content": "Ratio first.", "tool_calls": [call("calculate", expression="1180 / 212")]},
        {"content": "The lines.", "tool_calls": [call("dump_logs", lines=3)]},
        {"content": "A wrong name.", "tool_calls": [call("query_metrics", service="ordr", metric="p99_latency")]},
        {"content": "Final Answer: x5.6"},
    )
    trace = run_agent(Question("how much slower is order?"), scripted_openai_llm(scripted_llm), toolbox(), Budget())
    ratio, text_only, error, finish = trace.steps
    assert calculation_of(ratio) == Calculation("1180 / 212", 1180 / 212) and ratio.observation == "5.566037736"
    assert text_only.status == "ok" and text_only.data is None
    assert error.status == "error" and error.data is None
    assert finish.action == "finish" and finish.data is None


def test_the_one_shot_lookup_keeps_its_tools_data(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {"content": "", "tool_calls": [call("calculate", expression="2 ** 10")]},
        {"content": "1024."},
    )
    llm = scripted_openai_llm(scripted_llm)
    trace = answer_once(Question("what is 2 to the 10th?"), llm, toolbox(), allow_tool=True)
    assert calculation_of(trace.steps[0]) == Calculation("2 ** 10", 1024)


def trace_of(steps: list[Step]) -> Trace:
    return Trace("t", "q", "playbook", tuple(steps), "a", True, StopReason.FINISH, Totals(steps=len(steps)))


def test_a_trace_keeps_its_steps_data_through_its_json_form() -> None:
    steps = [Step(i, "", "tool", {}, "text", "ok", data=d) for i, d in enumerate(samples(), 1)]
    steps.append(Step(len(steps) + 1, "done", "finish", {}, "", "ok"))
    trace = trace_of(steps)
    stored = json.loads(json.dumps(trace_to_dict(trace), allow_nan=False))
    assert "data" not in stored["steps"][-1]  # a step without data stores as it always did
    assert trace_from_dict(stored) == trace


def test_a_trace_stored_before_steps_had_data_still_loads() -> None:
    older = {
        "trace_id": "t",
        "question": "q",
        "protocol": "playbook",
        "steps": [
            {"index": 1, "thought": "", "action": "query_metrics", "args": {}, "observation": "x", "status": "ok"}
        ],
        "answer": "a",
        "complete": True,
        "stop_reason": "finish",
        "totals": {"steps": 1, "tokens": 0},
    }
    [step] = trace_from_dict(older).steps
    assert step.observation == "x" and step.data is None


def test_data_of_a_kind_this_version_does_not_know_is_dropped_and_the_step_kept() -> None:
    stored = trace_to_dict(trace_of([Step(1, "", "tool", {}, "text", "ok", data=samples()[0])]))
    stored["steps"][0]["data"] = {"kind": "hologram", "frames": 3}
    [step] = trace_from_dict(stored).steps
    assert step.observation == "text" and step.data is None
