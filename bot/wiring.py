"""The composition root: the one place that reads Settings and builds clients, tools, LLM, agent and apps.

Every other module receives ready objects and plain limits through its constructor.
"""

from __future__ import annotations

import functools
import logging
import socket
from collections.abc import Callable
from typing import Any

from elasticsearch import Elasticsearch
from prometheus_api_client import PrometheusConnect
from slack_bolt.adapter.socket_mode import SocketModeHandler
from urllib3.util.retry import Retry

from bot.access import AccessPolicy, Admit
from bot.agent.context import ContextLimits
from bot.agent.intent import classify
from bot.agent.llm import LLM, OpenAILLM
from bot.agent.playbook import run_playbook
from bot.agent.redact import redact
from bot.agent.respond import Playbook, respond
from bot.agent.types import Budget, Intent, Question, StepObserver, Trace
from bot.alerts import TtlDedupe
from bot.api import AlertPoster, AlertRoute, WSGIApp, api_app
from bot.config import MetricTemplate, Settings
from bot.dispatch import Dispatcher, Responder
from bot.elastic import es_client
from bot.eval import EvalCase
from bot.logfilter import install_redaction
from bot.sandbox.control import SandboxInfo, ensure_sandbox, sandbox_down, sandbox_up
from bot.server import HealthCheck, health_app, route, serve, slack_app
from bot.slack.listeners import SlackSurface, build_app, build_web_client
from bot.slack.runner import Responder as SlackResponder
from bot.slack.runner import Runner
from bot.slack.state import MemoryDedupe, MemoryThreadMemory, MemoryWorkQueue
from bot.store.base import TraceStore
from bot.store.elastic import ElasticsearchTraceStore
from bot.store.sqlite import SqliteTraceStore
from bot.telemetry import Telemetry
from tools.base import Toolbox, ToolSpec
from tools.calculate import calculate_tool
from tools.deployindex import ElasticsearchDeploys
from tools.deploys import DeploySource, DeployTools
from tools.gitdeploys import GitDeploys
from tools.logs import ElasticsearchLogs, LogFields, LogSource, LogTools, SqliteLogs
from tools.metrics import MetricQuery, MetricsTools

log = logging.getLogger(__name__)


def load_settings() -> Settings:
    """Settings from the environment and ./.env."""
    return Settings()


def build_budget(settings: Settings) -> Budget:
    a = settings.agent
    return Budget(
        max_steps=a.max_steps,
        time_budget_s=a.time_budget_s,
        token_budget=a.token_budget,
        max_format_errors=a.max_format_errors,
        max_args_chars=a.max_args_chars,
        parallel_tools=a.parallel_tools,
    )


def build_llm(settings: Settings) -> LLM | None:
    """The OpenAI-compatible adapter, or None when no LLM is configured (the playbook answers then)."""
    c = settings.llm
    if not c.configured:
        return None
    return OpenAILLM(
        base_url=c.base_url,
        api_key=c.api_key.get_secret_value(),
        model=c.model,
        cheap_model=c.cheap_model,
        timeout_s=c.timeout_s,
        max_retries=c.max_retries,
        temperature=c.temperature,
        max_reply_tokens=c.max_reply_tokens,
        tokenizer=c.tokenizer,
    )


def build_context_limits(settings: Settings) -> ContextLimits:
    """How much of a run's history the model sees (observation cut, steps kept verbatim)."""
    return ContextLimits(
        max_observation_chars=settings.agent.max_observation_chars,
        keep_recent_steps=settings.agent.keep_recent_steps,
    )


# --- tools (H4): one builder per client/source, then the toolbox ----------------------------------------


def build_prometheus(settings: Settings) -> PrometheusConnect:
    """A Prometheus client that fails fast: one retry on connect errors and 502-504, then the backend's text."""
    p = settings.prometheus
    token = p.bearer_token.get_secret_value()
    retry = Retry(total=1, read=0, backoff_factor=0.2, status_forcelist=(502, 503, 504), raise_on_status=False)
    return PrometheusConnect(
        url=p.url.rstrip("/"),
        headers={"Authorization": f"Bearer {token}"} if token else None,
        disable_ssl=not p.verify_tls,
        retry=retry,
        timeout=p.timeout_s,
    )


def build_es(settings: Settings) -> Elasticsearch:
    """The shared Elasticsearch client (logs, deploys and the trace store use the same connection)."""
    e = settings.elasticsearch
    return es_client(
        e.url,
        api_key=e.api_key.get_secret_value(),
        username=e.username,
        password=e.password.get_secret_value(),
        verify_certs=e.verify_certs,
        timeout_s=e.timeout_s,
        plain_json=e.plain_json,
    )


def build_metrics_tools(settings: Settings) -> MetricsTools:
    """query_metrics over the configured catalogue."""
    p = settings.prometheus
    catalogue = {name: MetricQuery(m.promql, m.unit, m.description) for name, m in p.metrics.items()}
    return MetricsTools(build_prometheus(settings), catalogue, service_label=p.service_label, max_points=p.max_points)


def build_log_source(settings: Settings) -> LogSource:
    """SQLite FTS5 (default) or Elasticsearch, as settings.logs.backend says."""
    c = settings.logs
    if c.backend == "sqlite":
        return SqliteLogs(c.sqlite_path)
    fields = LogFields(
        timestamp=c.timestamp_field,
        service=c.service_field,
        level=c.level_field,
        message=c.message_field,
        stack_trace=c.stack_field,
        trace_id=c.trace_field,
    )
    return ElasticsearchLogs(build_es(settings), c.index_pattern, fields)


def build_deploy_source(settings: Settings) -> DeploySource:
    """A GitOps repository (default) or an Elasticsearch deploy-events index."""
    d = settings.deploys
    if d.backend == "git":
        return GitDeploys(d.git_repo, d.tag_pattern, d.service_path)
    return ElasticsearchDeploys(build_es(settings), d.index)


def build_tool_specs(settings: Settings) -> list[ToolSpec]:
    """Every tool the model may call, in the order the catalogue lists them."""
    c = settings.logs
    logs = LogTools(build_log_source(settings), default_limit=c.default_limit, max_limit=c.max_limit)
    deploys = DeployTools(build_deploy_source(settings), max_diff_chars=settings.deploys.max_diff_chars)
    return [*build_metrics_tools(settings).specs(), *logs.specs(), *deploys.specs(), calculate_tool()]


def build_toolbox(settings: Settings) -> Toolbox:
    """All tools, with secrets redacted from every observation. Duplicate names fail here, at startup."""
    return Toolbox(build_tool_specs(settings), redact=redact)


def build_store(settings: Settings) -> TraceStore:
    """SQLite (default) or Elasticsearch, as settings.store.backend says. Both redact before storing."""
    c = settings.store
    if c.backend == "elasticsearch":
        return ElasticsearchTraceStore(build_es(settings), c.index)
    return SqliteTraceStore(c.sqlite_path.expanduser())


def build_telemetry(settings: Settings) -> Telemetry:
    """opsbot's own metrics registry; build one per process and share it with every surface."""
    return Telemetry()


def build_access(settings: Settings) -> AccessPolicy:
    """The channel allowlist and per-user rate limit every entry point applies."""
    a = settings.access
    return AccessPolicy(a.allowed_channels, a.rate_limit_per_minute)


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


def install_log_redaction() -> None:
    """Redact secrets from every log record the root logger's handlers write (call after logging setup)."""
    install_redaction(redact)


def bring_up_sandbox(settings: Settings, scenario: str = "", es_url: str = "") -> SandboxInfo:
    """`opsbot sandbox up` / the demo: the sandbox running (reused when healthy), its opsbot.env written."""
    base_metrics = {name: t.model_dump() for name, t in settings.prometheus.metrics.items()}
    return ensure_sandbox(
        settings.sandbox, scenario or None, es_url=es_url, es_client_factory=_sandbox_es_client,
        base_metrics=base_metrics,
    )


def _sandbox_es_client(url: str) -> Elasticsearch:
    # plain JSON works against Elasticsearch, OpenSearch and osmem alike; the sandbox needs no credentials
    return es_client(url, plain_json=True)


def sandbox_overrides(settings: Settings, info: SandboxInfo) -> Settings:
    """Settings pointed at a running sandbox: Prometheus, logs, deploys, topology, the extra metric templates."""
    backend = "elasticsearch" if info.es_url else None
    extra = {name: MetricTemplate.model_validate(t) for name, t in info.metric_templates.items()}
    metrics = {**settings.prometheus.metrics, **extra}
    update = {
        "prometheus": settings.prometheus.model_copy(update={"url": info.prometheus_url, "metrics": metrics}),
        "logs": settings.logs.model_copy(update={"backend": backend or "sqlite", "sqlite_path": info.logs_db}),
        "deploys": settings.deploys.model_copy(update={"backend": backend or "git", "git_repo": info.git_repo}),
        "topology": info.topology,
    }
    if info.es_url:
        update["elasticsearch"] = settings.elasticsearch.model_copy(update={"url": info.es_url, "plain_json": True})
    return settings.model_copy(update=update)


# --- Slack, intent, respond and the HTTP server (H5) ------------------------------------------------------


def build_classifier(settings: Settings, llm: LLM | None = None) -> Callable[[str], Intent]:
    """The intent gate: rules, then the cheap model when settings.intent.use_model and an LLM is configured."""
    model = llm if llm is not None else build_llm(settings)
    return functools.partial(
        classify, llm=model if settings.intent.use_model else None, unsure_below=settings.intent.unsure_below
    )


def build_playbook(settings: Settings) -> Playbook:
    """The model-free diagnosis over the configured topology."""
    return functools.partial(run_playbook, topology=settings.topology)


def build_responder(settings: Settings, *, llm: LLM | None = None, tools: Toolbox | None = None) -> SlackResponder:
    """respond() with everything bound: the function every surface calls. It does not store traces itself."""
    model = llm if llm is not None else build_llm(settings)
    return functools.partial(
        _respond_one,
        llm=model,
        tools=tools if tools is not None else build_toolbox(settings),
        budget=build_budget(settings),
        protocol=settings.llm.protocol,
        classify=build_classifier(settings, model),
        playbook=build_playbook(settings),
        limits=build_context_limits(settings),
        tool_timeout_s=settings.agent.tool_timeout_s,
    )


def _respond_one(question: Question, on_step: StepObserver | None, **bound: Any) -> Trace:
    return respond(question, on_step=on_step, **bound)


def build_slack_app(
    settings: Settings,
    responder: SlackResponder,
    *,
    persist: Callable[[Trace], None],
    fetch_trace: Callable[[str], Trace | None] | None = None,
    record_feedback: Callable[[str, str, int], None] | None = None,
    admit: Admit | None = None,
) -> SlackSurface:
    """The Bolt app and its worker pool (not started). `persist` runs before anything is posted."""
    s = settings.slack
    client = build_web_client(s.bot_token.get_secret_value(), s.api_base_url)
    runner = Runner(
        client,
        responder,
        persist=persist,
        queue=MemoryWorkQueue(s.queue_size),
        dedupe=MemoryDedupe(s.dedupe_ttl_s),
        memory=MemoryThreadMemory(),
        workers=s.workers,
        use_streaming=s.use_streaming,
        update_interval_s=s.update_interval_s,
    )
    app = build_app(
        runner,
        signing_secret=s.signing_secret.get_secret_value(),
        fetch_trace=fetch_trace or runner.recent_trace,
        record_feedback=record_feedback,
        admit=admit or build_access(settings).admit,
    )
    return SlackSurface(app, runner)


def build_server(
    settings: Settings,
    *,
    slack: SlackSurface | None,
    api: WSGIApp | None,
    health: HealthCheck,
    socket_mode: bool = False,
) -> WSGIApp:
    """The one WSGI app: /slack/ (HTTP mode), /healthz, and H6's /api/ + /metrics."""
    mounts: dict[str, WSGIApp] = {"/healthz": health_app(health)}
    if slack is not None and not socket_mode:
        mounts["/slack/"] = slack_app(slack.app)
    if api is not None:
        mounts |= {"/api/": api, "/metrics": api}
    return route(mounts)


SHUTDOWN_DRAIN_S = 20.0  # running diagnoses get this long to post on SIGTERM (Kubernetes' default grace is 30 s)


def serve_forever(settings: Settings) -> None:
    """`opsbot serve`: Slack (Socket Mode when an app token is set, else HTTP), the API and /healthz."""
    llm, store = build_llm(settings), build_store(settings)
    telemetry, access = build_telemetry(settings), build_access(settings)
    responder = build_responder(settings, llm=llm)
    slack: SlackSurface | None = None
    if settings.slack.bot_token.get_secret_value():
        slack = build_slack_app(settings, telemetry.instrument(responder), persist=store.save, fetch_trace=store.get,
                                record_feedback=store.record_feedback, admit=access.admit)
        slack.app.use(telemetry.ack_timer)
        runner = slack.runner
        telemetry.watch_queue_depth(lambda: runner.queued, "slack")
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


def build_eval_diagnoser(settings: Settings) -> Callable[[EvalCase], Trace]:
    """`opsbot eval`: each case in its own fresh sandbox (free port, own folder), through build_responder."""
    base_metrics = {name: t.model_dump() for name, t in settings.prometheus.metrics.items()}
    store = build_store(settings)

    def diagnose(case: EvalCase) -> Trace:
        folder = settings.sandbox.dir / "eval" / case.name
        info = sandbox_up(folder, case.name, _free_port(), base_metrics=base_metrics)
        try:
            trace = build_responder(sandbox_overrides(settings, info))(Question(case.question, source="eval"), None)
        finally:
            sandbox_down(folder)
        try:  # kept so `opsbot traces show <id>` explains a score; losing it must not lose the score
            store.save(trace)
        except Exception as exc:
            log.warning("eval: could not store trace %s: %s", trace.trace_id, exc)
        return trace

    return diagnose


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
