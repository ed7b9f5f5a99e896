"""ScriptedLLM: an OpenAI-compatible chat-completions server on loopback that replays scripted replies.

Every loop test talks to it through the real `openai` client, so retries, headers, streaming and JSON
shapes are exercised exactly as against a real endpoint. A reply is one of:

    {"content": "..."}                                                   plain text
    {"content": "...", "tool_calls": [{"name": "t", "arguments": {...} | "raw json"}]}   native tool calls
    {"status": 429 | 500, "headers": {...}, "message": "...", "repeat": n}              injected error
    any of these plus "delay_s": float (slow reply), "repeat": n, "usage": None | {...}, "finish_reason": str

`usage` defaults to a rough count (so the adapter's API-usage path runs); `"usage": None` omits it, which
exercises the adapter's offline token count. Injected errors carry `retry-after-ms: 1` unless told otherwise,
so the SDK's retries are fast. When the script runs out (and no `responder` is set) the server answers 500
"script exhausted" with `x-should-retry: false`, so a test that forgot a reply fails loudly, not slowly.

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
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.engine.llm import OpenAILLM

Reply = dict[str, Any]
Responder = Callable[[dict[str, Any]], Reply]

MODEL = "scripted-model"
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
        self._server = _Server(self)
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

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

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

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids)}"


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, llm: ScriptedLLM) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.llm = llm


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms delayed-ACK stall

    @property
    def llm(self) -> ScriptedLLM:
        assert isinstance(self.server, _Server)
        return self.server.llm

    def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
        pass

    def do_GET(self) -> None:
        self._recorded({})
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "test"}]})
        elif self.path == "/_control/requests":
            self._send_json(200, [r.body for r in self.llm.requests])
        else:
            self._send_json(404, _error_body(f"no route {self.path}", "not_found"))

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, _error_body("body is not JSON", "invalid_request_error"))
            return
        if self.path == "/_control/script":
            self.llm.script(*body.get("steps", []))
            self._send_json(200, {"ok": True, "remaining": self.llm.remaining})
            return
        self._recorded(body)
        if not self.path.endswith("/chat/completions"):
            self._send_json(404, _error_body(f"no route {self.path}", "not_found"))
            return
        self._chat(body)

    def _chat(self, body: dict[str, Any]) -> None:
        unanswered = unanswered_tool_call_ids(body.get("messages", []))
        if unanswered:
            self._send_json(400, _error_body(_UNANSWERED_TEXT + ", ".join(unanswered), "invalid_request_error"))
            return
        if self.llm.strict and (refusal := strict_refusal(body)):
            self._send_json(500, _error_body(refusal, "server_error"), {"x-should-retry": "false"})
            return
        reply = self.llm._next_reply(body)
        time.sleep(float(reply.get("delay_s", 0.0)))
        if self.llm.strict:
            reply = self.llm._as_strict_server(body, reply)
        if "raw_body" in reply:
            self._send_raw(str(reply["raw_body"]))
        elif "status" in reply:
            self._send_error_reply(reply)
        elif body.get("stream"):
            self._send_stream(_completion(self.llm, body, reply), body)
        else:
            self._send_json(200, _completion(self.llm, body, reply))

    def _send_raw(self, text: str) -> None:
        data = text.encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _recorded(self, body: dict[str, Any]) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.llm._record(RecordedRequest(self.command, self.path, headers, body))

    def _send_error_reply(self, reply: Reply) -> None:
        status = int(reply["status"])
        headers = {"retry-after-ms": "1", **{k.lower(): str(v) for k, v in reply.get("headers", {}).items()}}
        kind = "rate_limit_exceeded" if status == 429 else "server_error"
        message = reply.get("message") or f"ScriptedLLM injected HTTP {status}"
        self._send_json(status, _error_body(message, kind), headers)

    def _send_json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_stream(self, completion: dict[str, Any], body: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        for chunk in _stream_chunks(completion, include_usage):
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


_UNANSWERED_TEXT = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
    "'tool_call_id'. The following tool_call_ids did not have response messages: "
)


def strict_refusal(body: Mapping[str, Any]) -> str:
    """What llama.cpp's server refuses outright (HTTP 500): an assistant message with tool calls and null content."""
    for message in body.get("messages", []):
        if message.get("role") == "assistant" and message.get("tool_calls") and message.get("content") is None:
            return "Expected 'content' to be a string or an array, got null (assistant message with tool_calls)"
    return ""


def unanswered_tool_call_ids(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """Ids of assistant tool calls with no `role: tool` answer right after them (what real servers reject)."""
    missing: list[str] = []
    for i, message in enumerate(messages):
        if message.get("role") != "assistant" or not message.get("tool_calls"):
            continue
        answered = set()
        for later in messages[i + 1 :]:
            if later.get("role") != "tool":
                break
            answered.add(later.get("tool_call_id"))
        missing += [call["id"] for call in message["tool_calls"] if call.get("id") not in answered]
    return missing


def _error_body(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": kind, "param": None}}


def _completion(llm: ScriptedLLM, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    content = reply.get("content")
    message: dict[str, Any] = {"role": "assistant", "content": content}
    calls = [_tool_call(llm, call) for call in reply.get("tool_calls", [])]
    if calls:
        message["tool_calls"] = calls
    finish = reply.get("finish_reason") or ("tool_calls" if calls else "stop")
    completion: dict[str, Any] = {
        "id": llm._new_id("chatcmpl"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model") or MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
    }
    usage = reply.get("usage", _rough_usage(body, content, calls))
    if usage is not None:
        usage.setdefault("total_tokens", usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0))
        completion["usage"] = usage
    return completion


def _tool_call(llm: ScriptedLLM, call: Mapping[str, Any]) -> dict[str, Any]:
    arguments = call.get("arguments", {})
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return {
        "id": call.get("id") or llm._new_id("call"),
        "type": "function",
        "function": {"name": call["name"], "arguments": arguments},
    }


def _rough_usage(body: Mapping[str, Any], content: str | None, calls: list[dict[str, Any]]) -> dict[str, int]:
    """A deterministic stand-in for a server's token counts: about four characters a token."""
    prompt = len(json.dumps(body.get("messages", []))) // 4
    completion = (len(content or "") + len(json.dumps(calls) if calls else "")) // 4 + 1
    return {"prompt_tokens": prompt, "completion_tokens": completion}


def _stream_chunks(completion: dict[str, Any], include_usage: bool) -> Iterator[dict[str, Any]]:
    """The completion as SSE chunks: role, content in pieces, tool calls, finish, optional usage."""
    choice = completion["choices"][0]
    message = choice["message"]
    base = {k: completion[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return base | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    text = message.get("content") or ""
    for start in range(0, len(text), 16):
        yield chunk({"content": text[start : start + 16]})
    for index, call in enumerate(message.get("tool_calls", [])):
        yield chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                     "function": {"name": call["function"]["name"], "arguments": ""}}]})
        yield chunk({"tool_calls": [{"index": index, "function": {"arguments": call["function"]["arguments"]}}]})
    yield chunk({}, choice["finish_reason"])
    if include_usage and "usage" in completion:
        yield base | {"choices": [], "usage": completion["usage"]}


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
