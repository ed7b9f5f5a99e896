"""WireRecorder: a loopback HTTP proxy between opsbot and a real model server that records every exchange.

It forwards each request unchanged and keeps (path, request body, status, response body), so a test can assert
the wire contract: what opsbot sent, and that the server never answered it with an HTTP error.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Exchange:
    path: str
    request: dict[str, Any]
    status: int
    response: dict[str, Any]


class WireRecorder:
    """Start it in front of `upstream` (e.g. http://127.0.0.1:8081); point opsbot at `base_url`."""

    def __init__(self, upstream: str, timeout_s: float = 600.0) -> None:
        self.upstream = upstream.rstrip("/")
        self.timeout_s = timeout_s
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="wire-recorder", daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> WireRecorder:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def chat(self) -> list[Exchange]:
        with self._lock:
            return [e for e in self.exchanges if e.path.endswith("/chat/completions")]

    def forward(self, method: str, path: str, body: bytes) -> tuple[int, bytes]:
        request = urllib.request.Request(
            self.upstream + path, data=body or None, method=method, headers={"content-type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                status, data = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, data = exc.code, exc.read()
        with self._lock:
            self.exchanges.append(Exchange(path, _json(body), status, _json(data)))
        return status, data


def _json(data: bytes) -> dict[str, Any]:
    try:
        value = json.loads(data or b"{}")
    except ValueError:
        return {"_raw": data[:2_000].decode(errors="replace")}
    return value if isinstance(value, dict) else {"_value": value}


def _handler_for(recorder: WireRecorder) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self._relay(b"")

        def do_POST(self) -> None:
            self._relay(self.rfile.read(int(self.headers.get("content-length") or 0)))

        def _relay(self, body: bytes) -> None:
            status, data = recorder.forward(self.command, self.path, body)
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
