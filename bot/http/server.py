"""The HTTP server: a longest-prefix WSGI router under waitress.

Mounts: `/slack/` (Bolt's WSGI handler, signature verification on), `/livez` (the process answers),
`/readyz` and `/healthz` (ready for work: the Socket Mode connection, not shutting down), and whatever
bot/http/api.py provides (`/api/`, `/metrics`). The API holds at most `server.api_threads` of waitress' threads,
so Slack events and health checks always find one free.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from waitress.server import create_server

from bot.http.wsgi import StartResponse, WSGIApp, json_response

log = logging.getLogger(__name__)

HealthCheck = Callable[[], Mapping[str, Any]]  # {"status": "ok"|"starting"|"degraded", ...}


def route(mounts: Mapping[str, WSGIApp]) -> WSGIApp:
    """Dispatch on the longest matching path prefix; 404 otherwise."""
    prefixes = sorted(mounts, key=len, reverse=True)

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO") or "/"
        for prefix in prefixes:
            bare = prefix.rstrip("/")
            if path == bare or path.startswith(bare + "/"):  # "/metrics" serves "/metrics", not "/metricsx"
                return mounts[prefix](environ, start_response)
        return json_response(start_response, 404, {"error": "not found", "path": path})

    return app


def health_app(check: HealthCheck) -> WSGIApp:
    """`/healthz`: 200 while status is "ok", 503 otherwise; never calls Slack."""

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        try:
            report = dict(check())
        except Exception as exc:
            log.exception("health check failed")
            report = {"status": "degraded", "error": type(exc).__name__}
        return json_response(start_response, 200 if report.get("status") == "ok" else 503, report)

    return app


def liveness_app() -> WSGIApp:
    """`/livez`: 200 while the process can answer HTTP at all; it checks nothing else, so it never blocks."""

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        return json_response(start_response, 200, {"status": "alive"})

    return app


def slack_app(bolt_app: Any) -> WSGIApp:
    """Bolt's WSGI adapter at /slack/events (imported here so the router itself needs no Bolt)."""
    from slack_bolt.adapter.wsgi import SlackRequestHandler

    handler: WSGIApp = SlackRequestHandler(bolt_app, path="/slack/events")
    return handler


@dataclass
class RunningServer:
    """A waitress server serving in a background thread (tests and benches; `serve` blocks instead)."""

    host: str
    port: int
    _server: Any
    _thread: threading.Thread
    _stopping: threading.Event

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def stop(self) -> None:
        # Close every dispatcher from inside waitress' own loop (closing from here races its select()).
        def close_all() -> None:
            for dispatcher in list(self._server._map.values()):
                dispatcher.close()

        self._stopping.set()
        try:
            self._server.trigger.pull_trigger(close_all)
        except OSError as exc:  # the wake-up pipe is gone: close from here; the loop ends on its own
            log.warning("waitress trigger unavailable (%s); closing the server from this thread", exc)
            close_all()
        self._thread.join(5)
        self._server.task_dispatcher.shutdown()


def start_server(app: WSGIApp, host: str, port: int, threads: int) -> RunningServer:
    """Start serving `app` in a daemon thread; port 0 picks a free port."""
    server = create_server(app, host=host, port=port, threads=threads, ident="opsbot")
    bound_port = int(server.effective_port)
    stopping = threading.Event()

    def run() -> None:
        try:
            server.run()
        except OSError:  # a select() on sockets closed by stop() is the expected end
            if not stopping.is_set():
                raise

    thread = threading.Thread(target=run, name="opsbot-http", daemon=True)
    thread.start()
    log.info("serving http://%s:%d", host, bound_port)
    return RunningServer(host, bound_port, server, thread, stopping)


def serve(app: WSGIApp, host: str, port: int, threads: int) -> None:
    """Serve `app` until interrupted (blocking)."""
    server = create_server(app, host=host, port=port, threads=threads, ident="opsbot")
    log.info("serving http://%s:%s", host, port)
    try:
        server.run()
    finally:
        server.close()
