"""Prompt tokens sent over a scripted 8-step diagnosis, with and without compression and truncation.

Run on demand:  .venv/bin/python -m pytest tests/bench/bench_context.py -s
The production figure to beat: 23,400 -> 11,800 prompt tokens (-50 %). Prints numbers; asserts no timing.
"""

from __future__ import annotations

from typing import Any, Literal

from bot.agent.context import ContextLimits
from bot.agent.loop import run_agent
from bot.agent.tokens import count_message_tokens, count_tokens
from bot.agent.types import Budget, Question
from tests.bench.workload import ANSWER, INVESTIGATION, bench_toolbox
from tests.fakes.llm import ScriptedLLM, scripted_openai_llm

QUESTION = Question("order p99 went from ~200 ms to over 1 s at 15:05, why?")
Protocol = Literal["native", "text"]
UNLIMITED = ContextLimits(max_observation_chars=10**9, keep_recent_steps=10**9)


def script(scripted: ScriptedLLM, protocol: Protocol) -> None:
    for thought, action, args in INVESTIGATION:
        if protocol == "native":
            scripted.script({"content": thought, "tool_calls": [{"name": action, "arguments": args}]})
        else:
            scripted.script(
                {"content": f"Thought: {thought}\nAction: {action}\nAction Input: {args}".replace("'", '"')}
            )
    scripted.script({"content": f"Thought: the deploy explains it.\nFinal Answer: {ANSWER}"})


def prompt_tokens_sent(
    scripted: ScriptedLLM, protocol: Protocol, limits: ContextLimits, log_lines: int
) -> tuple[int, list[int], bool]:
    """(total prompt tokens over all requests, per request, finished?) counted with tiktoken o200k_base."""
    scripted.reset()
    script(scripted, protocol)
    # No token gate here: the point is to measure what each variant would send over the same 8 steps.
    budget = Budget(max_steps=8, token_budget=10**9)
    llm = scripted_openai_llm(scripted)
    trace = run_agent(QUESTION, llm, bench_toolbox(log_lines), budget, protocol=protocol, limits=limits)
    assert all(step.status == "ok" for step in trace.steps), [step.observation for step in trace.steps]
    per_request = [_request_tokens(r.body) for r in scripted.chat_requests]
    return sum(per_request), per_request, trace.complete


def _request_tokens(body: dict[str, Any]) -> int:
    tools = count_tokens(str(body.get("tools", ""))) if body.get("tools") else 0
    return count_message_tokens(body["messages"]) + tools


def test_context_compression_saves_prompt_tokens(scripted_llm: ScriptedLLM) -> None:
    print("\nprompt tokens sent over an 8-step diagnosis (7 tool steps + final answer), tiktoken o200k_base")
    print(f"{'workload':<32} {'protocol':<8} {'full history':>13} {'compressed':>11} {'change':>7}   per request")
    # 12 log lines per query make the uncompressed run about the size of the production one (23,400 tokens).
    protocols: tuple[Protocol, ...] = ("native", "text")
    for label, log_lines in (("production-sized (12-line logs)", 12), ("heavy (100-line logs, 22 KB)", 100)):
        for protocol in protocols:
            full, _, done_full = prompt_tokens_sent(scripted_llm, protocol, UNLIMITED, log_lines)
            small, per_request, done_small = prompt_tokens_sent(scripted_llm, protocol, ContextLimits(), log_lines)
            assert done_full and done_small
            change = 100 * (small - full) / full
            print(f"{label:<32} {protocol:<8} {full:>13,} {small:>11,} {change:>6.0f}%   {per_request}")
    print("production figure to beat: 23,400 -> 11,800 (-50%)")
