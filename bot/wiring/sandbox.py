"""The local incident sandbox and the eval harness's per-scenario diagnoser."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from elasticsearch import Elasticsearch
from pydantic import SecretStr

from bot.config import DatabaseTarget, MetricTemplate, Settings
from bot.config.deploys import AppCodeSettings
from bot.engine.types import Question, Trace
from bot.eval import EvalCase
from bot.sandbox.apprepo import REF_PATTERN as APP_REF_PATTERN
from bot.sandbox.apprepo import app_repo_path
from bot.sandbox.backends import free_port
from bot.sandbox.control import SandboxInfo, ensure_sandbox, sandbox_down, sandbox_up
from bot.sandbox.standins.osmem import LOCAL_ES, ensure_local_search, stop_local_search
from bot.wiring.core import build_responder, build_store
from bot.wiring.elastic import es_client
from bot.wiring.toolsets import SANDBOX_RUNBOOKS

log = logging.getLogger(__name__)


def bring_up_sandbox(settings: Settings, scenario: str = "", es_url: str = "", loki: bool = False) -> SandboxInfo:
    """`opsbot sandbox up` / the demo: the sandbox running (reused when healthy), its opsbot.env written.

    es_url "local" runs the bundled osmem-server on settings.sandbox.osmem_port and loads it; any other
    es_url stops a local one an earlier `up --es local` left running. loki: logs from the Loki stand-in.
    """
    base_metrics = {name: t.model_dump() for name, t in settings.prometheus.metrics.items()}
    if es_url == LOCAL_ES:
        search = ensure_local_search(settings.sandbox.dir, settings.sandbox.osmem_port)
        if search.started:  # a new osmem-server is empty: rebuild, so the sandbox is loaded into it
            sandbox_down(settings.sandbox.dir)
        es_url = search.url
    else:
        stop_local_search(settings.sandbox.dir)
    return ensure_sandbox(
        settings.sandbox,
        scenario or None,
        es_url=es_url,
        es_client_factory=_sandbox_es_client,
        base_metrics=base_metrics,
        loki=loki,
    )


def take_down_sandbox(settings: Settings) -> bool:
    """`opsbot sandbox down`: Prometheus and a local osmem-server stopped by their PIDs, the data removed."""
    stopped_search = stop_local_search(settings.sandbox.dir)
    return sandbox_down(settings.sandbox.dir) or stopped_search


def _sandbox_es_client(url: str) -> Elasticsearch:
    # plain JSON works against Elasticsearch, OpenSearch and osmem alike; the sandbox needs no credentials
    return es_client(url, plain_json=True)


def sandbox_overrides(settings: Settings, info: SandboxInfo) -> Settings:
    """Settings pointed at a running sandbox: Prometheus, logs, deploys, topology, the extra metric templates,
    the runbooks of its repository, its Kubernetes API and Loki stand-ins when it runs them, and its databases'
    postgres_exporter series for the database toolset."""
    backend = "elasticsearch" if info.es_url else None
    extra = {name: MetricTemplate.model_validate(t) for name, t in info.metric_templates.items()}
    metrics = {**settings.prometheus.metrics, **extra}
    update = {
        "prometheus": settings.prometheus.model_copy(update={"url": info.prometheus_url, "metrics": metrics}),
        "logs": settings.logs.model_copy(update={"backend": backend or "sqlite", "sqlite_path": info.logs_db}),
        "deploys": settings.deploys.model_copy(
            update={
                "source": "index" if backend else "git",
                "git_repo": info.git_repo,
                "code": _app_code(settings, info),
            }
        ),
        "topology": info.topology,
        # the runbooks in the sandbox's repository, unless runbooks are configured already
        "runbooks": settings.runbooks
        if settings.runbooks.enabled
        else settings.runbooks.model_copy(
            update={"enabled": True, "path": Path(info.runbooks_dir) if info.runbooks_dir else SANDBOX_RUNBOOKS}
        ),
    }
    if info.kubeconfig:
        update["kubernetes"] = settings.kubernetes.model_copy(
            update={
                "enabled": True,
                "kubeconfig": info.kubeconfig,
                "context": "",
                "in_cluster": False,
                "namespaces": [info.kube_namespace],
            }
        )
    if info.databases and not settings.database.targets:  # the exporter views over the sandbox's postgres series
        targets = {name: DatabaseTarget(services=callers) for name, callers in info.databases.items()}
        update["database"] = settings.database.model_copy(update={"targets": targets})
    if info.loki_url:
        update["logs"] = settings.logs.model_copy(update={"backend": "loki"})
        update["loki"] = settings.loki.model_copy(update={"url": info.loki_url, "tenant": ""})
    if info.es_url:
        update["elasticsearch"] = settings.elasticsearch.model_copy(update={"url": info.es_url, "plain_json": True})
    return settings.model_copy(update=update)


def _app_code(settings: Settings, info: SandboxInfo) -> AppCodeSettings:
    """The sandbox's application repository behind its images, unless the code source is configured already."""
    apps = app_repo_path(info.git_repo)
    if settings.deploys.code.source != "off" or not apps.exists():
        return settings.deploys.code
    return settings.deploys.code.model_copy(
        update={"source": "git", "repos": {}, "repo_pattern": str(apps), "ref_pattern": APP_REF_PATTERN}
    )


def eval_prometheus_port(settings: Settings) -> int:
    """OPSBOT_SANDBOX__PROMETHEUS_PORT when it is set (the cases run one after another), else a free port."""
    return settings.sandbox.prometheus_port if "prometheus_port" in settings.sandbox.model_fields_set else free_port()


def build_eval_diagnoser(settings: Settings, at: datetime | None = None) -> Callable[[EvalCase], Trace]:
    """`opsbot eval`: each case in its own fresh sandbox (free port, own folder), through build_responder. With
    `at`, every sandbox is built for that run clock and the tools and the playbook read "now" as `at`."""
    base_metrics = {name: t.model_dump() for name, t in settings.prometheus.metrics.items()}
    store = build_store(settings)
    port = eval_prometheus_port(settings)

    def diagnose(case: EvalCase) -> Trace:
        folder = settings.sandbox.dir / "eval" / case.name
        info = sandbox_up(folder, case.scenario_ref, port, base_metrics=base_metrics, now=at)
        responder = build_responder(sandbox_overrides(settings, info), clock=(lambda: at) if at else None)
        try:
            trace = responder(Question(case.question, source="eval"), None)
        finally:
            sandbox_down(folder)
        try:  # kept so `opsbot traces show <id>` explains a score; losing it must not lose the score
            store.save(trace)
        except Exception as exc:
            log.warning("eval: could not store trace %s: %s", trace.trace_id, exc)
        return trace

    return diagnose


def build_relay_diagnoser(
    settings: Settings, url: str, wait_s: float, at: datetime | None = None
) -> Callable[[EvalCase], Trace]:
    """`opsbot eval --relay`: the eval's diagnoser with the model's calls sent to the file relay at `url`."""
    return build_eval_diagnoser(relay_overrides(settings, url, wait_s), at)


def relay_overrides(settings: Settings, url: str, wait_s: float) -> Settings:
    """The model is the relay: one attempt per call that waits as long as the reasoner may, and a run time budget
    that does not count a reasoner's reading time as a model's (the step, token and repeat gates stay)."""
    llm = settings.llm.model_copy(
        update={"base_url": url, "api_key": SecretStr("relay"), "timeout_s": wait_s + 30, "max_retries": 0}
    )
    budget = max(settings.agent.time_budget_s, wait_s * (settings.agent.max_steps + 4))
    agent = settings.agent.model_copy(update={"time_budget_s": budget})
    return settings.model_copy(update={"llm": llm, "agent": agent})
