"""The surfaces: the HTTP API and webhook, the Slack app and its worker pool, the one WSGI server, `opsbot serve`.

Both surfaces queue their diagnoses on the one job runner (bot/durable/runner.py), each with its own options built
here from settings: in this process, or with Redis on a stream every replica reads.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from bot.config import Settings
from bot.durable.runner import JobRunner, RunnerOptions
from bot.engine.context import step_to_line
from bot.engine.types import Responder, Trace
from bot.http.alerts import AlertDedupe, TtlDedupe
from bot.http.api import AlertPoster, AlertRoute, WSGIApp, api_app
from bot.http.dispatch import Dispatcher, api_dispatcher
from bot.http.jobstream import RedisAlertDedupe, job_statuses_from_redis
from bot.http.server import HealthCheck, health_app, liveness_app, route, slack_app
from bot.http.telemetry import Telemetry
from bot.safety.access import Admit
from bot.slack.delivery.apierrors import watch_api_errors
from bot.slack.delivery.budget import (
    SLACK_PER_CHANNEL_PER_MINUTE,
    SLACK_TIERS_PER_MINUTE,
    CallBudget,
    watch_rate_limits,
)
from bot.slack.delivery.chart import ChartPoster
from bot.slack.delivery.progress import ProgressOptions
from bot.slack.intake.assistant import suggested_prompts
from bot.slack.intake.listeners import SlackSurface, build_app, build_web_client
from bot.slack.jobs.backlog import Lanes, SlackState
from bot.slack.jobs.redisstate import RedisDedupe, RedisThreadMemory
from bot.slack.jobs.runner import Classify, Runner
from bot.slack.jobs.state import MemoryDedupe, MemoryThreadMemory
from bot.slack.jobs.steplog import StepLog
from bot.store.base import TraceStore
from bot.wiring.basics import build_access, build_redis
from bot.wiring.core import build_zone

log = logging.getLogger(__name__)


def runner_options(settings: Settings, *, name: str, workers: int, queue_size: int) -> RunnerOptions:
    """One job runner's options: its own name, workers and queue; the lease and attempts of settings.redis."""
    r = settings.redis
    return RunnerOptions(
        name=name,
        workers=workers,
        queue_size=queue_size,
        lease_s=r.claim_idle_s,
        max_attempts=r.max_attempts,
        prefix=r.prefix,
        step_line=step_to_line,  # a takeover tells the model each earlier step's key finding, as it tells old steps
    )


def build_dispatcher(
    settings: Settings,
    responder: Responder,
    store: TraceStore,
    telemetry: Telemetry,
    *,
    post_alert: AlertPoster | None = None,
    redis_client: Any | None = None,
    also_running: Callable[[str], bool] | None = None,
) -> Dispatcher:
    """The API's diagnoses on the job runner: a Redis stream shared by every replica when Redis is configured,
    else in this process. `also_running` tells the in-memory one which traces this process runs elsewhere (Slack's
    diagnoses); on Redis their status is kept next to the API's."""
    s = settings.server
    options = runner_options(settings, name="jobs", workers=s.api_workers, queue_size=s.api_queue_size)
    deliver = (lambda question, trace: post_alert(question.channel, question, trace)) if post_alert else None
    dispatcher = api_dispatcher(
        telemetry.instrument(responder),
        store,
        options,
        client=redis_client,
        deliver=deliver,
        also_running=also_running,
    )
    telemetry.watch_queue_depth(dispatcher.waiting_or_nan, "api")  # on Redis: the stream's, shared by every replica
    return dispatcher


def job_statuses(settings: Settings, trace_ids: list[str]) -> dict[str, str]:
    """The shared queue's status of each job (e.g. "running") for `opsbot traces`; {} without Redis."""
    client = build_redis(settings)
    if client is None:
        return {}
    try:
        return job_statuses_from_redis(client, trace_ids, prefix=settings.redis.prefix)
    finally:
        client.close()


def build_api(
    settings: Settings,
    responder: Responder,
    store: TraceStore,
    telemetry: Telemetry,
    *,
    post_alert: AlertPoster | None = None,
    admit: Admit | None = None,
    dispatcher: Dispatcher | None = None,
    redis_client: Any | None = None,
) -> WSGIApp:
    """The /api/* and /metrics WSGI app on its own worker pool; mount it on "/api/" and "/metrics".

    Pass a responder that does not store traces itself: the dispatcher stores each one (redacted, under the
    trace id the API handed out) before `post_alert` runs.
    """
    s = settings.server
    if dispatcher is None:
        dispatcher = build_dispatcher(
            settings, responder, store, telemetry, post_alert=post_alert, redis_client=redis_client
        )
    dedupe: AlertDedupe = TtlDedupe(s.alert_dedupe_ttl_s)
    if redis_client is not None:
        dedupe = RedisAlertDedupe(redis_client, s.alert_dedupe_ttl_s, prefix=settings.redis.prefix)
    alerts = AlertRoute(settings.slack.alert_channel, post_alert, dedupe, settings.prometheus.service_label)
    return api_app(
        dispatcher,
        store,
        telemetry,
        api_token=s.api_token.get_secret_value(),
        admit=admit or build_access(settings).admit,
        alerts=alerts,
        sync_wait_s=s.sync_wait_s,
        max_concurrent=s.api_threads,
        zone=build_zone(settings),
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
    redis_client: Any | None = None,
    classify: Classify | None = None,
    keep_steps: TraceStore | None = None,
) -> SlackSurface:
    """The Bolt app and its pools (not started). `persist` runs before anything is posted; with `keep_steps` and no
    Redis, a diagnosis' steps are stored there as they complete (a crash keeps what was done); with Redis they are
    kept there, where any replica that takes the job over finds them.

    With `classify` (the Router's intent gate), questions are triaged on the quick lane: help, chit-chat and
    lookups never wait behind diagnoses. With `telemetry`, the app is measured: runs, ack latency, queue depth,
    Slack API errors, stream fallbacks.
    """
    runner = _build_runner(settings, responder, persist, telemetry, classify, redis_client, keep_steps)
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
    settings: Settings,
    responder: Responder,
    persist: Callable[[Trace], None],
    telemetry: Telemetry | None,
    classify: Classify | None,
    redis_client: Any | None = None,
    keep_steps: TraceStore | None = None,
) -> Runner:
    """The Slack pools over one Web API client and one call budget (measured when `telemetry` is given), with the
    option objects built here once from settings.slack.

    With Redis, dedupe, thread memory and the diagnoses' queue (a stream) are shared by every replica.
    """
    s = settings.slack
    client = build_web_client(s.bot_token.get_secret_value(), s.api_base_url)
    budget = CallBudget(
        SLACK_TIERS_PER_MINUTE | {"chat.appendStream": s.append_per_minute, "chat.update": s.update_per_minute},
        per_channel_per_minute=SLACK_PER_CHANNEL_PER_MINUTE,
    )
    watch_rate_limits(client, budget)
    if telemetry is not None:
        watch_api_errors(client, telemetry.observe_slack_api_error)
        responder = telemetry.instrument(responder)
    progress = ProgressOptions(
        use_streaming=s.use_streaming,
        update_interval_s=s.update_interval_s,
        append_interval_s=s.append_interval_s,
        budget=budget,
        on_stream_fallback=telemetry.observe_stream_fallback if telemetry is not None else None,
        post_chart=ChartPoster(build_zone(settings), telemetry.observe_chart_failure if telemetry else None)
        if s.charts
        else None,
    )
    lanes = Lanes(
        workers=s.workers,
        quick_workers=s.quick_workers,
        marks_workers=s.marks_workers,
        ask_below_confidence=s.ask_below_confidence,
        queue_size=s.queue_size,
    )
    state = _slack_state(settings, redis_client, StepLog(keep_steps) if keep_steps is not None else None)
    return Runner(client, responder, persist=persist, state=state, lanes=lanes, progress=progress, classify=classify)


def _slack_state(settings: Settings, redis_client: Any | None, steps: StepLog | None) -> SlackState:
    """In this process by default (the trace store keeps each step as it completes); on Redis (shared by every
    replica) when a client is given: the steps in flight then live in the job runner's ledger there."""
    s = settings.slack
    options = runner_options(settings, name="slack-jobs", workers=s.workers, queue_size=s.queue_size)
    if redis_client is None:
        return SlackState(MemoryDedupe(s.dedupe_ttl_s), MemoryThreadMemory(), JobRunner(options), steps)
    r = settings.redis
    return SlackState(
        dedupe=RedisDedupe(redis_client, prefix=r.prefix, ttl_s=s.dedupe_ttl_s),
        memory=RedisThreadMemory(redis_client, prefix=r.prefix),
        jobs=JobRunner(options, redis_client),
    )


def build_server(
    settings: Settings,
    *,
    slack: SlackSurface | None,
    api: WSGIApp | None,
    health: HealthCheck,
    socket_mode: bool = False,
) -> WSGIApp:
    """The one WSGI app: /slack/ (HTTP mode), /livez, /readyz (= /healthz), and the API's /api/ + /metrics."""
    mounts: dict[str, WSGIApp] = {
        "/healthz": health_app(health),
        "/readyz": health_app(health),
        "/livez": liveness_app(),
    }
    if slack is not None and not socket_mode:
        mounts["/slack/"] = slack_app(slack.app)
    if api is not None:
        mounts |= {"/api/": api, "/metrics": api}
    return route(mounts)
