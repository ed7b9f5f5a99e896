"""ScriptedLLM's HTTP side: the routes (/v1/models, /v1/chat/completions, /_control/*), injected errors, raw
bodies and SSE streaming. The replies and their JSON come from the ScriptedLLM and tests/fakes/chatwire.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from tests.fakes.chatwire import (
    MODEL,
    UNANSWERED_TEXT,
    Reply,
    completion_from_reply,
    error_body,
    stream_chunks,
    strict_refusal,
    unanswered_tool_call_ids,
)

if TYPE_CHECKING:
    from tests.fakes.llm import ScriptedLLM


class ChatServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, llm: ScriptedLLM) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.llm = llm


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms delayed-ACK stall

    @property
    def llm(self) -> ScriptedLLM:
        assert isinstance(self.server, ChatServer)
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
            self._send_json(404, error_body(f"no route {self.path}", "not_found"))

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, error_body("body is not JSON", "invalid_request_error"))
            return
        if self.path == "/_control/script":
            self.llm.script(*body.get("steps", []))
            self._send_json(200, {"ok": True, "remaining": self.llm.remaining})
            return
        self._recorded(body)
        if not self.path.endswith("/chat/completions"):
            self._send_json(404, error_body(f"no route {self.path}", "not_found"))
            return
        self._chat(body)

    def _chat(self, body: dict[str, Any]) -> None:
        unanswered = unanswered_tool_call_ids(body.get("messages", []))
        if unanswered:
            self._send_json(400, error_body(UNANSWERED_TEXT + ", ".join(unanswered), "invalid_request_error"))
            return
        if self.llm.strict and (refusal := strict_refusal(body)):
            self._send_json(500, error_body(refusal, "server_error"), {"x-should-retry": "false"})
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
            self._send_stream(completion_from_reply(self.llm.new_id, body, reply), body)
        else:
            self._send_json(200, completion_from_reply(self.llm.new_id, body, reply))

    def _send_raw(self, text: str) -> None:
        data = text.encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _recorded(self, body: dict[str, Any]) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.llm.record(self.command, self.path, headers, body)

    def _send_error_reply(self, reply: Reply) -> None:
        status = int(reply["status"])
        headers = {k.lower(): str(v) for k, v in reply.get("headers", {}).items()}
        if "retry-after" not in headers:  # a fast retry, unless the reply asks for a wait of its own
            headers.setdefault("retry-after-ms", "1")
        kind = "rate_limit_exceeded" if status == 429 else "server_error"
        message = reply.get("message") or f"ScriptedLLM injected HTTP {status}"
        self._send_json(status, error_body(message, kind), headers)

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
        for chunk in stream_chunks(completion, include_usage):
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True
