"""What the GitHub and Argo CD stand-ins share: real HTTP on 127.0.0.1, bearer auth checked on every request, routes
by regex, and scripted faults for the next requests (a status with headers and a body, or a slow reply).

A stand-in subclass registers its routes and says how its API words an authentication failure.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

Reply = tuple[int, Any, dict[str, str]]  # status, JSON body, extra headers
Handler = Callable[[re.Match[str], dict[str, str]], Reply]


@dataclass
class Fault:
    status: int = 500
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    times: int = 1


@dataclass(frozen=True)
class Seen:
    """One request as the stand-in received it."""

    path: str
    query: dict[str, str]
    authorization: str
    headers: dict[str, str]


class FakeRestAPI:
    """A JSON API on an ephemeral port; `token` is the only bearer token it accepts."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.requests: list[Seen] = []
        self.faults: list[Fault] = []
        self.routes: list[tuple[re.Pattern[str], Handler]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def route(self, pattern: str, handler: Handler) -> None:
        self.routes.append((re.compile(f"^{pattern}$"), handler))

    def fail_next(
        self, status: int = 500, *, times: int = 1, body: Any = None, delay_s: float = 0.0, **headers: str
    ) -> None:
        """The next `times` requests get `status` (after `delay_s`); `headers` such as Retry_After="1"."""
        named = {k.replace("_", "-"): v for k, v in headers.items()}
        with self._lock:
            self.faults.append(
                Fault(status, body if body is not None else {"message": "scripted"}, named, delay_s, times)
            )

    def unauthorized(self) -> Reply:
        """The API's own 401 reply (subclasses word it as their API does)."""
        return 401, {"message": "unauthorized"}, {}

    def start(self) -> FakeRestAPI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeRestAPI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next_fault(self) -> Fault | None:
        with self._lock:
            if not self.faults:
                return None
            fault = self.faults[0]
            fault.times -= 1
            if fault.times <= 0:
                self.faults.pop(0)
            return fault

    def answer(self, path: str, query: dict[str, str], authorization: str) -> Reply:
        fault = self._next_fault()
        if fault is not None:
            time.sleep(fault.delay_s)
            if fault.status:
                return fault.status, fault.body, fault.headers
        if authorization != f"Bearer {self.token}":
            return self.unauthorized()
        for rx, handler in self.routes:
            match = rx.match(path)
            if match:
                return handler(match, query)
        return 404, {"message": "Not Found"}, {}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
                auth = self.headers.get("Authorization", "")
                fake.requests.append(Seen(parts.path, query, auth, dict(self.headers.items())))
                status, body, headers = fake.answer(parts.path, query, auth)
                payload = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up on a slow reply

            def log_message(self, *args: Any) -> None:
                pass

        return Handler
