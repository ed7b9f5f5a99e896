"""The API under faults: restarts, crashes, slow runs and bursts (in-memory dispatcher, real HTTP, real SQLite)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from pathlib import Path

import requests

from bot.durable.runner import RunnerOptions
from bot.engine.types import Question, Responder, StepObserver, Trace
from bot.http.dispatch import api_dispatcher
from bot.http.server import health_app, liveness_app, route, start_server
from bot.store.sqlite import SqliteTraceStore
from tests.http.conftest import ApiServer, canned_responder


def held(release: threading.Event, started: threading.Semaphore | None = None) -> Responder:
    canned = canned_responder()

    def respond(question: Question, on_step: StepObserver | None) -> Trace:
        if started is not None:
            started.release()
        assert release.wait(60)
        return canned(question, on_step)

    return respond


def test_sigterm_drain_answers_running_runs_and_queued_ones_restarting(tmp_path: Path) -> None:
    release, started = threading.Event(), threading.Semaphore(0)
    store = SqliteTraceStore(tmp_path / "traces.db")
    dispatcher = api_dispatcher(held(release, started), store, RunnerOptions(workers=4, queue_size=8))
    ids = [dispatcher.submit(Question(f"q{n}", source="api")) for n in range(8)]
    for _ in range(4):
        assert started.acquire(timeout=20)  # 4 running, 4 queued
    closer = threading.Thread(target=dispatcher.close, args=(30.0,))
    closer.start()
    threading.Timer(0.5, release.set).start()  # the running ones finish within the drain
    closer.join(40)
    traces = [dispatcher.wait(trace_id, 5) for trace_id in ids]
    assert all(t is not None for t in traces)
    answers = [t.answer for t in traces if t is not None]
    assert not any("internal error" in a for a in answers)
    assert sum(a.startswith("order v2.8.1") for a in answers) == 4
    assert sum("restarting" in a and "Re-run?" in a for a in answers) == 4
    assert all(store.get(trace_id) is not None for trace_id in ids)  # every one is stored, none dropped


def test_runs_still_going_at_the_drain_deadline_are_answered_interrupted(tmp_path: Path) -> None:
    release, started = threading.Event(), threading.Semaphore(0)
    store = SqliteTraceStore(tmp_path / "traces.db")
    dispatcher = api_dispatcher(held(release, started), store, RunnerOptions(workers=1, queue_size=2))
    trace_id = dispatcher.submit(Question("q"))
    assert started.acquire(timeout=20)
    dispatcher.close(0.5)
    trace = store.get(trace_id)
    assert trace is not None and "interrupted" in trace.answer and "Re-run?" in trace.answer
    release.set()


def test_a_trace_says_running_interrupted_or_unknown_id(serve_api: Callable[..., ApiServer], tmp_path: Path) -> None:
    release = threading.Event()
    store = SqliteTraceStore(tmp_path / "shared.db")
    api = serve_api(held(release), store=store)
    trace_id = api.post("/api/diagnose", {"question": "why?", "async": True}).json()["trace_id"]
    running = api.get(f"/api/traces/{trace_id}")
    assert running.status_code == 202 and running.json()["status"] in ("queued", "running")
    # The process dies (kill -9): a new one over the same store knows nothing of the job it was running.
    restarted = serve_api(store=store)
    gone = restarted.get(f"/api/traces/{trace_id}")
    assert gone.status_code == 200 and gone.json()["status"] == "interrupted" and "re-run?" in gone.json()["error"]
    unknown = restarted.get("/api/traces/0123456789abcdef0123456789abcdef")
    assert unknown.status_code == 404 and "unknown id" in unknown.json()["error"]
    release.set()


def test_a_sync_call_answers_202_with_the_trace_url_after_the_bounded_wait(
    serve_api: Callable[..., ApiServer],
) -> None:
    release = threading.Event()
    api = serve_api(held(release), sync_wait_s=0.5)
    resp = api.post("/api/diagnose", {"question": "why?"})
    assert resp.status_code == 202
    body = resp.json()
    assert body["status"] == "running" and body["href"] == f"/api/traces/{body['trace_id']}"
    release.set()


def test_a_burst_of_sync_calls_never_starves_the_health_checks(tmp_path: Path) -> None:
    from bot.http.alerts import TtlDedupe
    from bot.http.api import AlertRoute, api_app
    from bot.http.telemetry import Telemetry
    from bot.safety.access import AccessPolicy

    release = threading.Event()
    store = SqliteTraceStore(tmp_path / "traces.db")
    dispatcher = api_dispatcher(held(release), store, RunnerOptions(workers=2, queue_size=64))
    api = api_app(
        dispatcher,
        store,
        Telemetry(),
        api_token="t",
        admit=AccessPolicy().admit,
        alerts=AlertRoute("", None, TtlDedupe(60)),
        sync_wait_s=60,
        max_concurrent=4,
    )
    app = route({"/api/": api, "/livez": liveness_app(), "/readyz": health_app(lambda: {"status": "ok"})})
    server = start_server(app, "127.0.0.1", 0, threads=8)
    burst = [
        threading.Thread(target=_post_quietly, args=(f"{server.url}/api/diagnose",), daemon=True) for _ in range(30)
    ]
    try:
        for thread in burst:
            thread.start()
        for _ in range(20):  # while 30 sync calls wait on held diagnoses, both checks keep answering
            assert requests.get(f"{server.url}/livez", timeout=5).status_code == 200
            assert requests.get(f"{server.url}/readyz", timeout=5).status_code == 200
    finally:
        release.set()
        for thread in burst:
            thread.join(30)
        server.stop()
        dispatcher.close(5)


def _post_quietly(url: str) -> None:
    with contextlib.suppress(requests.RequestException):
        requests.post(url, json={"question": "why?"}, headers={"Authorization": "Bearer t"}, timeout=90)
