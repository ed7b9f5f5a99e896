"""Compression must not hide the evidence: over every scenario's replayed diagnosis (real tools, real loop,
default limits), each fact a correct answer names that the tools surfaced is still in front of the model when it
writes its answer, in an observation, a digest or a one-line step (never counting the model's own Thoughts)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from bot import wiring
from bot.engine.context import ContextLimits
from bot.engine.loop import run_agent
from bot.engine.types import Budget, Question
from bot.sandbox.scenario import load_scenario
from tests.eval.harness import replay_for, replay_names, sandbox_settings
from tests.fakes.llm import ScriptedLLM, scripted_openai_llm


def _seen_by_model(messages: list[dict[str, Any]], thoughts: list[str]) -> str:
    """What the model was shown, minus its own words: assistant messages (its Thoughts and calls) and the Thoughts
    that the lines of older steps re-send, sentence by sentence."""
    text = "\n".join(str(m.get("content") or "") for m in messages if m["role"] != "assistant")
    for thought in thoughts:
        for sentence in re.split(r"(?<=[.!?])\s", " ".join(thought.split())):
            text = text.replace(sentence, "")
    return text.lower()


@pytest.mark.parametrize("name", replay_names())
def test_facts_the_tools_surfaced_reach_the_final_request(
    name: str, make_sandbox: Any, scripted_llm: ScriptedLLM, tmp_path: Any
) -> None:
    box = make_sandbox(name)
    scenario = load_scenario(name)
    tools = wiring.build_toolbox(sandbox_settings(box, tmp_path, toolsets=True))  # the replays use every toolset
    scripted_llm.script(*replay_for(name, box))

    trace = run_agent(
        Question(scenario.question),
        scripted_openai_llm(scripted_llm),
        tools,
        Budget(max_steps=10),
        limits=ContextLimits(),
    )

    assert trace.complete, trace.stop_reason
    observed = "\n".join(step.observation for step in trace.steps).lower()
    surfaced = [fact for fact in scenario.must_name if fact.lower() in observed]
    final_request = _seen_by_model(scripted_llm.chat_requests[-1].messages, [step.thought for step in trace.steps])
    assert [fact for fact in surfaced if fact.lower() not in final_request] == []
