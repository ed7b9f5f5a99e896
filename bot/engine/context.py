"""What the model sees: the system prompt, the question with thread memory, and a bounded history.

Three levers keep the prompt small as a run grows: the newest observation is cut when long (head and tail
kept, with a marker saying how much went); older kept observations are re-sent as a digest of the evidence
lines their data cites (bot/engine/history/digest.py, evidence.py), under a smaller cap; and steps older than
the last `keep_recent_steps` shrink to one line each with the step's Thought, compressed, and its key finding
(bot/engine/history/memory.py). By default no exchange is kept verbatim: the request is the system prompt and one
user message (the question, the older steps as lines, the newest step with its result in full), so no tool-call
message is re-sent. Tool output is untrusted (logs can contain anything), so observations are fenced and the
prompts say they are data. All of this happens at render time: the Trace keeps every observation whole.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from bot.engine.history.digest import indexed_evidence, observation_gist, resent
from bot.engine.history.evidence import reading_of
from bot.engine.history.memory import GIST_CHARS, fence_observation, newest_step_text, old_steps_text, plain_value
from bot.engine.types import Budget, Question, Step
from tools.base import Toolbox, ToolData

Message = dict[str, Any]

_MIN_OBSERVATION_CHARS = 600


@dataclass(frozen=True)
class ContextLimits:
    """How much history the model sees: observation size and how many steps stay verbatim."""

    max_observation_chars: int = 2_500
    keep_recent_steps: int = 0  # 0: every step a line, the newest with its result in full (memory.py)
    digest_read_observations: bool = True  # kept observations older than the newest: evidence lines only


@dataclass(frozen=True)
class Answer:
    """One message answering the model: fixed text around a raw observation, fenced and cut when rendered."""

    role: Literal["tool", "user"]
    prefix: str = ""
    observation: str | None = None  # raw tool output; None when the answer carries no tool output
    suffix: str = ""
    tool_call_id: str = ""
    data: ToolData | None = None  # what the tool rendered the observation from (None: a text-only result)

    def to_message(self, max_observation_chars: int, *, digest: bool = False) -> Message:
        """The message as sent; `digest` re-sends only the evidence lines of an observation already read."""
        if self.observation is None:
            body = ""
        else:
            reading = reading_of(self.observation, self.data)
            shown, evidence = resent(reading, max_observation_chars, digest=digest)
            body = fence_observation(truncate_observation(shown, max_observation_chars, evidence))
        message: Message = {"role": self.role, "content": f"{self.prefix}{body}{self.suffix}"}
        if self.role == "tool":
            message["tool_call_id"] = self.tool_call_id
        return message


@dataclass(frozen=True)
class Exchange:
    """One model turn as it is replayed to the model: its steps, the assistant message and the answers to it."""

    steps: tuple[Step, ...]
    assistant: Message
    answers: tuple[Answer, ...]


def observation_cap(limits: ContextLimits, age: int) -> int:
    """The character limit for a kept observation `age` exchanges old: the full limit, then half each time."""
    # The model's Thought after an observation already says what it showed, so older ones can shrink; the floor
    # keeps enough head and tail to stay readable.
    return max(limits.max_observation_chars >> age, min(limits.max_observation_chars, _MIN_OBSERVATION_CHARS))


def truncate_observation(text: str, max_chars: int, evidence: Sequence[tuple[int, str]] = ()) -> str:
    """Keep the head and the tail (totals and the latest lines live there), on line boundaries; mark the cut.

    The `evidence` lines (line index in `text`, as re-sent) inside the cut part (a changed setting in the middle of
    a diff, a deploy record) are kept in the marker, within a third of the limit, so a cut never hides the finding
    itself.
    """
    if len(text) <= max_chars:
        return text
    head, tail = _head_and_tail(text, max_chars)
    kept = _evidence_between(text, head, tail, evidence, max_chars // 3)
    if kept:
        head, tail = _head_and_tail(text, max_chars - len(kept))
        kept = _evidence_between(text, head, tail, evidence, len(kept))
    cut = text[len(head) : len(text) - len(tail)]
    lines = len(cut.strip("\n").splitlines())
    marker = f"[... {len(cut):,} characters ({lines:,} lines) cut; narrow the query to see them ...]"
    if kept:
        marker = f"{marker[:-5]}; its evidence lines follow ...]\n{kept}\n[... end of the cut part ...]"
    return f"{head}\n{marker}\n{tail}"


def _head_and_tail(text: str, max_chars: int) -> tuple[str, str]:
    head = text[: max_chars * 2 // 3]
    tail = text[len(text) - (max_chars - len(head)) :]
    if (newline := head.rfind("\n")) > len(head) // 2:  # whole lines, unless that loses too much
        head = head[:newline]
    if 0 <= (newline := tail.find("\n")) < len(tail) // 2:
        tail = tail[newline + 1 :]
    return head, tail


def _evidence_between(text: str, head: str, tail: str, evidence: Sequence[tuple[int, str]], max_chars: int) -> str:
    """Evidence lines wholly inside the cut part (neither head nor tail shows them), within `max_chars`: taken in
    `evidence`'s order (its priority) while each fits, shown in the text's order."""
    first, last = head.count("\n") + 1, text.count("\n") - tail.count("\n") - 1
    kept: list[tuple[int, str]] = []
    used = 0
    for index, line in evidence:
        if first <= index <= last and used + len(line) <= max_chars:
            kept.append((index, line))
            used += len(line) + 1
    return "\n".join(line for _, line in sorted(kept, key=lambda k: k[0]))  # stable: a diff file label first


def call_text(step: Step) -> str:
    """`query_logs(service="order", level="ERROR")`, or what stood in for a call."""
    if step.status == "format_error" or not step.action:
        return "(unreadable reply)"
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in step.args.items())
    return f"{step.action}({args})"


def step_to_line(step: Step) -> str:
    """One line for an old step: what was called, how it went, and its key finding (see digest.py)."""
    return f"#{step.index} {_compact_call_text(step)} -> {step.status}: {result_gist(step)}"


def result_gist(step: Step, max_chars: int = GIST_CHARS) -> str:
    """The key finding of a step's result on one line, from its data (digest.py); a result without data (an
    error, a text-only tool's) by its first line."""
    return observation_gist(reading_of(step.observation, step.data), max_chars)


def _compact_call_text(step: Step) -> str:
    """`query_logs(service=order, level=ERROR)`: plain values unquoted, the rest as JSON."""
    if step.status == "format_error" or not step.action:
        return call_text(step)
    args = ", ".join(f"{k}={plain_value(v)}" for k, v in step.args.items())
    return f"{step.action}({args})"


def tool_catalogue(tools: Toolbox) -> str:
    """Each tool once: name, description, and one line per argument (type, default, legal values, meaning)."""
    return "\n\n".join(f"### {spec.name}\n{spec.description}\n{arguments_text(spec.parameters)}" for spec in tools)


def tool_schemas(tools: Toolbox) -> list[dict[str, Any]]:
    """The `tools=` entries as sent: each tool's schema without what tells the model nothing (an empty default,
    `additionalProperties: false`: the arguments are checked against the full schema when the tool is called)."""
    return [_lean_schema(spec.to_openai()) for spec in tools]


def _lean_schema(entry: dict[str, Any]) -> dict[str, Any]:
    parameters = {k: v for k, v in entry["function"]["parameters"].items() if (k, v) != ("additionalProperties", False)}
    if isinstance(parameters.get("properties"), dict):
        parameters["properties"] = {
            name: {k: v for k, v in prop.items() if not (k == "default" and v in ("", None))}
            if isinstance(prop, dict)
            else prop
            for name, prop in parameters["properties"].items()
        }
    return {**entry, "function": {**entry["function"], "parameters": parameters}}


def arguments_text(schema: Mapping[str, Any]) -> str:
    """A JSON schema's properties as `- name: type = default, one of a|b: meaning` lines.

    The same facts as the schema in about half the tokens (JSON punctuation is expensive); a property in a form
    this does not know (nested objects, unions) is shown as its JSON.
    """
    required = set(schema.get("required", ()))
    lines = [_argument_line(name, prop, name in required) for name, prop in schema.get("properties", {}).items()]
    return "Arguments (JSON object):\n" + "\n".join(lines) if lines else "Arguments: none ({})"


def _argument_line(name: str, prop: Mapping[str, Any], required: bool) -> str:
    status = " (required)" if required else f" = {_json(prop['default'])}" if "default" in prop else " (optional)"
    if set(prop) - {"type", "description", "default", "enum"}:
        return f"- {name}{status}: {_json(prop)}"
    kind = prop.get("type", "string")
    head = f"{name}{'' if kind == 'string' else ': ' + (kind if isinstance(kind, str) else _json(kind))}{status}"
    if "enum" in prop:
        head += ", one of " + "|".join(str(value) for value in prop["enum"])
    return f"- {head}: {prop['description']}" if prop.get("description") else f"- {head}"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def question_text(question: Question) -> str:
    """The user's question with the thread's memory in front of it, oldest first, and what opsbot knew before the
    first step after it."""
    asked = f"Question: {question.text}"
    if question.known:
        asked += "\n\nKnown before the first step:\n" + "\n".join(f"- {line}" for line in question.known)
    if not question.history:
        return asked
    memory = "\n".join(f"- {line}" for line in question.history)
    return f"Earlier in this thread:\n{memory}\n\n{asked}"


def budget_note(steps_used: int, budget: Budget) -> str:
    """Told to the model every turn, so it plans within the budget instead of being cut off (the prompts say the
    answer is a step too)."""
    if steps_used + 1 >= budget.max_steps:
        return f"[Step {steps_used + 1} of {budget.max_steps}: your last. Give your final answer now.]"
    return f"[Step {steps_used + 1} of {budget.max_steps}]"


def render_messages(
    system: str, question: Question, exchanges: Sequence[Exchange], limits: ContextLimits, note: str
) -> list[Message]:
    """The request's messages: system, question (+ old steps as lines), recent exchanges verbatim, budget note.

    With no exchange kept verbatim (keep_recent_steps 0, the default), the request is the system prompt and one
    user message: the question, every older step as a line, and the newest step with its result in full."""
    recent = _recent_exchanges(exchanges, limits.keep_recent_steps)
    if exchanges and not recent:  # none verbatim: every step a line, the newest result in full below them
        return _with_note(
            [
                {"role": "system", "content": system},
                {"role": "user", "content": _inline_text(question, exchanges, limits)},
            ],
            note,
        )
    old_steps = [step for exchange in exchanges[: len(exchanges) - len(recent)] for step in exchange.steps]
    opening = question_text(question)
    if old_steps:
        opening += f"\n\n{old_steps_text(old_steps)}"
    messages: list[Message] = [{"role": "system", "content": system}, {"role": "user", "content": opening}]
    for position, exchange in enumerate(recent):
        age = len(recent) - 1 - position
        digest = age > 0 and limits.digest_read_observations
        messages += [
            exchange.assistant,
            *(answer.to_message(observation_cap(limits, age), digest=digest) for answer in exchange.answers),
        ]
    return _with_note(messages, note)


def _inline_text(question: Question, exchanges: Sequence[Exchange], limits: ContextLimits) -> str:
    """The question, the older steps as lines, then the newest step: its Thought, call and whole result."""
    *older, newest = exchanges
    parts = [question_text(question)]
    if older:
        parts.append(old_steps_text([step for exchange in older for step in exchange.steps]))
    results = [str(answer.to_message(limits.max_observation_chars)["content"]) for answer in newest.answers]
    return "\n\n".join([*parts, newest_step_text(newest.steps, results)])


def _recent_exchanges(exchanges: Sequence[Exchange], keep_steps: int) -> Sequence[Exchange]:
    """The newest exchanges holding at most `keep_steps` steps (an exchange is never split: ids stay paired)."""
    kept = 0
    start = len(exchanges)
    while start > 0 and kept + len(exchanges[start - 1].steps) <= keep_steps:
        start -= 1
        kept += len(exchanges[start].steps)
    return exchanges[start:]


def _with_note(messages: list[Message], note: str) -> list[Message]:
    # Appended to the last user or tool message rather than sent as a message of its own: some chat templates
    # (Mistral's, for one) reject a user turn right after tool results.
    last = messages[-1]
    if last["role"] in ("user", "tool") and isinstance(last.get("content"), str):
        return [*messages[:-1], {**last, "content": f"{last['content']}\n\n{note}"}]
    return [*messages, {"role": "user", "content": note}]


def steps_as_text(steps: Sequence[Step], limits: ContextLimits) -> str:
    """All steps as plain text (no tool-call messages): for the forced conclusion, which runs without tools."""
    blocks = []
    for step in steps:
        head = f"Step {step.index}: {call_text(step)}"
        thought = f"\nThought: {step.thought}" if step.thought else ""
        reading = reading_of(step.observation, step.data)
        observation = truncate_observation(reading.text, limits.max_observation_chars, indexed_evidence(reading))
        blocks.append(f"{head}{thought}\nStatus: {step.status}\n{fence_observation(observation)}")
    return "\n\n".join(blocks) or "(no step ran)"
