"""The ReAct loop: ask the model, run the one tool it chose, show it the observation, until it finishes or a gate
stops it. The loop only sequences; protocol.py reads and writes messages, context.py decides what the model
sees, guards.py holds the gates, execution.py runs the tools, conclusion.py answers when a gate stops the run.

Never raises for model or tool problems: an unreachable LLM ends the run with a labelled partial answer.
"""

from __future__ import annotations

import logging
import time
from typing import Literal

from bot.engine.attempts import failed_attempt_notes
from bot.engine.conclusion import answer_from_observations, conclude, partial_label
from bot.engine.context import ContextLimits, call_text, fence_observation, question_text, tool_schemas
from bot.engine.execution import Executed, execute_calls
from bot.engine.guards import gate_after_step, gate_before_call
from bot.engine.llm import LLM, LLMReply
from bot.engine.prompts import load_prompt
from bot.engine.protocol import Act, Finish, LLMRequest, ReactProtocol, Unreadable, protocol_for, split_final
from bot.engine.run import Run
from bot.engine.screening import ignores_tools, screened
from bot.engine.text.echo import echoed_text
from bot.engine.types import Budget, Question, Step, StepObserver, StopReason, ToolCall, Trace
from tools.base import Toolbox, ToolData

log = logging.getLogger(__name__)

TOOLS_IGNORED_NOTE = "The server ignored the tools it was offered"
_RAW_REPLY_CHARS = 1_500  # of a format-error reply, kept in its step


def run_agent(
    question: Question,
    llm: LLM,
    tools: Toolbox,
    budget: Budget,
    *,
    protocol: Literal["text", "native"] = "native",
    on_step: StepObserver | None = None,
    limits: ContextLimits | None = None,
    tool_timeout_s: float | None = 20.0,
) -> Trace:
    """Diagnose `question` with the model and tools, within `budget`; each Step goes to `on_step` as it completes."""
    limits = limits or ContextLimits()
    run = Run(question, protocol_for(protocol).name, llm.model, on_step)
    stop: StopReason | None = None
    while stop is None:
        stop = gate_before_call(run.steps, budget, elapsed_s=run.elapsed_s, tokens_used=run.tokens_used)
        if stop is None:  # the protocol is read each turn: a server that ignores tools switches the run to text
            stop = _take_turn(run, protocol_for(run.protocol), llm, tools, budget, limits, tool_timeout_s)
    if stop is StopReason.FINISH:
        return run.trace(run.answer, stop, complete=True)
    return run.trace(conclude(run, llm, stop, budget, limits), stop, complete=False)


def _take_turn(
    run: Run,
    proto: ReactProtocol,
    llm: LLM,
    tools: Toolbox,
    budget: Budget,
    limits: ContextLimits,
    tool_timeout_s: float | None,
) -> StopReason | None:
    """One model call and what follows from it; returns the stop reason if this turn ends the run."""
    started = time.monotonic()
    request = proto.request(run.question, run.exchanges, tools, budget, limits)
    run.llm_calls += 1
    try:
        reply = llm.complete(
            request.messages, tools=request.tools, stop=request.stop, timeout_s=run.time_left_s(budget)
        )
    except Exception as exc:  # LLMUnavailable, or an adapter bug: either way the model is out of reach
        log.warning("LLM unavailable at call %d (trace_id=%s): %s", run.llm_calls, run.trace_id, exc)
        run.notes.extend(failed_attempt_notes(exc))
        run.notes.append(f"LLM unavailable at call {run.llm_calls}: {exc}")
        return StopReason.LLM_UNAVAILABLE
    run.notes.extend(reply.failed_attempts)  # the attempts the SDK retried before this reply
    llm_ms = int((time.monotonic() - started) * 1000)
    decision = proto.decision_from_reply(reply, tools, run.next_index)
    if ignores_tools(decision, reply, tools_offered=bool(request.tools), first_call=run.llm_calls == 1):
        return _switch_to_text(run, llm, reply, llm_ms)
    decision = screened(decision, reply, _system_prompt(request), tools)
    if isinstance(decision, Finish) and decision.answer.strip():
        run.answer = decision.answer
        run.add([_step(run.next_index, thought=decision.thought, action="finish", reply=reply, elapsed_ms=llm_ms)])
        return StopReason.FINISH
    if isinstance(decision, Finish):
        decision = Unreadable(decision.thought, "Format error: the final answer is empty. Write it after Final Answer:")
    if isinstance(decision, Unreadable):
        step = _step(
            run.next_index,
            thought=decision.thought,
            action="",
            reply=reply,
            elapsed_ms=llm_ms,
            observation=with_raw_reply(decision.message, reply.content),
            status="format_error",
        )
        run.add([step], proto.exchange(reply, decision, (), [step]))
        return gate_after_step(run.steps, budget)
    executed = execute_calls(decision.calls, run.steps, tools, budget, _tool_timeout(run, budget, tool_timeout_s))
    steps = _tool_steps(run.next_index, decision, executed, reply, llm_ms)
    run.add(steps, proto.exchange(reply, decision, executed.outcomes, steps))
    return StopReason.REPEATED_ACTION if executed.only_repeats else gate_after_step(run.steps, budget)


def _switch_to_text(run: Run, llm: LLM, reply: LLMReply, llm_ms: int) -> StopReason | None:
    """Tools offered, prose back at step 1: say so, keep the reply as a step, go on in the text protocol."""
    endpoint = getattr(llm, "endpoint", "") or "the endpoint"
    note = (
        f"{TOOLS_IGNORED_NOTE} ({llm.model} at {endpoint} answered step 1 in prose without calling one); "
        "this run went on in the text protocol."
    )
    log.warning("%s trace_id=%s", note, run.trace_id)
    run.notes.append(note)
    run.protocol = "text"
    run.add(
        [
            _step(
                run.next_index,
                thought="",
                action="",
                reply=reply,
                elapsed_ms=llm_ms,
                status="format_error",
                observation=with_raw_reply(
                    "The server ignored the tools: switched to the text protocol.", reply.content
                ),
            )
        ]
    )
    return None


def with_raw_reply(message: str, content: str) -> str:
    """A format error as traced: what was wrong, then the reply itself (capped), so the trace shows what came."""
    raw = content.strip()
    if not raw:
        return f"{message}\n\n(The reply was empty.)"
    more = f"\n[... {len(raw) - _RAW_REPLY_CHARS:,} more characters]" if len(raw) > _RAW_REPLY_CHARS else ""
    return f"{message}\n\nThe reply was:\n{raw[:_RAW_REPLY_CHARS]}{more}"


def _system_prompt(request: LLMRequest) -> str:
    first = request.messages[0] if request.messages else {}
    return str(first.get("content") or "") if first.get("role") == "system" else ""


def _tool_steps(first_index: int, decision: Act, executed: Executed, reply: LLMReply, llm_ms: int) -> list[Step]:
    """A step per call that ran (or was refused as a repeat); the model call's time and tokens go on the first."""
    steps = []
    for offset, outcome in enumerate(executed.stepped):
        tool_ms = executed.elapsed_ms.get(outcome.call.call_id, 0)
        first = offset == 0  # the reply's thought, tokens and model time belong to the first call it made
        step = _step(
            first_index + offset,
            thought=decision.thought if first else "",
            action=outcome.call.name,
            reply=reply if first else None,
            elapsed_ms=(llm_ms if first else 0) + tool_ms,
            observation=outcome.result.text,
            status=outcome.result.status,
            call=outcome.call,
            data=outcome.result.data,
        )
        steps.append(step)
    return steps


def _step(
    index: int,
    *,
    thought: str,
    action: str,
    reply: LLMReply | None,
    elapsed_ms: int,
    observation: str = "",
    status: str = "ok",
    call: ToolCall | None = None,
    data: ToolData | None = None,
) -> Step:
    return Step(
        index=index,
        thought=thought,
        action=action,
        args=dict(call.args) if call else {},
        observation=observation,
        status=status,  # type: ignore[arg-type]  # ToolResult statuses are a subset of StepStatus
        elapsed_ms=elapsed_ms,
        prompt_tokens=reply.prompt_tokens if reply else 0,
        completion_tokens=reply.completion_tokens if reply else 0,
        data=data,
    )


def _tool_timeout(run: Run, budget: Budget, tool_timeout_s: float | None) -> float:
    """A tool never runs past the run's time budget (at least 1 s, so a late call can still answer)."""
    remaining = max(1.0, budget.time_budget_s - run.elapsed_s)
    return remaining if tool_timeout_s is None else min(tool_timeout_s, remaining)


def answer_once(
    question: Question,
    llm: LLM,
    tools: Toolbox,
    *,
    allow_tool: bool = False,
    on_step: StepObserver | None = None,
    tool_timeout_s: float = 20.0,
    llm_timeout_s: float | None = None,
) -> Trace:
    """One cheap answer (protocol "single"): lookups, chit-chat; with `allow_tool`, at most one tool call first."""
    run = Run(question, "single", getattr(llm, "cheap_model", llm.model), on_step)
    rule = _ONE_TOOL_RULE if allow_tool and len(tools) else "Answer directly; no tools are available for this."
    messages = [
        {"role": "system", "content": load_prompt("answer_once", tool_rule=rule)},
        {"role": "user", "content": question_text(question)},
    ]
    try:
        started = time.monotonic()
        specs = tool_schemas(tools) if allow_tool and len(tools) else None
        reply = llm.complete(messages, tools=specs, role="cheap", timeout_s=llm_timeout_s)
        run.notes.extend(reply.failed_attempts)
        if specs and reply.tool_calls:
            messages = _with_lookup(run, reply, tools, messages, started, tool_timeout_s)
            started = time.monotonic()
            reply = llm.complete(messages, role="cheap", timeout_s=llm_timeout_s)  # no tools now: lookup done
            run.notes.extend(reply.failed_attempts)
    except Exception as exc:  # LLMUnavailable or an adapter bug: answer anyway, honestly
        log.warning("LLM unavailable for a single answer (trace_id=%s): %s", run.trace_id, exc)
        run.notes.extend(failed_attempt_notes(exc))
        run.notes.append(f"LLM unavailable: {exc}")
        preface = f"The LLM was unavailable: {exc}."
        label = partial_label(StopReason.LLM_UNAVAILABLE, "")
        return run.trace(
            f"{label}\n\n{answer_from_observations(run.steps, preface)}", StopReason.LLM_UNAVAILABLE, complete=False
        )
    thought, answer = split_final(reply.content)
    elapsed_ms = int((time.monotonic() - started) * 1000)
    unusable = _unusable_single(reply, answer, str(messages[0]["content"]))
    if unusable:  # cut off, echoed or empty: never shown; the caller falls back (canned reply, full diagnosis)
        run.add(
            [
                _step(
                    run.next_index,
                    thought="",
                    action="",
                    reply=reply,
                    elapsed_ms=elapsed_ms,
                    observation=with_raw_reply(f"Not an answer: {unusable}.", reply.content),
                    status="format_error",
                )
            ]
        )
        run.notes.append(f"unusable single answer: {unusable}")
        why = unusable.split(" (")[0]  # the echo itself stays in the note, never in the answer
        return run.trace(partial_label(StopReason.FORMAT_ERRORS, why), StopReason.FORMAT_ERRORS, complete=False)
    run.add([_step(run.next_index, thought=thought, action="finish", reply=reply, elapsed_ms=elapsed_ms)])
    return run.trace(answer, StopReason.FINISH, complete=True)


def _unusable_single(reply: LLMReply, answer: str, system_prompt: str) -> str:
    """Why a one-shot reply is no answer ("" when it is one): empty, cut off, or an echo of the prompt."""
    if not answer:
        return "empty reply"
    if reply.finish_reason == "length":
        return "the reply was cut off at the token limit"
    echoed = echoed_text(reply.content, (system_prompt,))
    return f"the reply repeated its instructions ({echoed!r})" if echoed else ""


_ONE_TOOL_RULE = (
    "If one lookup with a tool answers the message (a current value, the last deploy), call exactly one tool; "
    "otherwise answer directly. You will not get a second tool call."
)


def _with_lookup(
    run: Run, reply: LLMReply, tools: Toolbox, messages: list[dict[str, str]], started: float, tool_timeout_s: float
) -> list[dict[str, str]]:
    """Run the first requested call; the follow-up request carries its result as text (no tool messages)."""
    call = reply.tool_calls[0]
    call = ToolCall(call.name, call.args, call.call_id or "lookup")
    executed = execute_calls((call,), (), tools, Budget(), tool_timeout_s)
    llm_ms = int((time.monotonic() - started) * 1000) - executed.elapsed_ms.get(call.call_id, 0)
    thought = reply.content.strip()
    run.add(_tool_steps(run.next_index, Act(thought, (call,)), executed, reply, llm_ms))
    result = executed.outcomes[0].result
    lookup = f"Lookup {call_text(run.steps[-1])} -> {result.status}:\n{fence_observation(result.text)}"
    return [messages[0], {"role": "user", "content": f"{messages[1]['content']}\n\n{lookup}\n\nNow answer."}]
