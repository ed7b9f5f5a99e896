"""`opsbot serve`: check what this machine must provide, build every surface, serve until SIGTERM, then stop
gracefully within a deadline. /readyz stays "starting" until every backend has answered (bot/http/readiness.py)."""

from __future__ import annotations

import functools
import logging
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

from slack_bolt.adapter.socket_mode import SocketModeHandler

from bot.config import Settings
from bot.http.dispatch import Dispatch
from bot.http.readiness import Probe, Readiness
from bot.http.server import serve
from bot.slack.intake.listeners import SlackSurface
from bot.store.base import TraceStore
from bot.wiring.core import build_access, build_llm, build_redis, build_responder, build_store, build_telemetry
from bot.wiring.doctor import Check, check_elasticsearch, check_prometheus, check_redis
from bot.wiring.startup import startup_problems
from bot.wiring.surfaces import build_api, build_dispatcher, build_server, build_slack_app

log = logging.getLogger(__name__)

SHUTDOWN_DRAIN_S = 20.0  # the default of server.shutdown_drain_s (Kubernetes' default grace is 30 s)
RETENTION_EVERY_S = 86_400.0


def serve_forever(settings: Settings) -> None:
    """`opsbot serve`: Slack (Socket Mode when an app token is set, else HTTP), the API, /livez and /readyz.
    Raises ValueError, naming each setting, when this machine cannot serve with them."""
    problems = startup_problems(settings)
    if problems:
        raise ValueError("not starting:\n" + "\n".join(problems))
    readiness = build_readiness(settings)
    readiness.start()
    telemetry, redis_client = build_telemetry(settings), build_redis(settings)
    access = build_access(settings, redis_client)
    llm, store = build_llm(settings, on_error=telemetry.observe_llm_error), build_store(settings)
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
    app_token = settings.slack.app_token.get_secret_value()
    if slack is not None and not app_token and not settings.slack.signing_secret.get_secret_value():
        raise ValueError("HTTP mode needs OPSBOT_SLACK__SIGNING_SECRET (or OPSBOT_SLACK__APP_TOKEN for Socket Mode)")
    dispatcher = build_dispatcher(
        settings,
        responder,
        store,
        telemetry,
        redis_client=redis_client,
        post_alert=slack.runner.post_trace if slack else None,
        also_running=slack.runner.runs if slack else None,
    )
    api = build_api(
        settings,
        responder,
        store,
        telemetry,
        admit=access.admit,
        dispatcher=dispatcher,
        post_alert=slack.runner.post_trace if slack else None,
        redis_client=redis_client,
    )
    handler = SocketModeHandler(slack.app, app_token) if slack is not None and app_token else None
    stopping = threading.Event()
    health = functools.partial(service_health, readiness, slack, handler, stopping)
    app = build_server(settings, slack=slack, api=api, health=health, socket_mode=handler is not None)
    if slack is None:
        log.warning("no Slack bot token configured: serving the API and /livez, /readyz only")
    else:
        slack.runner.start()
    if handler is not None:
        handler.connect()  # non-blocking: the HTTP server below keeps the health checks and the API up
    try:
        s = settings.server
        serve(app, s.host, s.port, s.threads)
    finally:
        stopping.set()
        readiness.stop()
        drain(settings.server.shutdown_drain_s, dispatcher, slack, handler)


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
    checks: dict[str, Check] = {"prometheus": check_prometheus}
    if "elasticsearch" in (settings.logs.backend, settings.store.backend) or settings.deploys.source == "index":
        checks["elasticsearch"] = check_elasticsearch
    if settings.redis.url.get_secret_value():
        checks["redis"] = check_redis
    return Readiness({name: _probe(check, settings) for name, check in checks.items()})


def _probe(check: Check, settings: Settings) -> Probe:
    def probe() -> str:
        result = check(settings)
        return "" if result.level == "ok" else result.line

    return probe


def service_health(
    readiness: Readiness,
    slack: SlackSurface | None,
    handler: SocketModeHandler | None,
    stopping: threading.Event | None = None,
) -> dict[str, Any]:
    """/readyz: "starting" (and what it waits for) until every backend answered; then the Slack side's report."""
    if stopping is not None and stopping.is_set():
        return {"status": "stopping"}
    return readiness.report() or slack_health(slack, handler, stopping)


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
