"""`opsbot serve`: check what this machine must provide, listen, build every surface, serve until SIGTERM, then
stop gracefully within a deadline. /readyz stays "starting" until every backend has answered (bot/http/readiness.py)
and the surfaces are built (bot/wiring/front.py)."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from slack_bolt.adapter.socket_mode import SocketModeHandler

from bot.config import Settings
from bot.http.dispatch import Dispatch
from bot.http.readiness import Probe, Readiness
from bot.http.server import serve
from bot.slack.intake.listeners import SlackSurface
from bot.store.base import TraceStore
from bot.wiring.basics import build_access, build_llm, build_redis
from bot.wiring.core import build_responder, build_store, build_telemetry
from bot.wiring.doctor import CheckResult, check_elasticsearch, check_prometheus, check_redis
from bot.wiring.front import Front, Wired, open_store
from bot.wiring.startup import startup_problems
from bot.wiring.surfaces import build_api, build_dispatcher, build_server, build_slack_app

log = logging.getLogger(__name__)

SHUTDOWN_DRAIN_S = 20.0  # the default of server.shutdown_drain_s (Kubernetes' default grace is 30 s)
RETENTION_EVERY_S = 86_400.0
BackendCheck = Callable[[Settings], CheckResult]  # one backend's reachability check, as readiness asks it


def serve_forever(settings: Settings) -> None:
    """`opsbot serve`: Slack (Socket Mode when an app token is set, else HTTP), the API, /livez and /readyz.
    Raises ValueError, naming each setting, when this machine cannot serve with them. It listens at once; the
    surfaces are built once the trace store opens (bot/wiring/front.py), and /readyz says "starting" until then."""
    problems = startup_problems(settings)
    s = settings.slack
    if s.bot_token.get_secret_value() and not (s.app_token.get_secret_value() or s.signing_secret.get_secret_value()):
        problems.append("HTTP mode needs OPSBOT_SLACK__SIGNING_SECRET (or OPSBOT_SLACK__APP_TOKEN for Socket Mode)")
    if problems:
        raise ValueError("not starting:\n" + "\n".join(problems))
    readiness = build_readiness(settings)
    readiness.start()
    front = Front(readiness, lambda wired, stopping: slack_health(wired.slack, wired.handler, stopping))
    threading.Thread(target=_wire, args=(settings, front), name="wiring", daemon=True).start()
    try:
        serve(front.app(), settings.server.host, settings.server.port, settings.server.threads)
    finally:
        wired = front.stop()
        readiness.stop()
        if wired is not None:
            drain(settings.server.shutdown_drain_s, wired.dispatcher, wired.slack, wired.handler)


def _wire(settings: Settings, front: Front) -> None:
    """Open the store, build every surface, then serve them (and start Slack's workers)."""
    try:
        store = open_store(settings, front, build_store)
        if store is None:
            return
        wired = build_surfaces(settings, store, front)
        if not front.publish(wired):
            return
        if wired.slack is None:
            log.warning("no Slack bot token configured: serving the API and /livez, /readyz only")
        else:
            wired.slack.runner.start()
        if wired.handler is not None:
            wired.handler.connect()  # non-blocking: the HTTP server keeps the health checks and the API up
    except Exception:  # nothing runs yet: a process that can never be ready exits, as a failed start does
        log.exception("opsbot serve could not build its surfaces")
        os._exit(1)


def build_surfaces(settings: Settings, store: TraceStore, front: Front) -> Wired:
    """Slack (when a bot token is set), the API's dispatcher and app, and the one WSGI app over them."""
    telemetry, redis_client = build_telemetry(settings), build_redis(settings)
    access = build_access(settings, redis_client)
    llm = build_llm(settings, on_error=telemetry.observe_llm_error)
    start_retention(store, settings.store.retention_days)
    responder = build_responder(settings, llm=llm)
    slack: SlackSurface | None = None
    if settings.slack.bot_token.get_secret_value():
        slack = build_slack_app(
            settings,
            responder,
            persist=store.save,
            fetch_trace=store.get,
            record_feedback=store.record_feedback,
            admit=access.admit,
            telemetry=telemetry,
            classify=responder.classify,
            redis_client=redis_client,
            keep_steps=store,
        )
    post_alert = slack.runner.post_trace if slack else None
    dispatcher = build_dispatcher(
        settings,
        responder,
        store,
        telemetry,
        redis_client=redis_client,
        post_alert=post_alert,
        also_running=slack.runner.runs if slack else None,
    )
    api = build_api(
        settings,
        responder,
        store,
        telemetry,
        admit=access.admit,
        dispatcher=dispatcher,
        post_alert=post_alert,
        redis_client=redis_client,
    )
    app_token = settings.slack.app_token.get_secret_value()
    handler = SocketModeHandler(slack.app, app_token) if slack is not None and app_token else None
    app = build_server(settings, slack=slack, api=api, health=front.health, socket_mode=handler is not None)
    return Wired(app, dispatcher, slack, handler)


def drain(drain_s: float, dispatcher: Dispatch, slack: SlackSurface | None, handler: SocketModeHandler | None) -> None:
    """Stop taking work, then let the API's and Slack's running diagnoses finish, both within one deadline."""
    log.info("stopping: running diagnoses get up to %.0f s", drain_s)
    if handler is not None:
        handler.close()
    stoppers = [threading.Thread(target=dispatcher.close, args=(drain_s,), name="drain-api")]
    if slack is not None:
        stoppers.append(threading.Thread(target=slack.runner.stop, kwargs={"timeout_s": drain_s}, name="drain-slack"))
    for thread in stoppers:
        thread.start()
    for thread in stoppers:
        thread.join(drain_s + 5)
    log.info("stopped")


def start_retention(store: TraceStore, retention_days: int) -> None:
    """Delete traces older than retention_days now and once a day (0 keeps them forever)."""
    if retention_days <= 0:
        return

    def sweep() -> None:
        while True:
            try:
                deleted = store.delete_older_than(datetime.now(UTC) - timedelta(days=retention_days))
                if deleted:
                    log.info("retention: deleted %d traces older than %d days", deleted, retention_days)
            except Exception:  # a store hiccup must not stop the service; try again tomorrow
                log.exception("retention sweep failed")
            threading.Event().wait(RETENTION_EVERY_S)

    threading.Thread(target=sweep, name="retention", daemon=True).start()


def build_readiness(settings: Settings) -> Readiness:
    """Wait for Prometheus, and for Elasticsearch and Redis when they are used, to answer as they should."""
    checks: dict[str, BackendCheck] = {"prometheus": check_prometheus}
    if "elasticsearch" in (settings.logs.backend, settings.store.backend) or settings.deploys.source == "index":
        checks["elasticsearch"] = check_elasticsearch
    if settings.redis.url.get_secret_value():
        checks["redis"] = check_redis
    return Readiness({name: _probe(check, settings) for name, check in checks.items()})


def _probe(check: BackendCheck, settings: Settings) -> Probe:
    def probe() -> str:
        result = check(settings)
        return "" if result.level == "ok" else result.line

    return probe


def slack_health(
    slack: SlackSurface | None, handler: SocketModeHandler | None, stopping: threading.Event | None = None
) -> dict[str, Any]:
    """/readyz and /healthz: the Slack mode, the Socket Mode connection and the worker pool; never calls Slack."""
    if stopping is not None and stopping.is_set():
        return {"status": "stopping"}
    if slack is None:
        return {"status": "ok", "slack": "disabled"}
    report: dict[str, Any] = {
        "status": "ok",
        "slack": "http",
        "workers_busy": slack.runner.active,
        "queued": slack.runner.queued,
    }
    if handler is not None:
        connected = bool(handler.client.is_connected())
        report |= {"slack": "socket", "socket_connected": connected, "status": "ok" if connected else "starting"}
    return report
