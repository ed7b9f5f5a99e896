"""The LLM seam: a Protocol the loop depends on, and the OpenAI-compatible adapter behind it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from bot.agent.types import ToolCall

Role = Literal["main", "cheap"]


@dataclass(frozen=True)
class LLMReply:
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = ""


class LLMUnavailable(Exception):
    """The model could not be reached or kept failing after the SDK's retries."""


class LLM(Protocol):
    model: str

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        stop: Sequence[str] | None = None,
        role: Role = "main",
        max_tokens: int | None = None,
    ) -> LLMReply:
        """One chat completion. Raises LLMUnavailable when the endpoint cannot answer."""
        ...
