"""The API under test, served over real HTTP (stdlib threading WSGI server on 127.0.0.1:0)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import pytest
import requests

from bot.durable.runner import RunnerOptions
from bot.engine.types import Question, Responder, Step, StepObserver, StopReason, Totals, Trace
from bot.http.alerts import TtlDedupe
from bot.http.api import AlertPoster, AlertRoute, api_app
from bot.http.dispatch import Dispatcher, api_dispatcher
from bot.http.telemetry import Telemetry
from bot.safety.access import AccessPolicy
from bot.store.sqlite import SqliteTraceStore

TOKEN = "test-api-token"


class ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@dataclass
class ApiServer:
    url: str
    store: SqliteTraceStore
    telemetry: Telemetry
    dispatcher: Dispatcher

    def post(self, path: str, body: Any, token: str | None = TOKEN, **kw: Any) -> requests.Response:
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        return requests.post(self.url + path, json=body, headers=headers, timeout=30, **kw)

    def get(self, path: str, token: str | None = TOKEN) -> requests.Response:
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        return requests.get(self.url + path, headers=headers, timeout=30)


def canned_responder(answer: str = "order v2.8.1 raised maximumPoolSize") -> Responder:
    """A responder that takes one tool step and finishes (the real loop is exercised in tests/safety)."""

    def respond(question: Question, on_step: StepObserver | None) -> Trace:
        steps = (
            Step(1, "check latency", "query_metrics", {"service": "order"}, "p99 212 ms -> 1,180 ms", "ok", 5, 100, 20),
            Step(2, "done", "finish", {}, "", "ok", 1, 50, 10),
        )
        for step in steps:
            if on_step:
                on_step(step)
        return Trace(
            "engine-id",
            question.text,
            "native",
            steps,
            answer,
            True,
            StopReason.FINISH,
            Totals(2, 150, 30, 1_200, 1, 0, 0),
            started_at="2026-11-29T10:00:00Z",
        )

    return respond


@pytest.fixture
def serve_api(tmp_path: Path) -> Iterator[Callable[..., ApiServer]]:
    """Factory: serve_api(responder=..., post=..., token=..., policy=...) -> a running ApiServer."""
    started: list[tuple[ThreadingWSGIServer, Dispatcher, SqliteTraceStore]] = []

    def start(
        responder: Any = None,
        *,
        post: AlertPoster | None = None,
        token: str = TOKEN,
        policy: AccessPolicy | None = None,
        channel: str = "C-ALERTS",
        sync_wait_s: float = 30.0,
        store: SqliteTraceStore | None = None,
    ) -> ApiServer:
        telemetry = Telemetry()
        store = store or SqliteTraceStore(tmp_path / f"traces-{len(started)}.db")
        dispatcher = api_dispatcher(
            telemetry.instrument(responder or canned_responder()), store, RunnerOptions(workers=2, queue_size=4)
        )
        telemetry.watch_queue_depth(dispatcher.waiting_or_nan, "api")
        app = api_app(
            dispatcher,
            store,
            telemetry,
            api_token=token,
            admit=(policy or AccessPolicy()).admit,
            alerts=AlertRoute(channel, post, TtlDedupe(3_600)),
            sync_wait_s=sync_wait_s,
        )
        server = make_server("127.0.0.1", 0, app, server_class=ThreadingWSGIServer, handler_class=QuietHandler)
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True, name="api-test").start()
        started.append((server, dispatcher, store))
        return ApiServer(f"http://127.0.0.1:{server.server_port}", store, telemetry, dispatcher)

    yield start
    for server, dispatcher, store in started:
        server.shutdown()
        server.server_close()
        dispatcher.shutdown(wait=True)
        store.close()
