"""The two ways a model can drive the loop: text ReAct and native tool calls. Each renders a request and reads a
reply into a Decision, and turns a finished step back into messages the model sees on its next turn.

Native rule that servers enforce: every `tool_call_id` in an assistant message gets a `role: tool` answer, also
for calls that were not run. An exchange is therefore always recorded whole, with an answer for each call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from bot.engine.context import (
    Answer,
    ContextLimits,
    Exchange,
    Message,
    budget_note,
    render_messages,
    tool_catalogue,
    tool_schemas,
)
from bot.engine.guards import counted_steps
from bot.engine.llm import LLMReply
from bot.engine.prompts import load_prompt
from bot.engine.text.arguments import UNPARSED_ARGS_KEY
from bot.engine.text.parser import EXPECTED_FORMAT, FINISH_NAMES, ParsedAction, ParsedFinal, parse_reply
from bot.engine.types import Budget, Question, Step, ToolCall
from tools.base import Toolbox, ToolResult

# The model must not write the Observation itself; the API takes at most four stop sequences. No leading newline:
# a reply that opens with a made-up "Observation:" is cut there too (the stop matches anywhere in the output).
TEXT_STOP = ("Observation:", "Observation：", "观察:", "观察：")
_FINAL_LABEL = re.compile(r"^\s*\**\s*final answer\s*\**\s*[:：]\s*", re.IGNORECASE | re.MULTILINE)
_THOUGHT_LABEL = re.compile(r"^\s*\**\s*thought\s*\**\s*[:：]\s*", re.IGNORECASE)
_RAW_REPLY_CHARS = 1_500


@dataclass(frozen=True)
class LLMRequest:
    messages: list[Message]
    tools: list[dict[str, Any]] | None = None
    stop: list[str] | None = None


@dataclass(frozen=True)
class Finish:
    thought: str
    answer: str


@dataclass(frozen=True)
class Act:
    thought: str
    calls: tuple[ToolCall, ...]
    ignored_actions: int = 0  # text protocol: further actions in the same reply, never run


@dataclass(frozen=True)
class Unreadable:
    thought: str
    message: str  # what was wrong, and the expected format
    calls: tuple[ToolCall, ...] = ()  # native calls whose ids still need an answer


Decision = Finish | Act | Unreadable


@dataclass(frozen=True)
class Outcome:
    """What became of one requested call: its result, and whether it ran at all."""

    call: ToolCall
    result: ToolResult
    ran: bool


class NativeProtocol:
    """OpenAI tool calls. The loop runs the tools itself; the Thought is the message content."""

    name: Literal["native"] = "native"

    def request(
        self, question: Question, exchanges: Sequence[Exchange], tools: Toolbox, budget: Budget, limits: ContextLimits
    ) -> LLMRequest:
        """System prompt, history and budget note; the tools go in `tools=`, so the prompt does not repeat them.

        The last step offers the tools too: a model that still calls one there is not done, and the run ends in a
        conclusion labelled partial rather than in an answer it was made to give."""
        system = load_prompt("react_native")  # the step budget is in the note on every turn
        note = budget_note(_steps_in(exchanges), budget)
        messages = render_messages(system, question, exchanges, limits, note)
        return LLMRequest(messages, tools=tool_schemas(tools))

    def decision_from_reply(self, reply: LLMReply, tools: Toolbox, step_index: int) -> Decision:
        """Tool calls -> Act (ids filled in when the server sent none); plain content -> Finish."""
        content = reply.content.strip()
        calls = tuple(
            ToolCall(c.name, c.args, c.call_id or f"call_{step_index}_{i}") for i, c in enumerate(reply.tool_calls)
        )
        thought = _THOUGHT_LABEL.sub("", content) if calls else ""
        if calls and calls[0].name.lower() in FINISH_NAMES:
            return Finish(thought, str(calls[0].args.get("answer", "")).strip() or content)
        if any(UNPARSED_ARGS_KEY in c.args for c in calls):
            bad = next(c for c in calls if UNPARSED_ARGS_KEY in c.args)
            message = f"the arguments of {bad.name} are not a JSON object: {bad.args[UNPARSED_ARGS_KEY]!r}"
            return Unreadable(thought, f"Format error: {message}. Send the arguments as one JSON object.", calls)
        if calls:
            return Act(thought, calls)
        if not content:
            return Unreadable("", "Format error: the reply was empty. Call one tool, or give your Final Answer.")
        return Finish(*split_final(content))

    def exchange(
        self, reply: LLMReply, decision: Act | Unreadable, outcomes: Sequence[Outcome], steps: Sequence[Step]
    ) -> Exchange:
        """The assistant message with its calls, and one tool message per call id (run or not)."""
        calls = decision.calls
        # "" rather than null: llama.cpp's server answers HTTP 500 to `"content": null` next to tool calls
        assistant: Message = {"role": "assistant", "content": reply.content or ""}
        if calls:
            assistant["tool_calls"] = [_call_to_openai(call) for call in calls]
        elif not reply.content:
            assistant["content"] = "(empty reply)"
        if isinstance(decision, Unreadable):
            errors = [Answer("tool", decision.message, tool_call_id=c.call_id) for c in calls]
            return Exchange(tuple(steps), assistant, tuple(errors or [Answer("user", decision.message)]))
        by_id = {o.call.call_id: o for o in outcomes}
        nudge = "" if decision.thought else "\n(No Thought was given. State what you know and why, before each call.)"
        answers = [_observation(by_id[c.call_id], "tool", suffix=nudge) for c in calls]
        return Exchange(tuple(steps), assistant, tuple(answers))


class TextProtocol:
    """Thought / Action / Action Input in plain text, read by the lenient parser; stop sequences at Observation."""

    name: Literal["text"] = "text"

    def request(
        self, question: Question, exchanges: Sequence[Exchange], tools: Toolbox, budget: Budget, limits: ContextLimits
    ) -> LLMRequest:
        """The tool catalogue is in the system prompt (once); no `tools=`; stop before a made-up Observation.

        The newest exchange is always re-sent verbatim: the model's own replies are its examples of the format."""
        system = load_prompt("react_text", tools=tool_catalogue(tools), max_steps=budget.max_steps)
        note = budget_note(_steps_in(exchanges), budget)
        limits = replace(limits, keep_recent_steps=max(limits.keep_recent_steps, 1))
        return LLMRequest(render_messages(system, question, exchanges, limits, note), stop=list(TEXT_STOP))

    def decision_from_reply(self, reply: LLMReply, tools: Toolbox, step_index: int) -> Decision:
        """The parser's reading: the first action, a final answer, or a format error quoting the format."""
        try:
            parsed = parse_reply(reply.content, tools.names)
        except Exception as exc:  # a parser bug must cost one step, not the run
            return Unreadable(
                "",
                f"Format error: the reply could not be read ({exc}). Reply in exactly this "
                f"format:\n\n{EXPECTED_FORMAT}",
            )
        if isinstance(parsed, ParsedFinal):
            return Finish(parsed.thought, parsed.answer)
        if isinstance(parsed, ParsedAction):
            call = ToolCall(parsed.action, parsed.args, f"step_{step_index}")
            return Act(parsed.thought, (call,), parsed.ignored_actions)
        return Unreadable(parsed.thought, parsed.message)

    def exchange(
        self, reply: LLMReply, decision: Act | Unreadable, outcomes: Sequence[Outcome], steps: Sequence[Step]
    ) -> Exchange:
        """Replay the step in canonical form (it teaches the format), the observation as the user's turn."""
        if isinstance(decision, Unreadable):
            raw = reply.content.strip()[:_RAW_REPLY_CHARS] or "(empty reply)"
            error = Answer("user", f"Observation: {decision.message}")
            return Exchange(tuple(steps), {"role": "assistant", "content": raw}, (error,))
        call = decision.calls[0]
        text = f"Thought: {decision.thought}\nAction: {call.name}\nAction Input: {json.dumps(dict(call.args))}"
        ignored = decision.ignored_actions
        note = f"\n({ignored} more action(s) in your reply were not run: one per step.)" if ignored else ""
        answer = _observation(outcomes[0], "user", prefix="Observation: ", suffix=note)
        return Exchange(tuple(steps), {"role": "assistant", "content": text}, (answer,))


ReactProtocol = NativeProtocol | TextProtocol


def protocol_for(name: str) -> ReactProtocol:
    """The protocol object for Settings' `llm.protocol` ("text" or "native")."""
    if name == "text":
        return TextProtocol()
    if name == "native":
        return NativeProtocol()
    raise ValueError(f"unknown protocol {name!r}: use 'text' or 'native'")


def split_final(content: str) -> tuple[str, str]:
    """(thought, answer) from a finishing reply: the text after a "Final Answer:" label, else all of it."""
    match = _FINAL_LABEL.search(content)
    if not match:
        return "", content.strip()
    thought = _THOUGHT_LABEL.sub("", content[: match.start()]).strip()
    return thought, content[match.end() :].strip() or content.strip()


def _observation(outcome: Outcome, role: Literal["tool", "user"], *, prefix: str = "", suffix: str = "") -> Answer:
    """A call's result as the model will see it: status, then the tool output fenced (cut at render time)."""
    call_id = outcome.call.call_id if role == "tool" else ""
    if not outcome.ran:  # our own words ("not run: ..."), not tool output
        return Answer(role, prefix + outcome.result.text, suffix=suffix, tool_call_id=call_id)
    status = "" if outcome.result.status == "ok" else f"[{outcome.result.status}] "
    return Answer(role, prefix + status, outcome.result.text, suffix, call_id, outcome.result.data)


def _steps_in(exchanges: Sequence[Exchange]) -> int:
    """The steps used so far as the budget counts them (a few calculations are free)."""
    return counted_steps([step for exchange in exchanges for step in exchange.steps])


def _call_to_openai(call: ToolCall) -> dict[str, Any]:
    arguments = call.args.get(UNPARSED_ARGS_KEY) or json.dumps(
        dict(call.args), ensure_ascii=False, separators=(",", ":")
    )
    return {"id": call.call_id, "type": "function", "function": {"name": call.name, "arguments": arguments}}
