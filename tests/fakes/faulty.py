"""FakeBackend: a loopback HTTP server that answers every request the same scripted way (slow, 500, ...).

It stands in for a Prometheus or Elasticsearch that is up but misbehaving, so fault tests go through the
real clients over real HTTP. A port that is closed (`closed_port_url()`) stands in for one that is down.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bot.sandbox.backends import free_port


class FakeBackend:
    """Answers `status` with `body` after `delay_s` seconds, on 127.0.0.1 and an ephemeral port."""

    def __init__(
        self, *, status: int = 200, body: Any = None, delay_s: float = 0.0, headers: dict[str, str] | None = None
    ):
        self.status, self.body, self.delay_s = status, body, delay_s
        self.headers = headers or {}
        self.requests: list[str] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._server.block_on_close = False  # a sleeping handler must not hold up stop()
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                fake.requests.append(f"{self.command} {self.path}")
                time.sleep(fake.delay_s)
                payload = fake.body if isinstance(fake.body, bytes) else json.dumps(fake.body).encode()
                try:
                    self.send_response(fake.status)
                    self.send_header("Content-Type", "application/json")
                    for name, value in fake.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting, which is what slow-backend tests want

            do_GET = do_POST = do_HEAD = _answer

            def log_message(self, *args: Any) -> None:
                pass

        return Handler

    def start(self) -> FakeBackend:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def fake_backend(**kwargs: Any) -> Iterator[FakeBackend]:
    """A started FakeBackend, stopped on exit."""
    backend = FakeBackend(**kwargs).start()
    try:
        yield backend
    finally:
        backend.stop()


def closed_port_url() -> str:
    """The URL of a port nothing listens on (bound, then released)."""
    return f"http://127.0.0.1:{free_port()}"
