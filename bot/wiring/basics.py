"""Light builders: settings, budgets, the LLM adapter and the intent gate.

Nothing here imports a backend client (Elasticsearch, Prometheus, Slack, waitress), so `opsbot parse` and
`opsbot classify` start without them; the openai package loads only when a model is configured. The `*_on_first_use`
functions stand in for the redaction rules, the intent gate, the playbook and the quick lookup, and import them
when first called, so building a responder loads none of them (tests/cli/test_startup_imports.py guards it).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import UTC
from typing import TYPE_CHECKING, Any

from bot.engine.types import Budget, Intent
from bot.safety.logfilter import install_noise_filter, install_redaction

if TYPE_CHECKING:  # Settings, the adapter, the context and the gate load when used, not at import
    from datetime import datetime, tzinfo
    from pathlib import Path

    from bot.config import Settings
    from bot.engine.context import ContextLimits
    from bot.engine.llm import LLM, ErrorObserver
    from bot.engine.types import Question, StepObserver, Trace
    from bot.routing.model import IntentModel
    from bot.routing.respond import Miss
    from bot.safety.access import AccessPolicy
    from tools.base import Toolbox


def load_settings() -> Settings:
    """Settings from the environment, ./.env and the config file; an OPSBOT_ variable that names no setting is an
    error here (UnknownSettings), as a misspelt key is everywhere else."""
    from bot.config import Settings  # pydantic-settings: ~0.3 s of imports
    from bot.config.problems import UnknownSettings, unknown_variables
    from bot.config.provenance import dotenv_entries, environment

    unknown = unknown_variables(Settings, environment(), dotenv_entries())
    if unknown:
        raise UnknownSettings(unknown)
    return Settings()


def install_log_redaction() -> None:
    """Redact secrets from every log record the root logger's handlers write, and cut third-party retry
    chatter to one line per failure (call after logging setup)."""
    install_noise_filter()
    install_redaction(redact_on_first_use)


def redact_on_first_use(text: str) -> str:
    """bot.safety.redact's rules (~20 ms of pattern compiling), imported when the first text is redacted (a log
    record written, a tool's observation), so a command that logs nothing (`opsbot classify`) and a build that
    answers nothing yet do not pay for them."""
    from bot.safety.redact import redact

    return redact(text)


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


def build_llm(settings: Settings, *, on_error: ErrorObserver | None = None) -> LLM | None:
    """The OpenAI-compatible adapter, or None when no LLM is configured (the playbook answers then).

    `on_error` hears the kind of every failed request (pass `telemetry.observe_llm_error`). The adapter sits
    behind one limit of settings.agent.max_concurrent_llm_calls: build it once per process and hand the same
    object to every surface, so Slack, the API and the webhook share that limit.
    """
    c = settings.llm
    if not c.configured:
        return None
    from bot.engine.llm import OpenAILLM
    from bot.engine.llmlimit import limited

    adapter = OpenAILLM(
        base_url=c.base_url,
        api_key=c.api_key.get_secret_value(),
        model=c.model,
        cheap_model=c.cheap_model,
        timeout_s=c.timeout_s,
        max_retries=c.max_retries,
        min_attempt_s=c.min_attempt_s,
        temperature=c.temperature,
        max_reply_tokens=c.max_reply_tokens,
        tokenizer=c.tokenizer,
        on_error=on_error,
    )
    return limited(adapter, settings.agent.max_concurrent_llm_calls)


def build_context_limits(settings: Settings) -> ContextLimits:
    """How much of a run's history the model sees (observation cut, steps kept verbatim)."""
    from bot.engine.context import ContextLimits

    return ContextLimits(
        max_observation_chars=settings.agent.max_observation_chars,
        keep_recent_steps=settings.agent.keep_recent_steps,
    )


def build_classifier(settings: Settings, llm: LLM | None = None) -> Callable[[str], Intent]:
    """The intent gate: trivial rules, the learned classifier (settings.intent.model_path or the shipped one),
    then the cheap model when the classifier is unsure, settings.intent.use_model and an LLM is configured."""
    model = llm if llm is not None else build_llm(settings)
    return functools.partial(
        classify_on_first_use,
        llm=model if settings.intent.use_model else None,
        unsure_below=settings.intent.unsure_below,
        model=_retrained_model(settings.intent.model_path),
    )


def _retrained_model(path: Path | None) -> IntentModel | None:
    """A retrained classifier artifact, read (and checked) at build; None: the shipped one, read with the first
    message."""
    if path is None:
        return None
    from bot.routing.model import load_model

    return load_model(path.expanduser())


def build_default_classifier() -> Callable[[str], Intent]:
    """The intent gate build_classifier builds when nothing about the model or the gate is set (the rules and the
    shipped classifier, no model), without loading Settings: `opsbot classify` uses it then (bot/cli/plainenv.py)."""
    return functools.partial(classify_on_first_use, llm=None, unsure_below=0.6, model=None)


def classify_on_first_use(
    text: str, llm: LLM | None = None, *, unsure_below: float = 0.6, model: IntentModel | None = None
) -> Intent:
    """bot.routing.intent.classify, imported with the first message routed: the gate's features, artifact reader
    and patterns are not needed to build a responder."""
    from bot.routing.intent import classify

    return classify(text, llm, unsure_below=unsure_below, model=model)


def playbook_on_first_use(
    question: Question,
    tools: Toolbox,
    *,
    topology: Mapping[str, Sequence[str]],
    metric_roles: Mapping[str, str] | None = None,
    saturation: Sequence[str] = (),
    unmeasured: Mapping[str, Collection[str]] | None = None,
    on_step: StepObserver | None = None,
    now: datetime | None = None,
    zone: tzinfo = UTC,
) -> Trace:
    """run_playbook, imported with the first diagnosis: building a responder needs neither it nor its detectors."""
    from bot.playbook.diagnosis import run_playbook

    return run_playbook(
        question,
        tools,
        topology=topology,
        metric_roles=metric_roles,
        saturation=saturation,
        unmeasured=unmeasured,
        on_step=on_step,
        now=now,
        zone=zone,
    )


def lookup_on_first_use(
    question: Question,
    tools: Toolbox,
    *,
    metric_roles: Mapping[str, str],
    services: Iterable[str] = (),
    on_step: StepObserver | None = None,
    on_miss: Miss | None = None,
) -> Trace | None:
    """answer_lookup, imported with the first quick lookup (it reads the playbook's probes)."""
    from bot.routing.lookup import answer_lookup

    return answer_lookup(
        question, tools, metric_roles=metric_roles, services=services, on_step=on_step, on_miss=on_miss
    )


def build_redis(settings: Settings) -> Any | None:
    """A Redis client when OPSBOT_REDIS__URL is set (shared state for several replicas), else None."""
    url = settings.redis.url.get_secret_value()
    if not url:
        return None
    import redis  # only a deployment with Redis configured needs the client imported

    return redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=5, health_check_interval=30)


def build_access(settings: Settings, redis_client: Any | None = None) -> AccessPolicy:
    """The channel allowlist and per-user rate limit every entry point applies (shared on Redis when given)."""
    from bot.safety.access import AccessPolicy
    from bot.safety.ratelimit import RedisWindow

    a = settings.access
    window = RedisWindow(redis_client, prefix=settings.redis.prefix) if redis_client is not None else None
    return AccessPolicy(a.allowed_channels, a.rate_limit_per_minute, window=window)
