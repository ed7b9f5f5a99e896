"""The HTTP plumbing every wire-level stand-in shares: a threaded server on 127.0.0.1 and one reply per GET.

A stand-in (the Kubernetes API in bot/sandbox/standins/kubeapi.py, Loki in bot/sandbox/standins/loki.py)
subclasses HttpStandIn,
implements `reply(path, headers)` (header names lower-cased) and calls `serve(port)` once: the tests run it in
their own process on a free port, `opsbot sandbox up` runs it as a child process (bot/sandbox/standins/launch.py) that
outlives the CLI.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One answer: a JSON body (dict or list), or a str sent as text/plain; extra headers (Retry-After)."""

    status: int
    body: Any
    headers: Mapping[str, str] = field(default_factory=dict)

    def payload(self) -> tuple[bytes, str]:
        if isinstance(self.body, str):
            return self.body.encode(), "text/plain; charset=utf-8"
        return json.dumps(self.body).encode(), "application/json"


class HttpStandIn:
    """Base of the stand-ins: `serve(port)` starts the server in a daemon thread; `stop()` ends it."""

    thread_name = "stand-in"
    _server: ThreadingHTTPServer | None = None

    def reply(self, path: str, headers: Mapping[str, str]) -> Reply:
        raise NotImplementedError

    def serve(self, port: int = 0) -> None:
        """Listen on 127.0.0.1:port (0 = a free one) and answer in a daemon thread."""
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler_for(self))
        self._server.daemon_threads = True
        self._server.block_on_close = False
        threading.Thread(target=self._server.serve_forever, daemon=True, name=self.thread_name).start()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not serving")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def _handler_for(stand_in: HttpStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            answer = stand_in.reply(self.path, {k.lower(): v for k, v in self.headers.items()})
            payload, content_type = answer.payload()
            self.send_response(answer.status)
            self.send_header("Content-Type", content_type)
            for key, value in answer.headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler
