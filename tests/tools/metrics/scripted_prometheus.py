"""ScriptedPrometheus: a loopback HTTP or HTTPS server that answers a script of replies in order.

It stands in for a Prometheus (or a proxy in front of one) that misbehaves in a given sequence: a 503 with
Retry-After and then an answer, a slow reply, a login page. Each request is recorded with its headers and the
monotonic time it arrived, so a test can check what the client sent and how long it waited before a retry.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

LABEL_VALUES = {"status": "success", "data": ["order", "payment"]}


@dataclass(frozen=True)
class Reply:
    """One scripted answer: status, a JSON (or raw bytes) body, extra headers, and a wait before answering."""

    status: int = 200
    body: Any = field(default_factory=lambda: LABEL_VALUES)
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass(frozen=True)
class Seen:
    """One request as the server saw it."""

    line: str  # "GET /api/v1/label/service/values", or "CONNECT host:port" when asked to tunnel
    headers: dict[str, str]
    at_s: float  # time.monotonic() on arrival


class ScriptedPrometheus:
    """Answers the n-th request with the n-th reply (the last one repeats), over TLS when given a context."""

    def __init__(self, *replies: Reply, tls: ssl.SSLContext | None = None) -> None:
        self.replies = replies or (Reply(),)
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._server.block_on_close = False  # a sleeping handler must not hold up stop()
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self.scheme = "https" if tls is not None else "http"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self._server.server_address[1]}"

    @property
    def lines(self) -> list[str]:
        return [seen.line for seen in self.seen]

    def _next_reply(self, line: str, headers: dict[str, str]) -> Reply:
        with self._lock:
            self.seen.append(Seen(line, headers, time.monotonic()))
            return self.replies[min(len(self.seen), len(self.replies)) - 1]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        script = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                reply = script._next_reply(f"{self.command} {self.path}", dict(self.headers.items()))
                time.sleep(reply.delay_s)
                payload = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting, which is what a slow reply is for

            do_GET = do_POST = do_CONNECT = _answer

            def log_message(self, *args: Any) -> None:
                pass

        return Handler

    def start(self) -> ScriptedPrometheus:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def scripted_prometheus(*replies: Reply, tls: ssl.SSLContext | None = None) -> Iterator[ScriptedPrometheus]:
    """A started ScriptedPrometheus, stopped on exit."""
    server = ScriptedPrometheus(*replies, tls=tls).start()
    try:
        yield server
    finally:
        server.stop()


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """(certificate, key) for 127.0.0.1, made by the openssl command; the certificate is its own CA."""
    cert, key = folder / "prometheus.crt", folder / "prometheus.key"
    options = "-x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=127.0.0.1"
    command = ["openssl", "req", *options.split(), "-addext", "subjectAltName=IP:127.0.0.1"]
    subprocess.run([*command, "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context
