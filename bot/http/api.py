"""The HTTP API (stdlib WSGI): /api/diagnose, /api/traces/<id>, /api/traces/<id>/chart.png, /api/alertmanager
and /metrics.

Every /api/ route needs `Authorization: Bearer <server.api_token>`; with no token configured the API is
off (404) and only /metrics answers. Work runs on the Dispatcher's pool; the request thread waits only
in sync mode. Every failure is a JSON body with an `error` key: no exception leaves this module.
"""

from __future__ import annotations

import hmac
import json
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, tzinfo
from typing import Any

from pydantic import ValidationError

from bot.engine.types import Question, Trace, trace_to_dict
from bot.http.alerts import AlertDedupe, AlertGroup, dedupe_key, question_from_alerts
from bot.http.dispatch import Dispatch, JobFailed, QueueFull
from bot.http.telemetry import Telemetry
from bot.http.wsgi import StartResponse, WSGIApp, json_response
from bot.safety.access import RATE_LIMITED, Admit
from bot.safety.inbound import clean_inbound, has_request_text
from bot.store.base import TraceStore, is_partial

log = logging.getLogger(__name__)

AlertPoster = Callable[[str, Question, Trace], None]  # (channel, question, trace): posts an alert's diagnosis to Slack
Reply = tuple[int, dict[str, Any] | bytes]  # bytes: a PNG (the chart route)

MAX_BODY_BYTES = 1_000_000
MAX_QUESTION_CHARS = 4_000


class BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class AlertRoute:
    """Where firing alert groups go: a Slack channel and the callable that posts there."""

    channel: str
    post: AlertPoster | None
    dedupe: AlertDedupe
    service_label: str = "service"


class Api:
    """The WSGI app. Build it with `api_app(...)`; mount it on /api/ and /metrics."""

    def __init__(
        self,
        dispatcher: Dispatch,
        store: TraceStore,
        telemetry: Telemetry,
        *,
        api_token: str,
        admit: Admit,
        alerts: AlertRoute,
        sync_wait_s: float = 30.0,
        max_concurrent: int = 4,
        zone: tzinfo = UTC,
    ) -> None:
        self._dispatcher, self._store, self._telemetry = dispatcher, store, telemetry
        self._zone = zone
        # /api/ may hold at most this many HTTP threads at once: the rest stay free for Slack and health checks
        self._slots = threading.BoundedSemaphore(max(max_concurrent, 1))
        self._token = api_token.encode()
        self._admit = admit
        self._alerts = alerts
        self._sync_wait_s = sync_wait_s

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")
        method = environ.get("REQUEST_METHOD", "GET")
        if path.rstrip("/") == "/metrics":
            body, content_type = self._telemetry.exposition()
            start_response("200 OK", [("Content-Type", content_type), ("Content-Length", str(len(body)))])
            return [body]
        # No waiting for a slot: a waiting request would hold one of waitress' shared threads all the same.
        payload: dict[str, Any] | bytes
        if not self._slots.acquire(blocking=False):
            route, (status, payload) = _route_name(path), (503, {"error": "the API is busy; try again in a minute"})
        else:
            try:
                route, (status, payload) = self._dispatch(environ, path, method)
            finally:
                self._slots.release()
        self._telemetry.observe_api(route, status)
        if isinstance(payload, bytes):
            start_response("200 OK", [("Content-Type", "image/png"), ("Content-Length", str(len(payload)))])
            return [payload]
        retry = [("Retry-After", "60")] if status in (429, 503) else []
        return json_response(start_response, status, payload, retry)

    def _dispatch(self, environ: dict[str, Any], path: str, method: str) -> tuple[str, Reply]:
        route = _route_name(path)
        try:
            return route, self._handle(environ, route, path, method)
        except BadRequest as exc:
            return route, (exc.status, {"error": str(exc)})
        except Exception:  # the HTTP surface's one catch-all: answer, log, never leak a traceback
            log.exception("API request %s %s failed", method, path)
            return route, (500, {"error": "internal error; see the opsbot logs"})

    def _handle(self, environ: dict[str, Any], route: str, path: str, method: str) -> Reply:
        if route == "other":
            raise BadRequest(404, f"no such route: {path}")
        if not self._token:
            raise BadRequest(404, "the HTTP API is disabled: set OPSBOT_SERVER__API_TOKEN to enable it")
        self._authorize(environ)
        expected = "GET" if route in ("traces", "chart") else "POST"
        if method != expected:
            raise BadRequest(405, f"{path} accepts {expected} only")
        if route == "traces":
            return self._get_trace(path.rstrip("/").rsplit("/", 1)[-1])
        if route == "chart":
            return self._chart(path.rstrip("/").split("/")[3])
        body = _read_json(environ)
        return self._diagnose(body) if route == "diagnose" else self._alertmanager(body)

    def _authorize(self, environ: dict[str, Any]) -> None:
        scheme, _, given = environ.get("HTTP_AUTHORIZATION", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), self._token):
            raise BadRequest(401, "missing or wrong bearer token")

    def _diagnose(self, body: dict[str, Any]) -> Reply:
        raw = body.get("question")
        if isinstance(raw, str) and len(raw) > MAX_QUESTION_CHARS:
            raise BadRequest(400, f"question is {len(raw):,} characters; the limit is {MAX_QUESTION_CHARS:,}")
        text = clean_inbound(raw, max_chars=MAX_QUESTION_CHARS) if isinstance(raw, str) else ""
        if not has_request_text(text):
            raise BadRequest(400, "body must have a non-empty string 'question' (what to diagnose, in words)")
        channel = clean_inbound(str(body.get("channel") or ""), max_chars=80)
        user = f"api:{clean_inbound(str(body.get('user') or ''), max_chars=80) or 'token'}"
        refusal = self._admit(user, channel)
        if refusal:
            raise BadRequest(429 if refusal.startswith(RATE_LIMITED) else 403, refusal)
        question = Question(text, user=user, channel=channel, source="api")
        trace_id = self._submit(question)
        if body.get("async"):
            return 202, {"trace_id": trace_id, "status": "queued", "href": f"/api/traces/{trace_id}"}
        try:
            trace = self._dispatcher.wait(trace_id, self._sync_wait_s)
        except JobFailed as exc:
            return 500, {"trace_id": trace_id, "error": f"diagnosis failed: {str(exc).split(':')[0]}"}
        if trace is None:  # the bounded wait passed: the caller polls instead of holding an HTTP thread
            return 202, {"trace_id": trace_id, "status": "running", "href": f"/api/traces/{trace_id}"}
        return 200, trace_to_dict(trace)

    def _submit(self, question: Question, then: Callable[[Trace], None] | None = None) -> str:
        try:
            return self._dispatcher.submit(question, then)
        except QueueFull as exc:
            raise BadRequest(503, str(exc)) from exc

    def _get_trace(self, trace_id: str) -> Reply:
        """200 with the finished trace; 202 "queued"/"running" (with the steps so far); 200 "interrupted" for
        a run whose process died; 404 "unknown id" only when opsbot never accepted this id."""
        trace = self._store.get(trace_id)
        if trace is not None and not is_partial(trace):
            return 200, trace_to_dict(trace)
        status, error = self._dispatcher.status(trace_id)
        if status == "failed":
            return 500, {"trace_id": trace_id, "status": status, "error": f"diagnosis failed: {error}"}
        if status in ("queued", "running"):
            kept = trace or self._dispatcher.running(trace_id)  # the store's partial, or the runner's steps in flight
            partial = {"steps": trace_to_dict(kept)["steps"]} if kept is not None else {}
            return 202, {"trace_id": trace_id, "status": status, **partial}
        if trace is not None:  # stored step by step, and no replica runs it any more
            return 200, {
                **trace_to_dict(trace),
                "status": "interrupted",
                "error": "interrupted before it finished: re-run? (the steps it took are kept)",
            }
        raise BadRequest(404, f"unknown id: no trace {trace_id!r}")

    def _chart(self, trace_id: str) -> Reply:
        """The PNG Slack gets for a finished diagnosis, drawn from its stored steps (matplotlib loads here)."""
        trace = self._store.get(trace_id)
        if trace is None or is_partial(trace):
            raise BadRequest(404, f"no finished trace {trace_id!r}")
        from bot.chart.draw import trace_png

        png = trace_png(trace, self._zone)
        if png is None:
            raise BadRequest(404, f"trace {trace_id!r} holds no series to chart")
        return 200, png

    def _alertmanager(self, body: dict[str, Any]) -> Reply:
        try:
            group = AlertGroup.model_validate(body)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5])
            raise BadRequest(400, f"not an Alertmanager webhook body: {problems}") from exc
        if group.status != "firing" or not group.firing:
            self._telemetry.observe_alert("resolved")
            return 200, {"status": "ignored", "reason": "no firing alerts"}
        key = dedupe_key(group)
        if not self._alerts.dedupe.first_time(key):
            self._telemetry.observe_alert("duplicate")
            return 200, {"status": "duplicate", "reason": "this alert group already has a diagnosis"}
        return self._start_alert_run(group, key)

    def _start_alert_run(self, group: AlertGroup, key: str) -> Reply:
        route = self._alerts
        user = f"alertmanager:{group.receiver or 'default'}"
        refusal = self._admit(user, route.channel)
        if refusal:
            route.dedupe.forget(key)  # a later re-notification may run once the limit allows
            self._telemetry.observe_alert("refused")
            return 200, {"status": "refused", "reason": refusal}
        question = Question(
            question_from_alerts(group, route.service_label), user=user, channel=route.channel, source="alertmanager"
        )
        post = route.post
        then = (lambda trace: post(route.channel, question, trace)) if post and route.channel else None
        try:
            trace_id = self._submit(question, then)
        except BadRequest:
            route.dedupe.forget(key)
            raise
        self._telemetry.observe_alert("started")
        return 202, {"status": "started", "trace_id": trace_id, "href": f"/api/traces/{trace_id}"}


def _route_name(path: str) -> str:
    trimmed = path.rstrip("/")
    if trimmed == "/api/diagnose":
        return "diagnose"
    if trimmed == "/api/alertmanager":
        return "alertmanager"
    if trimmed.startswith("/api/traces/") and trimmed.count("/") == 3:
        return "traces"
    if trimmed.startswith("/api/traces/") and trimmed.endswith("/chart.png") and trimmed.count("/") == 4:
        return "chart"
    return "other"


def _read_json(environ: dict[str, Any]) -> dict[str, Any]:
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError as exc:
        raise BadRequest(400, "bad Content-Length") from exc
    if length > MAX_BODY_BYTES:
        raise BadRequest(413, f"body is {length:,} bytes; the limit is {MAX_BODY_BYTES:,}")
    try:
        body = json.loads(environ["wsgi.input"].read(length) or b"null")
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(400, f"body is not valid JSON: {exc}") from exc
    except RecursionError as exc:  # thousands of nested brackets: a hostile body, not a server error
        raise BadRequest(400, "body is nested too deeply") from exc
    if not isinstance(body, dict):
        raise BadRequest(400, "body must be a JSON object")
    return body


def api_app(
    dispatcher: Dispatch,
    store: TraceStore,
    telemetry: Telemetry,
    *,
    api_token: str,
    admit: Admit,
    alerts: AlertRoute,
    sync_wait_s: float = 30.0,
    max_concurrent: int = 4,
    zone: tzinfo = UTC,
) -> WSGIApp:
    """The WSGI app for /api/* and /metrics (see the module docstring)."""
    return Api(
        dispatcher,
        store,
        telemetry,
        api_token=api_token,
        admit=admit,
        alerts=alerts,
        sync_wait_s=sync_wait_s,
        max_concurrent=max_concurrent,
        zone=zone,
    )
