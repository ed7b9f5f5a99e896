"""The surfaces: the HTTP API and webhook, the Slack app and its worker pool, the one WSGI server, `opsbot serve`."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from slack_bolt.adapter.socket_mode import SocketModeHandler

from bot.config import Settings
from bot.engine.types import Responder, Trace
from bot.http.alerts import TtlDedupe
from bot.http.api import AlertPoster, AlertRoute, WSGIApp, api_app
from bot.http.dispatch import Dispatcher
from bot.http.server import HealthCheck, health_app, route, serve, slack_app
from bot.safety.access import Admit
from bot.slack.apierrors import watch_api_errors
from bot.slack.assistant import suggested_prompts
from bot.slack.budget import (
    SLACK_PER_CHANNEL_PER_MINUTE,
    SLACK_TIERS_PER_MINUTE,
    CallBudget,
    watch_rate_limits,
)
from bot.slack.listeners import SlackSurface, build_app, build_web_client
from bot.slack.runner import Classify, Lanes, Runner
from bot.slack.state import MemoryDedupe, MemoryThreadMemory, MemoryWorkQueue
from bot.store.base import TraceStore
from bot.telemetry import Telemetry
from bot.wiring.core import build_access, build_llm, build_responder, build_store, build_telemetry

log = logging.getLogger(__name__)


def build_api(
    settings: Settings,
    responder: Responder,
    store: TraceStore,
    telemetry: Telemetry,
    *,
    post_alert: AlertPoster | None = None,
    admit: Admit | None = None,
) -> WSGIApp:
    """The /api/* and /metrics WSGI app on its own worker pool; mount it on "/api/" and "/metrics".

    Pass a responder that does not store traces itself: the Dispatcher stores each one (redacted, under the
    trace id the API handed out) before `post_alert` runs.
    """
    s = settings.server
    dispatcher = Dispatcher(
        telemetry.instrument(responder),
        store,
        workers=s.api_workers,
        queue_size=s.api_queue_size,
        on_queue_depth=lambda depth: telemetry.set_queue_depth(depth, "api"),
    )
    alerts = AlertRoute(
        settings.slack.alert_channel, post_alert, TtlDedupe(s.alert_dedupe_ttl_s), settings.prometheus.service_label
    )
    return api_app(
        dispatcher,
        store,
        telemetry,
        api_token=s.api_token.get_secret_value(),
        admit=admit or build_access(settings).admit,
        alerts=alerts,
        sync_wait_s=settings.agent.time_budget_s + 60,
    )


def build_slack_app(
    settings: Settings,
    responder: Responder,
    *,
    persist: Callable[[Trace], None],
    fetch_trace: Callable[[str], Trace | None] | None = None,
    record_feedback: Callable[[str, str, int], None] | None = None,
    admit: Admit | None = None,
    telemetry: Telemetry | None = None,
    classify: Classify | None = None,
) -> SlackSurface:
    """The Bolt app and its pools (not started). `persist` runs before anything is posted.

    With `classify` (the Router's intent gate), questions are triaged on the quick lane: help, chit-chat and
    lookups never wait behind diagnoses. With `telemetry`, the app is measured: runs, ack latency, queue depth,
    Slack API errors, stream fallbacks.
    """
    runner = _build_runner(settings, responder, persist, telemetry, classify)
    app = build_app(
        runner,
        signing_secret=settings.slack.signing_secret.get_secret_value(),
        fetch_trace=fetch_trace or runner.recent_trace,
        record_feedback=record_feedback,
        admit=admit or build_access(settings).admit,
        listener_threads=settings.slack.listener_threads,
        assistant_prompts=suggested_prompts(list(settings.topology)),
    )
    if telemetry is not None:
        app.use(telemetry.ack_timer)
        telemetry.watch_queue_depth(lambda: runner.queued, "slack")
    return SlackSurface(app, runner)


def _build_runner(
    settings: Settings, responder: Responder, persist: Callable[[Trace], None], telemetry: Telemetry | None,
    classify: Classify | None,
) -> Runner:
    """The Slack pools over one Web API client and one call budget (measured when `telemetry` is given)."""
    s = settings.slack
    client = build_web_client(s.bot_token.get_secret_value(), s.api_base_url)
    budget = CallBudget(SLACK_TIERS_PER_MINUTE | {"chat.appendStream": s.append_per_minute,
                                                  "chat.update": s.update_per_minute},
                        per_channel_per_minute=SLACK_PER_CHANNEL_PER_MINUTE)
    watch_rate_limits(client, budget)
    if telemetry is not None:
        watch_api_errors(client, telemetry.observe_slack_api_error)
        responder = telemetry.instrument(responder)
    return Runner(
        client,
        responder,
        persist=persist,
        queue=MemoryWorkQueue(s.queue_size),
        dedupe=MemoryDedupe(s.dedupe_ttl_s),
        memory=MemoryThreadMemory(),
        lanes=Lanes(workers=s.workers, quick_workers=s.quick_workers, marks_workers=s.marks_workers,
                    ask_below_confidence=s.ask_below_confidence),
        classify=classify,
        budget=budget,
        use_streaming=s.use_streaming,
        update_interval_s=s.update_interval_s,
        append_interval_s=s.append_interval_s,
        on_stream_fallback=telemetry.observe_stream_fallback if telemetry is not None else None,
    )


def build_server(
    settings: Settings,
    *,
    slack: SlackSurface | None,
    api: WSGIApp | None,
    health: HealthCheck,
    socket_mode: bool = False,
) -> WSGIApp:
    """The one WSGI app: /slack/ (HTTP mode), /healthz, and the API's /api/ + /metrics."""
    mounts: dict[str, WSGIApp] = {"/healthz": health_app(health)}
    if slack is not None and not socket_mode:
        mounts["/slack/"] = slack_app(slack.app)
    if api is not None:
        mounts |= {"/api/": api, "/metrics": api}
    return route(mounts)


SHUTDOWN_DRAIN_S = 20.0  # running diagnoses get this long to post on SIGTERM (Kubernetes' default grace is 30 s)


def serve_forever(settings: Settings) -> None:
    """`opsbot serve`: Slack (Socket Mode when an app token is set, else HTTP), the API and /healthz."""
    telemetry, access = build_telemetry(settings), build_access(settings)
    llm, store = build_llm(settings, on_error=telemetry.observe_llm_error), build_store(settings)
    responder = build_responder(settings, llm=llm)
    slack: SlackSurface | None = None
    if settings.slack.bot_token.get_secret_value():
        slack = build_slack_app(settings, responder, persist=store.save, fetch_trace=store.get,
                                record_feedback=store.record_feedback, admit=access.admit, telemetry=telemetry,
                                classify=responder.classify)
    app_token = settings.slack.app_token.get_secret_value()
    if slack is not None and not app_token and not settings.slack.signing_secret.get_secret_value():
        raise ValueError("HTTP mode needs OPSBOT_SLACK__SIGNING_SECRET (or OPSBOT_SLACK__APP_TOKEN for Socket Mode)")
    api = build_api(settings, responder, store, telemetry, post_alert=slack.runner.post_trace if slack else None,
                    admit=access.admit)
    handler = SocketModeHandler(slack.app, app_token) if slack is not None and app_token else None
    health = functools.partial(slack_health, slack, handler)
    app = build_server(settings, slack=slack, api=api, health=health, socket_mode=handler is not None)
    if slack is None:
        log.warning("no Slack bot token configured: serving the API and /healthz only")
    else:
        slack.runner.start()
    if handler is not None:
        handler.connect()  # non-blocking: the HTTP server below keeps /healthz and the API up
    try:
        s = settings.server
        serve(app, s.host, s.port, s.threads)
    finally:
        if handler is not None:
            handler.close()
        if slack is not None:
            slack.runner.stop(timeout_s=SHUTDOWN_DRAIN_S)


def slack_health(slack: SlackSurface | None, handler: SocketModeHandler | None) -> dict[str, Any]:
    """/healthz: the Slack mode, the Socket Mode connection and the worker pool; never calls Slack."""
    if slack is None:
        return {"status": "ok", "slack": "disabled"}
    report: dict[str, Any] = {"status": "ok", "slack": "http", "workers_busy": slack.runner.active,
                              "queued": slack.runner.queued}
    if handler is not None:
        connected = bool(handler.client.is_connected())
        report |= {"slack": "socket", "socket_connected": connected, "status": "ok" if connected else "starting"}
    return report
