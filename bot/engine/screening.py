"""What a weak model's reply must not be taken for: the checks between reading a reply and acting on it.

- A reply cut off at the token limit (`finish_reason=length`) is never an answer: a format error, with a hint
  to be shorter.
- A reply that echoes the system prompt or copies the format template is a format error, never shown to a user.
- A tool name copied from a template (`<one tool name>`) is a format error that lists the valid tools.
- A native run whose first reply is plain prose although tools were offered is talking to a server that
  ignores them (llama.cpp's without `tool_choice`, a model without a tool template): the loop switches that run,
  and the Router that model, to the text protocol.
"""

from __future__ import annotations

from bot.engine.llm import LLMReply
from bot.engine.protocol import Act, Decision, Finish, Unreadable
from bot.engine.text.echo import echoed_text, is_placeholder_name
from bot.engine.text.parser import EXPECTED_FORMAT
from bot.engine.types import ToolCall
from tools.base import Toolbox

CUT_OFF_HINT = " Your reply was cut off at the reply token limit: keep the Thought to a few sentences."


def screened(decision: Decision, reply: LLMReply, system_prompt: str, tools: Toolbox) -> Decision:
    """The decision, or a format error when the reply echoed the prompt, named a placeholder tool or was cut off."""
    if isinstance(decision, Act) and decision.calls:
        name = decision.calls[0].name
        if name not in tools.names and is_placeholder_name(name):
            message = (
                f"Format error: {name!r} is a placeholder, not a tool. Name one of the valid tools: "
                f"{', '.join(tools.names)}."
            )
            return Unreadable(decision.thought, message, decision.calls)
    echoed = echoed_text(reply.content, (system_prompt,))
    if echoed:
        message = (
            f"Format error: your reply repeats the instructions ({echoed!r}) instead of following them. "
            f"Write your own step in exactly this format:\n\n{EXPECTED_FORMAT}"
        )
        return _with_cut_off_hint(Unreadable("", message, _calls_of(decision)), reply)
    if isinstance(decision, Finish) and reply.finish_reason == "length":
        message = "Format error: the reply ended at the token limit, so it is not a finished answer."
        return Unreadable(decision.thought, message + CUT_OFF_HINT)
    return _with_cut_off_hint(decision, reply) if isinstance(decision, Unreadable) else decision


def ignores_tools(decision: Decision, reply: LLMReply, *, tools_offered: bool, first_call: bool) -> bool:
    """Tools were offered on the first call and the reply is plain prose: no call and no Final Answer label."""
    if not (tools_offered and first_call) or reply.tool_calls:
        return False
    return isinstance(decision, Finish) and "final answer" not in reply.content.lower()


def _with_cut_off_hint(decision: Unreadable, reply: LLMReply) -> Unreadable:
    if reply.finish_reason != "length" or CUT_OFF_HINT in decision.message:
        return decision
    return Unreadable(decision.thought, decision.message + CUT_OFF_HINT, decision.calls)


def _calls_of(decision: Decision) -> tuple[ToolCall, ...]:
    return decision.calls if isinstance(decision, Act | Unreadable) else ()
