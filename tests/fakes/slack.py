"""FakeSlackAPI: a Slack Web API stand-in over real HTTP on 127.0.0.1, plus a Socket Mode websocket peer.

It answers and records auth.test, chat.postMessage/update/postEphemeral, reactions.add/remove, the chat streaming
methods, assistant.threads.setStatus, views.open, conversations.replies (from `threads`, plus the app's own
replies), the external file upload (files.getUploadURLExternal, the upload URL, files.completeUploadExternal:
`files`) and apps.connections.open (whose ws:// URL points at a local `websockets` server acting as Slack's
Socket Mode endpoint). Any method can be told to fail, e.g. make chat.appendStream fail mid-run or answer 429 with
Retry-After. Requests to the app are signed with
SIGNING_SECRET so Bolt's own verification runs.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import requests
from slack_sdk.signature import SignatureVerifier
from websockets.sync.server import ServerConnection, serve

from bot.engine.types import Question, StepObserver, StopReason, Totals, Trace
from tests import toolresults
from tests.toolresults import series
from tools.metrics.chartline import ChartLine

SIGNING_SECRET = "test-signing-secret"
BOT_TOKEN = "xoxb-test"
BOT_USER_ID = "UBOT"
BOT_ID = "BBOT"
TEAM_ID = "T1"


@dataclass
class SlackCall:
    method: str
    params: dict[str, Any]
    headers: dict[str, str]
    response: dict[str, Any] = field(default_factory=dict)
    at_s: float = 0.0  # time.monotonic() when the call arrived
    status: int = 0  # the HTTP status it got (0 while it is being answered)


@dataclass
class _Failure:
    error: str
    status: int
    retry_after: int | None
    after: int  # let this many calls succeed first
    times: int
    seen: int = 0


@dataclass
class FakeSocketModePeer:
    """Slack's side of a Socket Mode connection: sends hello, pushes envelopes, records the acks."""

    acks: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._connection: ServerConnection | None = None
        self._closed = False
        self._connected = threading.Event()
        self._changed = threading.Condition()
        self._server = serve(self._handle, "127.0.0.1", 0)
        self.url = f"ws://127.0.0.1:{self._server.socket.getsockname()[1]}/link"
        threading.Thread(target=self._server.serve_forever, daemon=True, name="fake-socket-mode").start()

    def _handle(self, connection: ServerConnection) -> None:
        connection.send(json.dumps({"type": "hello", "num_connections": 1, "connection_info": {"app_id": "A1"}}))
        self._connection = connection
        self._connected.set()
        for raw in connection:
            with self._changed:
                self.acks.append(json.loads(raw))
                self._changed.notify_all()

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    def send(self, envelope: dict[str, Any], timeout_s: float = 10.0) -> None:
        """Push an envelope to the connected app."""
        assert self._connected.wait(timeout_s), "the app never connected over Socket Mode"
        assert self._connection is not None
        self._connection.send(json.dumps(envelope))

    def wait_ack(self, envelope_id: str, timeout_s: float = 10.0) -> dict[str, Any]:
        """The app's ack of one envelope."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                found = [a for a in self.acks if a.get("envelope_id") == envelope_id]
                if found:
                    return found[0]
                remaining = deadline - time.monotonic()
                assert remaining > 0, f"no ack for envelope {envelope_id}"
                self._changed.wait(remaining)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._server.shutdown()


class FakeSlackAPI:
    """Records every Web API call; answers like Slack does (minimal, but the same shapes).

    Like the real thing at its worst when told so: `latency_s` delays every answer (real Slack takes 100-500 ms),
    and `enforce_limits` answers 429 with Retry-After once a method goes over its per-minute allowance.
    """

    def __init__(self, *, latency_s: float = 0.0) -> None:
        self.latency_s = latency_s
        self.wall_clock_ts = False  # True: a message's ts starts with the wall clock's seconds, as Slack's do
        self.limits_per_min: dict[str, int] = {}
        self._holds: dict[str, threading.Event] = {}
        self.calls: list[SlackCall] = []
        self.threads: dict[tuple[str, str], list[dict[str, Any]]] = {}  # (channel, thread_ts) -> messages
        self._posted: dict[tuple[str, str], list[dict[str, Any]]] = {}  # the app's own replies, by thread
        self.pending_uploads: dict[str, dict[str, Any]] = {}  # file id -> what getUploadURLExternal was told
        self.uploaded: dict[str, bytes] = {}  # file id -> the bytes posted to its upload URL
        self.files: list[dict[str, Any]] = []  # files shared by files.completeUploadExternal, in order
        self._failures: dict[str, list[_Failure]] = {}
        self._ts = itertools.count(1)
        self._changed = threading.Condition()
        self._socket_peer: FakeSocketModePeer | None = None
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/api/"
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True, name="fake-slack").start()

    # --- test controls -------------------------------------------------------------------------------------
    @property
    def socket_peer(self) -> FakeSocketModePeer:
        """The local websocket endpoint apps.connections.open hands out (started on first use)."""
        if self._socket_peer is None:
            self._socket_peer = FakeSocketModePeer()
        return self._socket_peer

    def response_url(self, name: str = "cmd") -> str:
        """A response_url for commands/shortcuts; posts to it are recorded as method "response_url"."""
        return f"http://127.0.0.1:{self.port}/respond/{name}"

    def fail(
        self,
        method: str,
        *,
        error: str = "internal_error",
        status: int = 200,
        retry_after: int | None = None,
        after: int = 0,
        times: int = 1,
    ) -> None:
        """Make `method` fail `times` times once `after` calls to it have succeeded."""
        self._failures.setdefault(method, []).append(_Failure(error, status, retry_after, after, times))

    def hold(self, method: str, until: threading.Event) -> None:
        """Answer no call to `method` until `until` is set (Slack at its slowest)."""
        self._holds[method] = until

    def enforce_limits(self, limits_per_min: dict[str, int]) -> None:
        """Answer 429 + Retry-After when a method exceeds its calls per rolling minute (Slack's tiers)."""
        self.limits_per_min = dict(limits_per_min)

    def peak_per_s(self, method: str) -> int:
        """The most calls to `method` that arrived within any one-second window."""
        with self._changed:
            times = sorted(c.at_s for c in self.calls if c.method == method)
        peak, start = 0, 0
        for end, at_s in enumerate(times):
            while at_s - times[start] >= 1.0:
                start += 1
            peak = max(peak, end - start + 1)
        return peak

    def calls_to(self, method: str) -> list[dict[str, Any]]:
        with self._changed:
            return [c.params for c in self.calls if c.method == method]

    def wait_for(
        self,
        method: str,
        count: int = 1,
        timeout_s: float = 15.0,
        where: Callable[[dict[str, Any]], bool] = lambda p: True,
    ) -> list[dict[str, Any]]:
        """Block until `count` matching calls to `method` were made; return them."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                found = [c.params for c in self.calls if c.method == method and where(c.params)]
                if len(found) >= count:
                    return found
                remaining = deadline - time.monotonic()
                assert remaining > 0, f"expected {count} {method} calls, got {len(found)}: {self.methods()}"
                self._changed.wait(remaining)

    def responses_to(self, method: str) -> list[dict[str, Any]]:
        with self._changed:
            return [c.response for c in self.calls if c.method == method]

    def methods(self) -> list[str]:
        return [c.method for c in self.calls]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._socket_peer is not None:
            self._socket_peer.close()

    # --- the API ---------------------------------------------------------------------------------------------
    def answer(self, method: str, params: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        """(HTTP status, JSON body, headers) for one call; records it first."""
        if (retry_after := self._over_limit(method)) is not None:
            return 429, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(retry_after)}
        failure = self._take_failure(method)
        if failure is not None:
            headers = {"Retry-After": str(failure.retry_after)} if failure.retry_after is not None else {}
            return failure.status, {"ok": False, "error": failure.error}, headers
        return 200, {"ok": True, **self._body(method, params)}, {}

    def _over_limit(self, method: str) -> int | None:
        limit = self.limits_per_min.get(method)
        if limit is None:
            return None
        now = time.monotonic()
        with self._changed:
            recent = [c.at_s for c in self.calls if c.method == method and c.status == 200 and now - c.at_s < 60]
        if len(recent) < limit:
            return None
        return max(int(60 - (now - min(recent))) + 1, 1)

    def _take_failure(self, method: str) -> _Failure | None:
        with self._changed:
            for failure in self._failures.get(method, []):
                failure.seen += 1
                if failure.after < failure.seen <= failure.after + failure.times:
                    return failure
        return None

    def _body(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        channel = params.get("channel", params.get("channel_id", ""))
        if method == "auth.test":
            return {
                "url": "https://fake.slack/",
                "team": "Fake",
                "user": "opsbot",
                "team_id": TEAM_ID,
                "user_id": BOT_USER_ID,
                "bot_id": BOT_ID,
            }
        if method in ("chat.postMessage", "chat.startStream"):
            return self._post(channel, params)
        if method in ("chat.update", "chat.appendStream", "chat.stopStream"):
            return {"channel": channel, "ts": params.get("ts", "")}
        if method == "chat.postEphemeral":
            return {"message_ts": f"1700000000.{next(self._ts):06d}"}
        if method in ("views.open", "views.update"):
            return {"view": {"id": "V1", **params.get("view", {})}}
        if method == "apps.connections.open":
            return {"url": self.socket_peer.url}
        if method == "conversations.replies":
            key = (channel, params.get("ts", ""))
            return {"messages": [*self.threads.get(key, []), *self._posted.get(key, [])], "has_more": False}
        if method == "files.getUploadURLExternal":
            file_id = f"F{next(self._ts):08d}"
            self.pending_uploads[file_id] = {"filename": params.get("filename", ""), "length": params.get("length")}
            return {"upload_url": f"http://127.0.0.1:{self.port}/upload/{file_id}", "file_id": file_id}
        if method == "files.completeUploadExternal":
            return {"files": self._complete_uploads(params)}
        return {}

    def _post(self, channel: str, params: dict[str, Any]) -> dict[str, Any]:
        ts = f"{int(time.time()) if self.wall_clock_ts else 1700000000}.{next(self._ts):06d}"
        if params.get("thread_ts"):  # the app's own replies are in the thread, as conversations.replies lists them
            mine = {"ts": ts, "user": BOT_USER_ID, "bot_id": BOT_ID, "text": params.get("text", "")}
            self._posted.setdefault((channel, str(params["thread_ts"])), []).append(mine)
        return {"channel": channel, "ts": ts, "message": {"text": params.get("text", ""), "ts": ts}}

    def _complete_uploads(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        """Shares each uploaded file where Slack would: the channel, in the thread when thread_ts is given."""
        listed = params.get("files", "[]")
        done = []
        for entry in json.loads(listed) if isinstance(listed, str) else listed:
            pending = self.pending_uploads.pop(entry["id"], {})
            shared = {
                "id": entry["id"],
                "title": entry.get("title", ""),
                "channel": params.get("channel_id", ""),
                "thread_ts": params.get("thread_ts", ""),
                "content": self.uploaded.get(entry["id"], b""),
                **pending,
            }
            self.files.append(shared)
            done.append({"id": entry["id"], "title": shared["title"]})
        return done

    def _record(self, method: str, params: dict[str, Any], headers: dict[str, str]) -> SlackCall:
        call = SlackCall(method, params, headers, at_s=time.monotonic())
        with self._changed:
            self.calls.append(call)
            self._changed.notify_all()
        return call

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                if self.path.startswith("/upload/"):  # the upload URL takes the file's raw bytes
                    self._upload(self.path.removeprefix("/upload/"))
                    return
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                params = _params_from_body(raw, self.headers.get("Content-Type", ""))
                method = "response_url" if self.path.startswith("/respond/") else self.path.removeprefix("/api/")
                call = fake._record(method, params, dict(self.headers.items()))
                status, body, headers = fake.answer(method, params)
                call.response, call.status = body, status
                if fake.latency_s:
                    time.sleep(fake.latency_s)
                if method in fake._holds:
                    fake._holds[method].wait(30)
                payload = json.dumps(body).encode()
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _upload(self, file_id: str) -> None:
                data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                known = file_id in fake.pending_uploads
                fake._record("upload", {"file_id": file_id, "bytes": len(data)}, dict(self.headers.items()))
                if fake.latency_s:
                    time.sleep(fake.latency_s)
                if known:
                    fake.uploaded[file_id] = data
                body = f"OK - {len(data)}".encode() if known else b"unknown upload url"
                self.send_response(200 if known else 404)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


def _params_from_body(raw: str, content_type: str) -> dict[str, Any]:
    if "json" in content_type:
        return json.loads(raw or "{}")
    params: dict[str, Any] = dict(urllib.parse.parse_qsl(raw))
    for key in ("blocks", "view", "chunks"):  # form-encoded calls carry these as JSON strings
        if isinstance(params.get(key), str):
            params[key] = json.loads(params[key])
    return params


# --- signed requests to the app --------------------------------------------------------------------------------
def signed_headers(
    body: str,
    *,
    content_type: str,
    secret: str = SIGNING_SECRET,
    timestamp: int | None = None,
    retry_num: int | None = None,
) -> dict[str, str]:
    """Headers Slack would send with `body`, signed with `secret`."""
    ts = str(timestamp if timestamp is not None else int(time.time()))
    signature = SignatureVerifier(secret).generate_signature(timestamp=ts, body=body) or ""
    headers = {"Content-Type": content_type, "X-Slack-Request-Timestamp": ts, "X-Slack-Signature": signature}
    if retry_num is not None:
        headers |= {"X-Slack-Retry-Num": str(retry_num), "X-Slack-Retry-Reason": "http_timeout"}
    return headers


def stream_text(stop: dict[str, Any]) -> str:
    """The markdown text a chat.stopStream call carries (in its markdown_text chunks): what readers get as text."""
    chunks = stop.get("chunks") or []
    if isinstance(chunks, str):  # a form-encoded call sends the chunks as JSON
        chunks = json.loads(chunks)
    return "".join(c.get("text", "") for c in chunks if c.get("type") == "markdown_text") + str(
        stop.get("markdown_text") or ""
    )


def event_body(event: dict[str, Any], *, event_id: str = "Ev0001") -> dict[str, Any]:
    """An Events API event_callback envelope."""
    return {
        "token": "unused",
        "team_id": TEAM_ID,
        "api_app_id": "A1",
        "type": "event_callback",
        "event_id": event_id,
        "event_time": int(time.time()),
        "event": {"event_ts": event.get("ts"), **event},
        "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}],
    }


def mention_event(
    text: str, *, ts: str = "1699999999.000100", channel: str = "C1", user: str = "U1", thread_ts: str | None = None
) -> dict[str, Any]:
    event = {
        "type": "app_mention",
        "user": user,
        "text": f"<@{BOT_USER_ID}> {text}",
        "ts": ts,
        "channel": channel,
        "client_msg_id": f"msg-{ts}",
    }
    return event | ({"thread_ts": thread_ts} if thread_ts else {})


def command_params(text: str, *, response_url: str, channel: str = "C1", user: str = "U1") -> dict[str, str]:
    """The fields of a /diagnose invocation."""
    return {
        "token": "unused",
        "team_id": TEAM_ID,
        "channel_id": channel,
        "channel_name": "incidents",
        "user_id": user,
        "user_name": "oncall",
        "command": "/diagnose",
        "text": text,
        "response_url": response_url,
        "trigger_id": f"trig-{time.monotonic_ns()}",
        "api_app_id": "A1",
    }


def post_event(
    url: str, body: dict[str, Any], *, secret: str = SIGNING_SECRET, retry_num: int | None = None
) -> requests.Response:
    raw = json.dumps(body)
    headers = signed_headers(raw, content_type="application/json", secret=secret, retry_num=retry_num)
    return requests.post(url, data=raw.encode(), headers=headers, timeout=10)


def post_command(url: str, params: dict[str, str], *, secret: str = SIGNING_SECRET) -> requests.Response:
    raw = urllib.parse.urlencode(params)
    headers = signed_headers(raw, content_type="application/x-www-form-urlencoded", secret=secret)
    return requests.post(url, data=raw.encode(), headers=headers, timeout=10)


def post_interaction(url: str, payload: dict[str, Any], *, secret: str = SIGNING_SECRET) -> requests.Response:
    raw = urllib.parse.urlencode({"payload": json.dumps(payload)})
    headers = signed_headers(raw, content_type="application/x-www-form-urlencoded", secret=secret)
    return requests.post(url, data=raw.encode(), headers=headers, timeout=10)


class ScriptedResponder:
    """A Responder stand-in for surface tests: emits `steps` steps `delay_s` apart, then a fixed answer.

    `gate`, when given, holds every run until it is set (to keep workers busy), before its first step or, with
    `gate_after_steps`, after that many steps (a run caught mid-way). Records the questions.
    """

    def __init__(
        self,
        answer: str = "Root cause: order v2.8.1 raised hikari.maximumPoolSize from 50 to 200.",
        *,
        steps: int = 2,
        delay_s: float = 0.0,
        gate: threading.Event | None = None,
        gate_after_steps: int = 0,
        chart: ChartLine | None = None,
    ) -> None:
        self.answer, self.steps, self.delay_s, self.gate = answer, steps, delay_s, gate
        self.chart = chart  # the points each step's series carries for a chart (none: no chart)
        self.gate_after_steps = gate_after_steps
        self.questions: list[Question] = []
        self._lock = threading.Lock()

    def __call__(self, question: Question, on_step: StepObserver | None) -> Trace:
        with self._lock:
            self.questions.append(question)
        if self.gate is not None and not self.gate_after_steps:
            self.gate.wait(30)
        steps = []
        for index in range(1, self.steps + 1):
            time.sleep(self.delay_s)
            # change: 15:05 212 ms -> 1,180 ms (x5.6), rendered from its series as the metrics tool does
            looked = replace(series(), chart=self.chart)
            step = toolresults.step(
                index, "query_metrics", looked, thought=f"check {index}", service="order", metric="p99_latency"
            )
            steps.append(step)
            if on_step is not None:
                on_step(step)
            if self.gate is not None and index == self.gate_after_steps:
                self.gate.wait(30)
        return Trace(
            trace_id=uuid.uuid4().hex,
            question=question.text,
            protocol="native",
            steps=tuple(steps),
            answer=self.answer,
            complete=True,
            stop_reason=StopReason.FINISH,
            totals=Totals(steps=len(steps), prompt_tokens=100, completion_tokens=20, elapsed_ms=1234),
        )


@pytest.fixture
def fake_slack() -> Iterator[FakeSlackAPI]:
    """A fresh FakeSlackAPI per test (it starts in milliseconds)."""
    api = FakeSlackAPI()
    yield api
    api.close()
