"""Lenient reading of text-ReAct model output: one action (the first) or a final answer, or a ParseError.

Three readers, one module each: bot.engine.text.labels finds the labels (any spelling, tags, Chinese), this module
decides what they mean and reads the action name, bot.engine.text.arguments reads the arguments (json-repair, ast).
A reply that cannot be read becomes a ParseError whose message quotes the expected format, so the loop can
send it back to the model as a format-error observation.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from bot.engine.text.arguments import Unreadable, answer_from_args, args_from_call, args_from_text, loads_lenient
from bot.engine.text.labels import (
    Segment,
    cut_at_observation,
    normalise_reply,
    segments_from_reply,
    strip_fences,
    text_from,
    tidy_answer,
)

EXPECTED_FORMAT = (
    "Thought: <your reasoning about what to check next>\n"
    "Action: <one tool name>\n"
    'Action Input: <the arguments as one JSON object, e.g. {"service": "shipping"}>\n'
    "\n"
    "or, when you can conclude:\n"
    "\n"
    "Thought: <your reasoning>\n"
    "Final Answer: <root cause and the evidence for it>"
)
FINISH_NAMES = frozenset({"finish", "final_answer", "finalanswer", "final answer", "done"})
_NO_ACTION = frozenset({"", "none", "null", "n/a", "na", "no action", "nothing", "无"})
_CALL = re.compile(r"^(?P<name>[\w.\-]+)\s*(?P<open>[(\[])(?P<inner>.*)[)\]]\s*$", re.S)
_JSON_NAME_KEYS = ("action", "tool", "name", "tool_name", "function")
_JSON_ARGS_KEYS = ("action_input", "arguments", "args", "input", "parameters", "tool_input")


@dataclass(frozen=True)
class ParsedAction:
    thought: str
    action: str
    args: dict[str, Any]
    ignored_actions: int = 0


@dataclass(frozen=True)
class ParsedFinal:
    thought: str
    answer: str


@dataclass(frozen=True)
class ParseError:
    message: str
    thought: str = ""


Parsed = ParsedAction | ParsedFinal | ParseError


def parse_reply(text: str, tool_names: Collection[str] = ()) -> Parsed:
    """Read one model reply: the first action (later ones counted, not run), a final answer, or a ParseError."""
    chatter, segments = segments_from_reply(normalise_reply(text or ""))
    segments = cut_at_observation(segments)
    if not segments:
        return _from_unlabelled(chatter, tool_names)
    decision = next((i for i, s in enumerate(segments) if _is_decision(s)), None)
    thought = _thought_before(segments, decision, chatter)
    if decision is None:
        return format_error("there is no Action (with a tool name) or Final Answer line", thought)
    if segments[decision].kind == "final_answer":
        return _final(thought, tidy_answer(text_from(segments, decision)))
    try:
        return _action(thought, segments, decision, tool_names)
    except Unreadable as exc:
        return format_error(str(exc), thought)


def parsed_to_dict(parsed: Parsed) -> dict[str, Any]:
    """JSON-ready form used by `opsbot parse`: kind action | final | error."""
    if isinstance(parsed, ParsedAction):
        return {
            "kind": "action",
            "action": parsed.action,
            "args": parsed.args,
            "thought": parsed.thought,
            "ignored_actions": parsed.ignored_actions,
        }
    if isinstance(parsed, ParsedFinal):
        return {"kind": "final", "answer": parsed.answer, "thought": parsed.thought}
    return {"kind": "error", "message": parsed.message, "thought": parsed.thought}


def format_error(reason: str, thought: str = "") -> ParseError:
    """A ParseError whose message says what was wrong and quotes the expected format."""
    return ParseError(f"Format error: {reason}. Reply in exactly this format:\n\n{EXPECTED_FORMAT}", thought)


def _is_decision(segment: Segment) -> bool:
    """A Final Answer, or an Action naming something: "Action: None" before a Final Answer is not a call."""
    if segment.kind == "final_answer":
        return True
    return segment.kind == "action" and strip_fences(segment.text).strip("`*[]. ").lower() not in _NO_ACTION


def _thought_before(segments: list[Segment], decision: int | None, chatter: str) -> str:
    """The last Thought before the decision; without one, the chatter before the first label."""
    upto = segments if decision is None else segments[:decision]
    thoughts = [s.text for s in upto if s.kind == "thought"]
    return thoughts[-1] if thoughts else chatter


def _final(thought: str, answer: str) -> Parsed:
    if not answer:
        return format_error("the Final Answer is empty", thought)
    return ParsedFinal(thought, answer)


def _action(thought: str, segments: list[Segment], decision: int, tool_names: Collection[str]) -> Parsed:
    """Read the first action and its input; later actions are only counted."""
    later = segments[decision + 1 :]
    next_action = next((i for i, s in enumerate(later) if s.kind == "action"), len(later))
    inputs = [s.text for s in later[:next_action] if s.kind == "action_input"]
    name, args = action_from_text(segments[decision].text, inputs[0] if inputs else None, tool_names)
    ignored = sum(1 for s in later if s.kind == "action")
    if name.lower() in FINISH_NAMES:
        return _final(thought, answer_from_args(args))
    if not isinstance(args, dict):
        raise Unreadable("the Action Input is not a JSON object")
    return ParsedAction(thought, name, args, ignored)


def action_from_text(value: str, input_text: str | None, tool_names: Collection[str]) -> tuple[str, Any]:
    """Read `name`, `name[{...}]`, `name(a=1)`, `name {...}` or a JSON action object; returns (name, args)."""
    value = strip_fences(value)
    if value.startswith("{"):
        return _action_from_json(loads_lenient(value), tool_names)
    head, _, rest = value.partition("\n")
    if input_text is None and rest.strip().startswith(("{", "```")):
        input_text = rest  # "Action: tool" followed directly by a JSON block without its own label
    call = _CALL.match(head.strip().strip("`*"))
    if call and (input_text is None or call["inner"].strip().startswith(("{", "'", '"')) or "=" in call["inner"]):
        return tool_name_from(call["name"], tool_names), args_from_call(call["inner"], call["open"])
    name, inline = _split_inline(head, tool_names)
    source = input_text if input_text is not None else inline
    return name, args_from_text(source, raw_ok=name.lower() in FINISH_NAMES)


def _split_inline(head: str, tool_names: Collection[str]) -> tuple[str, str]:
    """Split `query_metrics {"service": "x"}` into the name and the inline arguments."""
    brace = head.find("{")
    name_part, inline = (head[:brace], head[brace:]) if brace >= 0 else (head, "")
    return tool_name_from(name_part, tool_names), inline


def tool_name_from(raw: str, tool_names: Collection[str]) -> str:
    """Clean a tool name (backticks, quotes, bold, trailing punctuation) and match it to a known tool."""
    name = raw.strip().strip("`*'\"“”[]").strip().rstrip(".:,;").strip("`*'\"[]")
    if name.startswith("functions."):
        name = name.removeprefix("functions.")
    if not tool_names or name in tool_names:
        return name
    by_lower = {t.lower(): t for t in tool_names}
    if name.lower() in by_lower:
        return by_lower[name.lower()]
    mentioned = [t for t in tool_names if re.search(rf"\b{re.escape(t)}\b", name, re.ASCII)]  # 使用query_logs
    return mentioned[0] if len(mentioned) == 1 else name


def _action_from_json(obj: Any, tool_names: Collection[str]) -> tuple[str, Any]:
    """`{"action": "tool", "action_input": {...}}` and the similar shapes models emit."""
    if not isinstance(obj, Mapping):
        raise Unreadable("the Action is neither a tool name nor a JSON action object")
    name = next((obj[k] for k in _JSON_NAME_KEYS if isinstance(obj.get(k), str)), None)
    if not name:
        raise Unreadable('the JSON action has no "action" (tool name) field')
    args: Any = next((obj[k] for k in _JSON_ARGS_KEYS if k in obj), {})
    if isinstance(args, str) and name.lower() not in FINISH_NAMES:
        args = args_from_text(args)
    return tool_name_from(name, tool_names), args


def _from_unlabelled(text: str, tool_names: Collection[str]) -> Parsed:
    """A reply with no labels at all may still be a bare JSON action object."""
    obj = loads_lenient(text) if "{" in text else None
    try:
        name, args = _action_from_json(obj, tool_names)
    except Unreadable:
        pass
    else:
        thought = str(obj.get("thought", "")).strip() if isinstance(obj, Mapping) else ""
        if name.lower() in FINISH_NAMES:
            return _final(thought, answer_from_args(args))
        if isinstance(args, dict):
            return ParsedAction(thought, name, args)
    reason = "the reply is empty" if not text else "the reply has no Thought / Action / Final Answer labels"
    return format_error(reason)
