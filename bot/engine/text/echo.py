"""Replies that repeat the prompt instead of answering it: echoed instructions and copied format placeholders.

Weak and base models (a 270M model served by llama.cpp, for one) often echo their system prompt, or copy the
format example with its placeholders ("Action: <one tool name>"). Such a reply is never an answer and is never
shown to a user: the loop treats it as a format error, the one-shot paths and the forced conclusion as no reply.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

OBSERVATIONS_HEADING = "What the investigation observed:"  # the forced conclusion's user message (conclusion.py)
# Placeholders from the format examples in prompts/*.md, the prompts' opening words, and scaffold headings.
_TEMPLATE_MARKERS = (
    OBSERVATIONS_HEADING.lower(),
    "<one tool name",
    "<your reasoning",
    "<the arguments as one json object",
    "<root cause and the evidence",
    "you are opsbot",
)
_MIN_ECHO_LINE_CHARS = 40  # a prompt line this long, found verbatim in a reply, was copied, not written
_PLACEHOLDER_NAMES = frozenset({"tool", "tool_name", "toolname", "one_tool_name", "name", "function_name", "action"})
_TOOL_NAME = re.compile(r"[\w.\-]+", re.ASCII)


def echoed_text(reply: str, prompts: Iterable[str] = ()) -> str:
    """What the reply copied from the prompt or the format template (a short quote), or "" when it wrote its own."""
    lowered = reply.lower()
    for marker in _TEMPLATE_MARKERS:
        at = lowered.find(marker)
        if at >= 0:
            return _quote(reply[at:])
    for prompt in prompts:
        for line in prompt.splitlines():
            line = line.strip()
            if len(line) >= _MIN_ECHO_LINE_CHARS and line in reply:
                return _quote(line)
    return ""


def is_placeholder_name(name: str) -> bool:
    """A tool name copied from a template (`<one tool name>`, `tool_name`) rather than chosen from the list."""
    cleaned = name.strip()
    if not cleaned or not _TOOL_NAME.fullmatch(cleaned):
        return True
    return cleaned.lower() in _PLACEHOLDER_NAMES


def _quote(text: str, max_chars: int = 60) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= max_chars else line[: max_chars - 1] + "…"
