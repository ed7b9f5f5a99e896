"""The loop's own overhead per step (context rendering, gates, tool boundary, tracing), against an LLM that
answers instantly in-process, and for reference through the real openai client to the loopback ScriptedLLM.

Run on demand:  .venv/bin/python -m pytest tests/bench/bench_loop_overhead.py -s
Prints numbers; asserts no timing.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping, Sequence
from typing import Any

from bot.engine.llm import LLMReply, Role
from bot.engine.loop import run_agent
from bot.engine.types import Budget, Question, ToolCall
from tests.bench.workload import ANSWER, INVESTIGATION, bench_toolbox
from tests.fakes.llm import ScriptedLLM, scripted_openai_llm

RUNS = 30
STEPS = len(INVESTIGATION) + 1


class ScriptedInstantLLM:
    """A zero-latency in-process LLM replaying the investigation (usage given, so no token counting)."""

    model = "instant"

    def __init__(self) -> None:
        self._turn = 0

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        stop: Sequence[str] | None = None,
        role: Role = "main",
        max_tokens: int | None = None,
        timeout_s: float | None = None,
    ) -> LLMReply:
        turn, self._turn = self._turn, self._turn + 1
        if turn >= len(INVESTIGATION):
            return LLMReply(f"Final Answer: {ANSWER}", prompt_tokens=1_000, completion_tokens=80)
        thought, action, args = INVESTIGATION[turn]
        return LLMReply(thought, (ToolCall(action, args, f"c{turn}"),), 1_000, 40, "tool_calls")


def per_step_ms(make_llm: Any) -> list[float]:
    samples = []
    for _ in range(RUNS):
        llm = make_llm()
        started = time.perf_counter()
        trace = run_agent(Question("why is order slow?"), llm, bench_toolbox(), Budget(max_steps=STEPS))
        assert trace.complete and len(trace.steps) == STEPS
        samples.append((time.perf_counter() - started) * 1000 / STEPS)
    return samples


def test_loop_overhead_per_step(scripted_llm: ScriptedLLM) -> None:
    instant = per_step_ms(ScriptedInstantLLM)

    def over_http() -> Any:
        scripted_llm.reset()
        for thought, action, args in INVESTIGATION:
            scripted_llm.script({"content": thought, "tool_calls": [{"name": action, "arguments": args}]})
        scripted_llm.script({"content": f"Final Answer: {ANSWER}"})
        return scripted_openai_llm(scripted_llm)

    http = per_step_ms(over_http)
    print(f"\nloop overhead per step, {RUNS} runs x {STEPS} steps (tools answer instantly)")
    for name, samples in (("zero-latency LLM (in-process)", instant), ("openai SDK -> loopback ScriptedLLM", http)):
        p95 = sorted(samples)[int(0.95 * len(samples))]
        print(f"  {name:<36} median {statistics.median(samples):6.2f} ms   p95 {p95:6.2f} ms")
