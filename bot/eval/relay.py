"""A file relay that stands where the model stands: an OpenAI-compatible server that writes each request opsbot sends
to a file and answers with the reply someone writes next to it.

It lets a reasoner that sees nothing but those files act as the model, so the model path is measured with a capable
reasoner instead of a scripted one. The folder is the transcript: every request (as sent, and rendered to read) and
every reply stay there. Listens on loopback only; one request is answered at a time, in order.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.eval.case import EvalCase
from bot.eval.report import EvalReport
from bot.eval.run import run_eval

if TYPE_CHECKING:
    from bot.engine.types import Trace

GUIDE = """\
# Relay folder: you are the model

A diagnosis bot sends its model requests here, one at a time. For every `NNNN.request.md` (the same request as sent
is in `NNNN.request.json`) that has no reply yet, write your reply as `NNNN.reply.json`. Write it to
`NNNN.reply.json.tmp` first, then rename it: the relay reads a reply as soon as the name appears.

    {"content": "your reasoning or final answer", "tool_calls": [{"name": "a_tool", "arguments": {"k": "v"}}]}

- Call at most the tools the request lists, with arguments that fit their schema. Leave out `tool_calls` (or give
  []) to answer without a tool: then `content` is your answer as the request asks for it.
- When the request lists no tools, answer in `content` exactly in the format its messages ask for.
- A reply the relay cannot read is renamed `NNNN.reply.bad` with the reason in `NNNN.error.txt`; write it again.
- `case-NN.md` marks where a new incident starts: each request holds all the bot tells the model; judge each
  incident only from its own requests.
- When `DONE` appears, the run is over.
"""


class RelayError(ValueError):
    """A reply file the relay cannot turn into a chat completion."""


def completion_from_reply(reply: dict[str, Any], model: str) -> dict[str, Any]:
    """The chat.completion body for a reply file's {"content", "tool_calls"}."""
    content = reply.get("content", "")
    if not isinstance(content, str):
        raise RelayError('"content" must be a string')
    calls = reply.get("tool_calls") or []
    if not isinstance(calls, list):
        raise RelayError('"tool_calls" must be a list')
    wire_calls = []
    for call in calls:
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise RelayError('each tool call needs a "name" string and an "arguments" object')
        arguments = call.get("arguments", {})
        if not isinstance(arguments, dict | str):
            raise RelayError(f'the "arguments" of {call["name"]} must be an object')
        text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        wire_calls.append(
            {
                "id": f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {"name": call["name"], "arguments": text},
            }
        )
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if wire_calls:
        message["tool_calls"] = wire_calls
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if wire_calls else "stop"}],
    }


def render_request(body: dict[str, Any], number: int, case: str) -> str:
    """A request as a reader reads it: the tools (name, purpose, arguments), then every message in order."""
    lines = [f"# Request {number:04d} ({case})", ""]
    tools = body.get("tools") or []
    if tools:
        lines += ["## Tools you may call", ""]
        for tool in tools:
            function = tool.get("function", {})
            params = json.dumps(function.get("parameters", {}), ensure_ascii=False)
            lines += [f"- **{function.get('name', '?')}**: {function.get('description', '')}", f"  arguments: {params}"]
        lines.append("")
    else:
        lines += ["(no tools: answer in content)", ""]
    for index, message in enumerate(body.get("messages", []), 1):
        lines += [f"## Message {index}: {message.get('role', '?')}", ""]
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            lines.append(f"[tool call {call.get('id', '')}] {function.get('name')}({function.get('arguments')})")
        if message.get("tool_call_id"):
            lines.append(f"[result of {message['tool_call_id']}]")
        lines += [str(message.get("content") or ""), ""]
    return "\n".join(lines)


class FileRelay:
    """The server and its folder. `start()` returns the base URL to give opsbot as its model endpoint."""

    def __init__(self, folder: Path, *, wait_s: float = 1800.0, poll_s: float = 0.5, model: str = "relay") -> None:
        self.folder, self.wait_s, self.poll_s, self.model = folder, wait_s, poll_s, model
        self._served = threading.Lock()  # one request at a time: the reasoner answers in order
        self._number = 0
        self._case = "case-00"
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> str:
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / "README.md").write_text(GUIDE, encoding="utf-8")
        (self.folder / "DONE").unlink(missing_ok=True)
        self._number = max((int(p.name[:4]) for p in self.folder.glob("[0-9][0-9][0-9][0-9].request.json")), default=0)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(target=self._server.serve_forever, name="file-relay", daemon=True)
        self._thread.start()
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def begin_case(self, index: int, question: str) -> None:
        """Mark where a new incident starts (numbered, never named: a scenario's name could give its cause away)."""
        self._case = f"case-{index:02d}"
        (self.folder / f"{self._case}.md").write_text(
            f"# {self._case}\n\nA new incident starts with the next request. The question asked:\n\n> {question}\n",
            encoding="utf-8",
        )

    def stop(self) -> None:
        (self.folder / "DONE").write_text("the run is over\n", encoding="utf-8")
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """Write the request, wait for its reply file, and return the completion (RelayError past wait_s)."""
        with self._served:
            self._number += 1
            number = self._number
            stem = self.folder / f"{number:04d}"
            record = {"case": self._case, "number": number, "body": body}
            stem.with_suffix(".request.json").write_text(json.dumps(record, ensure_ascii=False, indent=1), "utf-8")
            stem.with_suffix(".request.md").write_text(render_request(body, number, self._case), encoding="utf-8")
            return self._await_reply(stem)

    def _await_reply(self, stem: Path) -> dict[str, Any]:
        reply = stem.with_suffix(".reply.json")
        deadline = time.monotonic() + self.wait_s
        while time.monotonic() < deadline:
            if reply.exists():
                try:
                    data = json.loads(reply.read_text(encoding="utf-8"))
                    if not isinstance(data, dict):
                        raise RelayError("the reply must be a JSON object")
                    return completion_from_reply(data, self.model)
                except (ValueError, RelayError) as exc:  # JSONDecodeError is a ValueError
                    reply.rename(stem.with_suffix(".reply.bad"))
                    stem.with_suffix(".error.txt").write_text(f"{exc}\n", encoding="utf-8")
            time.sleep(self.poll_s)
        raise RelayError(f"no reply to {stem.name} within {self.wait_s:.0f} s")


def run_through_relay(
    cases: Sequence[EvalCase],
    folder: Path,
    wait_s: float,
    build_diagnoser: Callable[[str], Callable[[EvalCase], Trace]],
    scenario_set: str,
) -> EvalReport:
    """Every case through the relay in turn, each marked in the folder (numbered, never named), then scored;
    `build_diagnoser` gets the relay's URL to use as the model endpoint."""
    relay = FileRelay(folder, wait_s=wait_s)
    diagnose = build_diagnoser(relay.start())
    numbered = iter(range(1, len(cases) + 1))

    def relayed_diagnose(case: EvalCase) -> Trace:
        relay.begin_case(next(numbered), case.question)
        return diagnose(case)

    try:
        return run_eval(cases, relayed_diagnose, mode="model", model=relay.model, scenario_set=scenario_set)
    finally:
        relay.stop()


def _handler_for(relay: FileRelay) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send(HTTPStatus.OK, {"object": "list", "data": [{"id": relay.model, "object": "model"}]})
            else:
                self._send(HTTPStatus.NOT_FOUND, _error(f"no route {self.path}", "not_found"))

        def do_POST(self) -> None:
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(HTTPStatus.NOT_FOUND, _error(f"no route {self.path}", "not_found"))
                return
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                if body.get("stream"):
                    raise RelayError("the relay answers whole completions, not streams")
                self._send(HTTPStatus.OK, relay.answer(body))
            except RelayError as exc:
                self._send(HTTPStatus.GATEWAY_TIMEOUT, _error(str(exc), "relay_error"))
            except ValueError as exc:  # a body that is not JSON
                self._send(HTTPStatus.BAD_REQUEST, _error(str(exc), "invalid_request_error"))

        def _send(self, status: HTTPStatus, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return  # the folder is the log

    return Handler


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": kind, "param": None}}
