"""opsbot's native loop against a naive openai loop, side by side in one process on the same scripted run.

The naive loop is what a first prototype does: the openai client, the whole history every turn, raw tool output as
tool messages, no redaction, no gates. Both loops get the same tools, and those hand the model what the backend
returns (tests/bench/rawtools.py: Prometheus query_range JSON, an Elasticsearch _search response, git log and git
show, recorded once from the sandbox's real backends and replayed), so what opsbot saves is its context code's
doing. Both talk to the same loopback ScriptedLLM replaying the same 8-step hikari-pool investigation (7 tool calls,
then the answer); runs are interleaved so machine load hits both alike. CPU is process CPU (time.process_time), so
other engineers' load does not count; it includes the ScriptedLLM server thread for both loops. Tokens are counted
exactly (tiktoken o200k_base) from the requests the server received, split by part: system prompt, tool schemas,
observations (tool messages, and the fenced results opsbot puts in its user message), history (the rest: the
question, the model's calls and Thoughts, opsbot's one-line older steps). "Same answer": the scripted answer is the
same text for both, so the bench checks what a real model would need for it: every fact the answer cites reached
the model in a tool result opsbot sent (its own Thoughts, re-sent in the lines of older steps, do not count).

Run on demand:  .venv/bin/python -m pytest tests/bench/bench_naive.py -s
Prints numbers; asserts no timing.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai
import pytest

from bot.engine.context import tool_schemas
from bot.engine.llm import LLM
from bot.engine.loop import run_agent
from bot.engine.prompts import load_prompt
from bot.engine.tokens import count_message_tokens, count_tokens
from bot.engine.types import Budget, Question
from tests.bench.rawtools import LOG_PAGES, raw_investigation, raw_toolbox, record
from tests.bench.workload import sandbox_toolbox
from tests.fakes.backends import RunningSandbox
from tests.fakes.llm import MODEL, ScriptedLLM, scripted_openai_llm
from tools.base import Toolbox

Investigation = list[tuple[str, str, dict[str, Any]]]
RUNS = 10
STEPS = 8
LOOPS = ("naive openai loop", "opsbot native loop")
QUESTION = "order p99 went from ~200 ms to over 1 s around the incident, why?"
ANSWER = (
    "Root cause: order v2.8.1 raised hikari maximumPoolSize 50 -> 200; the database's connection limit is hit, "
    "so order's requests wait for connections. Evidence: order p99 jumped at the deploy; HikariPool "
    "'Connection is not available' errors; payment p99 flat. Confidence: high."
)
CITED = ("v2.8.1", "maximumPoolSize", "50", "200", "Connection is not available")  # each must reach the model
NAIVE_SYSTEM = "You are an SRE assistant. Use the tools to find the root cause, then answer."


def _script(scripted: ScriptedLLM, investigation: Investigation) -> None:
    scripted.reset()
    for thought, action, args in investigation:
        scripted.script({"content": thought, "tool_calls": [{"name": action, "arguments": args}]})
    scripted.script({"content": f"Final Answer: {ANSWER}"})


def naive_run(client: openai.OpenAI, tools: Toolbox) -> str:
    """The naive loop: full history, raw observations, tools called inline."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": NAIVE_SYSTEM},
        {"role": "user", "content": QUESTION},
    ]
    schemas = [spec.to_openai() for spec in map(tools.get, tools.names) if spec is not None]
    while True:
        reply = client.chat.completions.create(model=MODEL, messages=messages, tools=schemas)  # type: ignore[arg-type]
        message = reply.choices[0].message
        if not message.tool_calls:
            return (message.content or "").removeprefix("Final Answer: ")
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            assert call.type == "function"
            spec = tools.get(call.function.name)
            assert spec is not None
            output = spec.func(**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": str(output)})


def opsbot_run(llm: LLM, tools: Toolbox) -> str:
    trace = run_agent(Question(QUESTION), llm, tools, Budget(max_steps=STEPS, token_budget=10**9))
    assert trace.complete and len(trace.steps) == STEPS, trace.stop_reason
    return trace.answer


PARTS = ("system", "schemas", "observations", "history")
FENCED = re.compile(r"<observation>.*?</observation>", re.DOTALL)


def tokens_by_request(scripted: ScriptedLLM) -> list[dict[str, int]]:
    """Prompt tokens of each request the server received, by part."""
    counted = []
    for request in scripted.chat_requests:
        body = request.body
        parts = dict.fromkeys(PARTS, 0)
        for message in body["messages"]:
            part = {"system": "system", "tool": "observations"}.get(message["role"], "history")
            tokens = count_message_tokens([message])
            if message["role"] == "user":  # opsbot's newest result sits fenced in the user message
                fenced = sum(count_tokens(block) for block in FENCED.findall(str(message.get("content") or "")))
                parts["observations"] += fenced
                tokens -= fenced
            parts[part] += tokens
        if body.get("tools"):
            parts["schemas"] += count_tokens(json.dumps(body["tools"], ensure_ascii=False))
        counted.append(parts)
    return counted


def tokens_by_part(scripted: ScriptedLLM) -> dict[str, int]:
    return {part: sum(request[part] for request in tokens_by_request(scripted)) for part in PARTS}


def cited_facts_missing(scripted: ScriptedLLM, investigation: Investigation) -> list[str]:
    """Facts of the answer that no request opsbot sent carried in a tool result (they would be made up): what it
    sent besides the system prompt and the model's own messages, with the model's Thoughts (re-sent in the lines
    of older steps) taken out, sentence by sentence."""
    sent = "\n".join(
        str(m.get("content") or "")
        for r in scripted.chat_requests
        for m in r.body["messages"]
        if m["role"] not in ("system", "assistant")
    )
    for thought, _, _ in investigation:
        for sentence in re.split(r"(?<=[.?!])\s", thought):
            sent = sent.replace(sentence, "")
    return [fact for fact in CITED if fact not in sent]


@dataclass
class Sample:
    """What one side-by-side sitting measured, per loop."""

    cpu_ms: dict[str, list[float]] = field(default_factory=lambda: {name: [] for name in LOOPS})
    wall_ms: dict[str, list[float]] = field(default_factory=lambda: {name: [] for name in LOOPS})
    answers: dict[str, str] = field(default_factory=dict)
    tokens: dict[str, dict[str, int]] = field(default_factory=dict)
    per_request: dict[str, list[dict[str, int]]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)


def side_by_side(scripted: ScriptedLLM, tools: Toolbox, investigation: Investigation) -> Sample:
    """RUNS interleaved runs of each loop over the same script and tools."""
    # One client each, built once as a process does (building one loads the CA bundle: ~30 ms per step if per run)
    client = openai.OpenAI(base_url=scripted.base_url, api_key="test", max_retries=1, timeout=10.0)
    llm = scripted_openai_llm(scripted)
    sample = Sample()
    for _ in range(RUNS):  # interleaved, so load hits both alike
        for name in LOOPS:
            _script(scripted, investigation)
            started_cpu, started = time.process_time(), time.perf_counter()
            sample.answers[name] = naive_run(client, tools) if name.startswith("naive") else opsbot_run(llm, tools)
            sample.cpu_ms[name].append((time.process_time() - started_cpu) * 1000 / STEPS)
            sample.wall_ms[name].append((time.perf_counter() - started) * 1000 / STEPS)
            sample.tokens[name] = tokens_by_part(scripted)
            sample.per_request[name] = tokens_by_request(scripted)
            if name.startswith("opsbot"):
                sample.missing = cited_facts_missing(scripted, investigation)
    return sample


def print_sample(sample: Sample) -> None:
    print(f"{'loop':<20} {'CPU ms/step median':>19} {'min':>6} {'wall ms/step median':>20}")
    for name, samples in sample.cpu_ms.items():
        print(
            f"{name:<20} {statistics.median(samples):19.2f} {min(samples):6.2f} "
            f"{statistics.median(sample.wall_ms[name]):20.2f}"
        )
    ratio = statistics.median(sample.cpu_ms[LOOPS[1]]) / statistics.median(sample.cpu_ms[LOOPS[0]])
    print(f"opsbot / naive CPU per step: {ratio:.2f}x")
    print(f"prompt tokens per run  {'system':>7} {'schemas':>8} {'observations':>13} {'history':>8} {'total':>7}")
    for name, parts in sample.tokens.items():
        print(
            f"{name:<22} {parts['system']:7,} {parts['schemas']:8,} {parts['observations']:13,} "
            f"{parts['history']:8,} {sum(parts.values()):7,}"
        )
    print(f"prompt tokens per request (system/schemas/observations/history = total), request 1..{STEPS}:")
    for name, requests in sample.per_request.items():
        cells = [f"{'/'.join(str(r[p]) for p in PARTS)}={sum(r.values())}" for r in requests]
        print(f"  {name}: {'  '.join(cells)}")
    share = sum(sample.tokens[LOOPS[1]].values()) / sum(sample.tokens[LOOPS[0]].values())
    print(f"opsbot / naive prompt tokens: {share:.1%}")
    same = ANSWER in sample.answers[LOOPS[1]] and sample.answers[LOOPS[0]] == ANSWER
    print(f"same answer: {same}; facts it cites that opsbot never showed the model: {sample.missing or 'none'}")


@pytest.mark.parametrize("log_page", LOG_PAGES)
def test_cpu_and_tokens_against_a_naive_openai_loop(
    log_page: int, scripted_llm: ScriptedLLM, sandbox: RunningSandbox, es_sandbox: str
) -> None:
    investigation = raw_investigation(sandbox.incident_at)
    calls = [(action, args) for _, action, args in investigation]
    recorded = record(sandbox.prometheus_url, es_sandbox, sandbox.git_repo, calls, log_page)
    sample = side_by_side(scripted_llm, raw_toolbox(recorded), investigation)
    raw = {
        name: sum(len(text) for key, text in recorded.items() if key.startswith(name + " "))
        for name in ("query_metrics", "query_logs", "query_deploy_records", "query_deploy_diff")
    }
    print(
        f"\n{RUNS} interleaved runs x {STEPS} steps, loopback ScriptedLLM, raw backend payloads, {log_page} hits per "
        f"log search (characters per tool over the run: {raw})"
    )
    print_sample(sample)


def test_tokens_of_the_production_prompt_and_tool_schemas_per_request(tmp_path: Path) -> None:
    """The native system prompt and the real catalogue's `tools=` entries as opsbot sends them, against the specs
    as they are (to_openai)."""
    tools = sandbox_toolbox("http://127.0.0.1:9", tmp_path / "logs.db", tmp_path)  # built, never called
    full = [count_tokens(json.dumps(spec.to_openai(), ensure_ascii=False)) for spec in tools]
    sent = [count_tokens(json.dumps(entry, ensure_ascii=False)) for entry in tool_schemas(tools)]
    print(
        f"\nnative system prompt (prompts/react_native.md), tokens per request: "
        f"{count_tokens(load_prompt('react_native')):,}"
    )
    print(f"production tool schemas, tokens per request: {sum(sent):,} sent ({sum(full):,} as the specs are)")
    for spec, tokens in zip(tools, sent, strict=True):
        print(f"  {spec.name:<22} {tokens:5,}  description {count_tokens(spec.description):4,}")
