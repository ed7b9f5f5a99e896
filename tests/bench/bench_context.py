"""Prompt tokens sent over a scripted 8-step diagnosis, with and without compression and truncation.

Run on demand:  .venv/bin/python -m pytest tests/bench/bench_context.py -s
The production figure to beat: 23,400 -> 11,800 prompt tokens (-50 %). Prints numbers; asserts no timing.
Workloads: the real tools over the sandbox (production's catalogue and observations), and synthetic tools
returning raw output (12 log lines: production-sized; 100 lines: a backend that returns far too much).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from bot.engine.context import ContextLimits
from bot.engine.loop import run_agent
from bot.engine.tokens import count_message_tokens, count_tokens
from bot.engine.types import Budget, Question
from tests.bench.workload import (
    ANSWER,
    INVESTIGATION,
    Investigation,
    bench_toolbox,
    sandbox_investigation,
    sandbox_toolbox,
)
from tests.fakes.backends import RunningSandbox
from tests.fakes.llm import ScriptedLLM, scripted_openai_llm
from tools.base import Toolbox

QUESTION = Question("order p99 went from ~200 ms to over 1 s at 15:05, why?")
Protocol = Literal["native", "text"]
UNLIMITED = ContextLimits(max_observation_chars=10**9, keep_recent_steps=10**9, digest_read_observations=False)


def script(scripted: ScriptedLLM, protocol: Protocol, investigation: Investigation) -> None:
    for thought, action, args in investigation:
        if protocol == "native":
            scripted.script({"content": thought, "tool_calls": [{"name": action, "arguments": args}]})
        else:
            scripted.script({"content": f"Thought: {thought}\nAction: {action}\nAction Input: {json.dumps(args)}"})
    scripted.script({"content": f"Thought: the deploy explains it.\nFinal Answer: {ANSWER}"})


def prompt_tokens_sent(
    scripted: ScriptedLLM, protocol: Protocol, limits: ContextLimits, tools: Toolbox, investigation: Investigation
) -> tuple[int, list[int], int]:
    """(total prompt tokens over all requests, per request, the fixed part of the total: system prompt + tools),
    counted with tiktoken o200k_base."""
    scripted.reset()
    script(scripted, protocol, investigation)
    # No token gate here: the point is to measure what each variant would send over the same 8 steps.
    budget = Budget(max_steps=8, token_budget=10**9)
    llm = scripted_openai_llm(scripted)
    trace = run_agent(QUESTION, llm, tools, budget, protocol=protocol, limits=limits)
    assert all(step.status in ("ok", "no_data") for step in trace.steps), [s.observation for s in trace.steps]
    assert trace.complete, trace.stop_reason
    per_request = [_request_tokens(r.body) for r in scripted.chat_requests]
    fixed = sum(_fixed_tokens(r.body) for r in scripted.chat_requests)
    return sum(per_request), per_request, fixed


def _fixed_tokens(body: dict[str, Any]) -> int:
    """What every request repeats whatever the history: the system prompt (the text catalogue is in it) and tools."""
    return count_message_tokens(body["messages"][:1]) + _tools_tokens(body)


def _tools_tokens(body: dict[str, Any]) -> int:
    # The tools as the server's chat template sees them: their JSON, once per request.
    return count_tokens(json.dumps(body["tools"], ensure_ascii=False)) if body.get("tools") else 0


def _request_tokens(body: dict[str, Any]) -> int:
    return count_message_tokens(body["messages"]) + _tools_tokens(body)


def test_context_compression_saves_prompt_tokens(scripted_llm: ScriptedLLM, sandbox: RunningSandbox) -> None:
    print("\nprompt tokens sent over an 8-step diagnosis (7 tool steps + final answer), tiktoken o200k_base")
    print(
        f"{'workload':<34} {'protocol':<8} {'full history':>13} {'compressed':>11} {'change':>7}"
        f"   {'history only (no system/tools)':>32}   per request"
    )
    workloads = [
        (
            "real tools on the sandbox",
            sandbox_toolbox(sandbox.prometheus_url, sandbox.logs_db, sandbox.git_repo),
            sandbox_investigation(sandbox.incident_at),
        ),
        ("synthetic raw, 12-line logs", bench_toolbox(12), INVESTIGATION),
        ("synthetic raw, 100-line logs 22 KB", bench_toolbox(100), INVESTIGATION),
    ]
    protocols: tuple[Protocol, ...] = ("native", "text")
    for label, tools, investigation in workloads:
        for protocol in protocols:
            full, _, fixed = prompt_tokens_sent(scripted_llm, protocol, UNLIMITED, tools, investigation)
            small, per_request, _ = prompt_tokens_sent(scripted_llm, protocol, ContextLimits(), tools, investigation)
            history = f"{full - fixed:,} -> {small - fixed:,} ({_change(full - fixed, small - fixed)})"
            print(
                f"{label:<34} {protocol:<8} {full:>13,} {small:>11,} {_change(full, small):>7}"
                f"   {history:>32}   {per_request}"
            )
    print("production figure to beat: 23,400 -> 11,800 (-50%)")


def _change(before: int, after: int) -> str:
    return f"{100 * (after - before) / before:.0f}%"
