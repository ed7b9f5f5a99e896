"""The LLM seam: a Protocol the loop depends on, and the OpenAI-compatible adapter behind it."""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from bot.engine.attempts import (
    AttemptRefused,
    CallAttempts,
    ErrorObserver,
    after_response,
    before_attempt,
    error_kind_from_status,
)
from bot.engine.text.arguments import args_from_json
from bot.engine.tokens import count_message_tokens, count_tokens
from bot.engine.types import ToolCall

if TYPE_CHECKING:
    import openai

log = logging.getLogger(__name__)

Role = Literal["main", "cheap"]


@dataclass(frozen=True)
class LLMReply:
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = ""
    failed_attempts: tuple[str, ...] = ()  # a note per attempt that failed before this reply (for the trace)


class LLMUnavailable(Exception):
    """The model could not be reached or kept failing after the SDK's retries (or no retry fitted in time)."""

    def __init__(self, message: str, failed_attempts: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.failed_attempts = tuple(failed_attempts)


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
        timeout_s: float | None = None,
    ) -> LLMReply:
        """One chat completion within `timeout_s` (all attempts). Raises LLMUnavailable when it cannot answer."""
        ...


# A reply longer than this many characters per requested token ran past max_tokens (servers that ignore it).
MAX_CHARS_PER_TOKEN = 8


class OpenAILLM:
    """Any OpenAI-compatible chat-completions endpoint, through the official SDK: its retries, its backoff, its
    Retry-After handling, all kept inside the deadline a call is given (bot/engine/attempts.py).

    `on_error` hears every failed attempt, for both roles: the error answers and the timeouts and failed
    connections the SDK retried and recovered from too, and a 200 that holds no usable completion (bad_reply).
    """

    def __init__(
        self,
        *,
        base_url: str = "",
        api_key: str = "",
        model: str,
        cheap_model: str = "",
        timeout_s: float = 60.0,
        max_retries: int = 2,
        min_attempt_s: float = 1.0,
        temperature: float = 0.0,
        max_reply_tokens: int = 1024,
        tokenizer: str = "o200k_base",
        on_error: ErrorObserver | None = None,
    ) -> None:
        self.model = model
        self.endpoint = base_url or "api.openai.com"
        self.cheap_model = cheap_model or model
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.min_attempt_s = min_attempt_s
        self.temperature = temperature
        self.max_reply_tokens = max_reply_tokens
        self.tokenizer = tokenizer
        self._on_error, self._base_url, self._api_key = on_error, base_url, api_key
        self._sdk: openai.OpenAI | None = None
        self._sdk_lock = threading.Lock()

    @property
    def _client(self) -> openai.OpenAI:
        """The SDK client, built with the first request: openai is ~0.45 s of imports a build need not pay."""
        with self._sdk_lock:
            if self._sdk is None:
                import openai

                # DefaultHttpxClient keeps the SDK's own limits and timeouts (and proxies from the environment); the
                # hooks see each attempt the SDK makes, and cut its timeout to the call's deadline.
                hooks: dict[str, list[Callable[..., Any]]] = {"request": [before_attempt], "response": [after_response]}
                http = openai.DefaultHttpxClient(timeout=self.timeout_s, event_hooks=hooks)
                # Local servers (vLLM, Ollama, llama.cpp) ignore the key, but the SDK insists on one.
                key, url, retries = self._api_key or "unused", self._base_url or None, self.max_retries
                self._sdk = openai.OpenAI(
                    base_url=url, api_key=key, timeout=self.timeout_s, max_retries=retries, http_client=http
                )
            return self._sdk

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        stop: Sequence[str] | None = None,
        role: Role = "main",
        max_tokens: int | None = None,
        timeout_s: float | None = None,
    ) -> LLMReply:
        """One chat completion; raises LLMUnavailable naming the model and endpoint once the SDK gives up.

        `timeout_s` bounds all attempts together (the run's time left): each attempt's timeout is cut to what is
        left, and a retry whose wait would not leave `min_attempt_s` is not made. The reply, or the exception,
        carries a note per failed attempt.
        """
        model = self.cheap_model if role == "cheap" else self.model
        request = self._request(model, messages, tools, stop, max_tokens or self.max_reply_tokens)
        where = f"{model} at {self.endpoint}"
        log.debug("llm request model=%s role=%s messages=%s", model, role, messages)
        attempts = CallAttempts(
            timeout_s=timeout_s, max_retries=self.max_retries, min_attempt_s=self.min_attempt_s, report=self._report
        )
        with attempts.running():
            response = self._post(request, attempts, where)
        try:
            reply = self._reply_from_response(response, messages, tools, request["max_tokens"])
        except (LLMUnavailable, ValueError, TypeError, AttributeError) as exc:
            attempts.bad_reply(str(exc))
            raise LLMUnavailable(f"{where}: unreadable response body ({exc})", attempts.notes) from exc
        log.debug(
            "llm reply model=%s finish=%s content=%r calls=%s",
            model,
            reply.finish_reason,
            reply.content,
            reply.tool_calls,
        )
        return dataclasses.replace(reply, failed_attempts=tuple(attempts.notes)) if attempts.notes else reply

    def _post(self, request: dict[str, Any], attempts: CallAttempts, where: str) -> Any:
        """The SDK's post with its retries; every way it can fail becomes LLMUnavailable with the attempt notes."""
        import openai  # loaded with the client (see _client); a dictionary lookup from then on
        from openai.types.chat import ChatCompletion

        try:
            # post() sends the body as built: chat.completions.create() first walks it against the SDK's TypedDicts
            # (maybe_transform), a no-op for this plain JSON and the largest CPU cost of a step (bench_naive).
            return self._client.post("/chat/completions", body=request, cast_to=ChatCompletion)
        except AttemptRefused as exc:  # a retry that did not fit in the deadline: the note says why
            raise LLMUnavailable(f"{where}: {exc}", attempts.notes) from exc
        except openai.APIStatusError as exc:  # its answer was counted by the hook, like every retried one
            attempts.gave_up(error_kind_from_status(exc.status_code), f"HTTP {exc.status_code}")
            raise LLMUnavailable(f"{where}: HTTP {exc.status_code}: {_error_text(exc)}", attempts.notes) from exc
        except openai.OpenAIError as exc:
            attempts.gave_up(_kind_from_exception(exc), type(exc).__name__)
            raise LLMUnavailable(f"{where}: {type(exc).__name__}: {exc}", attempts.notes) from exc
        except (ValueError, TypeError, AttributeError) as exc:  # a 200 whose body is not a completion
            attempts.bad_reply(f"{type(exc).__name__}: {exc}")
            message = f"{where}: unreadable response body ({type(exc).__name__}: {exc})"
            raise LLMUnavailable(message, attempts.notes) from exc

    def _request(
        self,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        stop: Sequence[str] | None,
        max_tokens: int,
    ) -> dict[str, Any]:
        """The request body. `tool_choice` goes with tools: llama.cpp's server drops the tools without it."""
        request: dict[str, Any] = {
            "model": model,
            "messages": [wire_message(m) for m in messages],
            "temperature": self.temperature,
            "max_tokens": max_tokens,
        }
        if tools:
            request["tools"] = list(tools)
            request["tool_choice"] = "auto"
        if stop:
            request["stop"] = list(stop)[:4]  # the API accepts at most four
        return request

    def _report(self, kind: str) -> None:
        if self._on_error is None:
            return
        try:
            self._on_error(kind)
        except Exception:  # counting an error must never become one
            log.warning("the LLM error observer failed kind=%s", kind, exc_info=True)

    def _reply_from_response(
        self,
        response: Any,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        max_tokens: int,
    ) -> LLMReply:
        if not getattr(response, "choices", None):
            raise LLMUnavailable("the reply had no choices")
        choice = response.choices[0]
        content = choice.message.content or ""
        finish = choice.finish_reason or ""
        if len(content) > max_tokens * MAX_CHARS_PER_TOKEN:  # a server that ignored max_tokens: cut, mark as cut
            content, finish = content[: max_tokens * MAX_CHARS_PER_TOKEN], "length"
        calls = tuple(_tool_call_from_sdk(call) for call in choice.message.tool_calls or ())
        usage = response.usage
        if usage is not None and usage.prompt_tokens:
            prompt, completion = usage.prompt_tokens, usage.completion_tokens or 0
        else:  # servers that send no usage: count offline so the token budget still holds
            prompt = count_message_tokens(messages, self.tokenizer)
            prompt += count_tokens(json.dumps(list(tools)), self.tokenizer) if tools else 0
            completion = count_tokens(content + "".join(json.dumps(dict(c.args)) for c in calls), self.tokenizer)
        return LLMReply(content, calls, prompt, completion, finish)


def wire_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A message as strict servers take it: llama.cpp's answers HTTP 500 to `"content": null`, so send ""."""
    return {**message, "content": ""} if message.get("content") is None else dict(message)


def _kind_from_exception(exc: openai.OpenAIError) -> str:
    import openai

    if isinstance(exc, openai.APITimeoutError):  # a subclass of APIConnectionError: test it first
        return "timeout"
    if isinstance(exc, openai.APIConnectionError):
        return "connection"
    if isinstance(exc, openai.APIResponseValidationError):
        return "bad_reply"
    return "other"


def _tool_call_from_sdk(call: Any) -> ToolCall:
    function = getattr(call, "function", None)
    name = getattr(function, "name", "") or ""
    raw = getattr(function, "arguments", "") or ""
    return ToolCall(name=name, args=args_from_json(raw), call_id=getattr(call, "id", "") or "")


def _error_text(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        message = body.get("message") or (body.get("error") or {}).get("message")
        if message:
            return str(message)
    return str(exc.message)
