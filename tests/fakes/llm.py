"""ScriptedLLM: an OpenAI-compatible chat-completions server on loopback that replays scripted replies.

Every loop test talks to it through the real `openai` client, so retries, headers, streaming and JSON
shapes are exercised exactly as against a real endpoint. A reply is one of:

    {"content": "..."}                                                   plain text
    {"content": "...", "tool_calls": [{"name": "t", "arguments": {...} | "raw json"}]}   native tool calls
    {"status": 429 | 500, "headers": {...}, "message": "...", "repeat": n}              injected error
    any of these plus "delay_s": float (slow reply), "repeat": n, "usage": None | {...}, "finish_reason": str

`usage` defaults to a rough count (so the adapter's API-usage path runs); `"usage": None` omits it, which
exercises the adapter's offline token count. Injected errors carry `retry-after-ms: 1` unless their headers set
`retry-after` or `retry-after-ms`, so the SDK's retries are fast. When the script runs out (and no `responder` is
set) the server answers 500 "script exhausted" with `x-should-retry: false`, so a test that forgot a reply fails
loudly, not slowly.

Like real OpenAI-compatible servers, a conversation with an unanswered `tool_call_id` gets a 400.

`strict = True` makes it behave like llama.cpp's server (llama-cpp-python[server]) at its strictest:
- an assistant message with tool calls and `"content": null` gets HTTP 500 (its chat template cannot render it);
- tools sent without `tool_choice` are dropped from the prompt: the scripted reply's tool calls are not sent,
  only its content (the model never saw a tool), and `tools_rendered` records False for that request;
- the reply is cut at `max_tokens` (about four characters a token) with `finish_reason: "length"`;
- stop sequences cut the content where they first occur, at the start of the output too.
A reply may also carry `"raw_body": "..."`: sent as is with status 200 (a garbage or truncated body).
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from tests.fakes.chatserver import ChatServer
from tests.fakes.chatwire import MODEL, Reply, strict_refusal, tool_results, unanswered_tool_call_ids

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.engine.llm import OpenAILLM

Responder = Callable[[dict[str, Any]], Reply]
__all__ = [
    "EXHAUSTED",
    "MODEL",
    "RecordedRequest",
    "Reply",
    "ScriptedLLM",
    "llm_settings",
    "scripted_llm",
    "scripted_llm_server",
    "scripted_openai_llm",
    "strict_llm",
    "strict_refusal",
    "tool_results",
    "unanswered_tool_call_ids",
]

EXHAUSTED = "ScriptedLLM: script exhausted (the test scripted fewer replies than the code asked for)"


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it."""

    method: str
    path: str
    headers: Mapping[str, str]  # lower-cased names
    body: dict[str, Any]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def retry_count(self) -> int:
        """The SDK's `x-stainless-retry-count` (0 on a first attempt)."""
        return int(self.headers.get("x-stainless-retry-count", "0"))


class ScriptedLLM:
    """The server plus its script. Start once per session; `reset()` between tests."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._script: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._ids = itertools.count(1)
        self.responder: Responder | None = None
        self.strict = False
        self.tools_rendered: list[bool] = []  # strict mode: per chat request with tools, were they rendered?
        self._server = ChatServer(self)
        self._thread = threading.Thread(target=self._server.serve_forever, name="scripted-llm", daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> ScriptedLLM:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def script(self, *replies: Reply) -> ScriptedLLM:
        """Append replies; a reply with "repeat": n is served n times."""
        with self._lock:
            for reply in replies:
                count = int(reply.get("repeat", 1))
                self._script.extend({k: v for k, v in reply.items() if k != "repeat"} for _ in range(count))
        return self

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self._requests.clear()
            self.responder = None
            self.strict = False
            self.tools_rendered.clear()

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received, in order (chat completions, models, control calls)."""
        with self._lock:
            return list(self._requests)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    def record(self, method: str, path: str, headers: Mapping[str, str], body: dict[str, Any]) -> None:
        with self._lock:
            self._requests.append(RecordedRequest(method, path, headers, body))

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self._script:
                return self._script.popleft()
            responder = self.responder
        if responder is not None:
            return responder(body)
        return {"status": 500, "message": EXHAUSTED, "headers": {"x-should-retry": "false"}}

    def _as_strict_server(self, body: dict[str, Any], reply: Reply) -> Reply:
        """The reply as llama.cpp's server would send it: tools dropped without tool_choice, stop and max_tokens."""
        if "status" in reply or "raw_body" in reply:
            return reply
        reply = dict(reply)
        if body.get("tools"):
            rendered = bool(body.get("tool_choice"))
            with self._lock:
                self.tools_rendered.append(rendered)
            if not rendered:
                reply.pop("tool_calls", None)
        content = str(reply.get("content") or "")
        for stop in body.get("stop") or ():
            if stop and stop in content:
                content = content[: content.index(stop)]
                reply.setdefault("finish_reason", "stop")
        max_chars = int(body.get("max_tokens") or 0) * 4
        if max_chars and len(content) > max_chars:
            content, reply["finish_reason"] = content[:max_chars], "length"
            reply.pop("tool_calls", None)
        reply["content"] = content if content or "content" in reply else None
        return reply

    def new_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids)}"


# --- pytest fixtures and helpers --------------------------------------------------------------------------


@pytest.fixture(scope="session")
def scripted_llm_server() -> Iterator[ScriptedLLM]:
    """One ScriptedLLM for the whole session (cheap to share; reset per test by `scripted_llm`)."""
    server = ScriptedLLM().start()
    yield server
    server.stop()


@pytest.fixture
def scripted_llm(scripted_llm_server: ScriptedLLM) -> Iterator[ScriptedLLM]:
    """The session's ScriptedLLM with an empty script and no recorded requests."""
    scripted_llm_server.reset()
    yield scripted_llm_server
    scripted_llm_server.reset()


@pytest.fixture
def strict_llm(scripted_llm: ScriptedLLM) -> ScriptedLLM:
    """The ScriptedLLM in strict mode: it behaves like llama.cpp's server (see the module docstring)."""
    scripted_llm.strict = True
    return scripted_llm


def llm_settings(scripted: ScriptedLLM, **llm_overrides: Any) -> Settings:
    """Settings whose `llm` section points at the ScriptedLLM (max_retries 1 unless overridden)."""
    from bot.config import LLMSettings, Settings

    llm = {"base_url": scripted.base_url, "api_key": "test", "model": MODEL, "max_retries": 1, "timeout_s": 10.0}
    return Settings(_env_file=None, llm=LLMSettings.model_validate(llm | llm_overrides))  # type: ignore[call-arg]


def scripted_openai_llm(scripted: ScriptedLLM, *, max_retries: int = 1, **kwargs: Any) -> OpenAILLM:
    """The real OpenAILLM adapter talking to the ScriptedLLM."""
    from bot.engine.llm import OpenAILLM

    kwargs.setdefault("timeout_s", 10.0)
    return OpenAILLM(base_url=scripted.base_url, api_key="test", model=MODEL, max_retries=max_retries, **kwargs)
