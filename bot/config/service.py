"""The sections about how opsbot itself runs: the model and the loop's gates, Slack, the HTTP server, access,
the trace store, Redis, the intent gate and the sandbox."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr

from bot.config.checks import HttpUrl, OptionalHttpUrl, Port
from bot.config.section import DEFAULT_STATE_DIR, Section


class LLMSettings(Section):
    """Any OpenAI-compatible endpoint. Empty base_url and api_key means: no LLM, use the playbook."""

    base_url: OptionalHttpUrl = ""
    api_key: SecretStr = SecretStr("")
    model: str = "gpt-4o-mini"
    cheap_model: str = ""  # classification and summaries; empty = same as model
    protocol: Literal["text", "native"] = "native"
    timeout_s: float = 60.0
    max_retries: int = 2
    min_attempt_s: float = 1.0  # a retry is made only if this much of the run's time is left after its wait
    temperature: float = 0.0
    max_reply_tokens: int = 1024
    tokenizer: str = "o200k_base"

    @property
    def configured(self) -> bool:
        return bool(self.base_url or self.api_key.get_secret_value())


class AgentSettings(Section):
    """The ReAct loop's gates and context limits."""

    max_steps: int = 8
    time_budget_s: float = 90.0
    token_budget: int = 48_000
    max_format_errors: int = 3
    max_args_chars: int = 2_000
    parallel_tools: bool = False
    max_observation_chars: int = 2_500
    keep_recent_steps: int = (
        0  # 0: every step a line, the newest with its result in full (bot/engine/history/memory.py)
    )
    tool_timeout_s: float = 20.0
    max_concurrent_llm_calls: int = 8  # across Slack, the API and the webhook; 0 = no limit


class SlackSettings(Section):
    bot_token: SecretStr = SecretStr("")
    signing_secret: SecretStr = SecretStr("")
    app_token: SecretStr = SecretStr("")  # xapp-...: Socket Mode when set
    api_base_url: HttpUrl = "https://slack.com/api/"
    workers: int = 4
    queue_size: int = 32
    use_streaming: bool = True
    update_interval_s: float = 3.0
    dedupe_ttl_s: int = 900
    alert_channel: str = ""  # where Alertmanager-triggered diagnoses are posted
    quick_workers: int = 8  # the quick lane: triage, help, chit-chat, quick lookups (never behind diagnoses)
    marks_workers: int = 16  # posts 👀, the status and "queued" notices so no lane waits on Slack
    listener_threads: int = 64  # Bolt's listener pool (its default of 5 starves acks under a burst)
    ask_below_confidence: float = 0.6  # an intent below this (or from the default tier) gets Investigate / Just answer
    append_interval_s: float = 1.0  # at most one chat.appendStream per stream this often
    append_per_minute: int = 100  # global budgets under Slack's tiers (appendStream Tier 4, update Tier 3)
    update_per_minute: int = 50
    charts: bool = True  # upload the symptom's chart into the thread after the answer (needs files:write)


class ServerSettings(Section):
    host: str = "127.0.0.1"
    port: Port = 8080
    api_token: SecretStr = SecretStr("")  # bearer token for /api/*; empty disables the API
    threads: int = 8
    api_workers: int = 2  # diagnoses from the HTTP API and Alertmanager run on their own pool
    api_queue_size: int = 16  # waiting runs beyond this get 503
    alert_dedupe_ttl_s: int = 21_600  # a re-sent alert group within this window starts no new run
    sync_wait_s: float = 30.0  # a synchronous /api/diagnose waits this long, then answers 202 with the trace URL
    api_threads: int = 4  # HTTP threads for /api/ and /metrics; Slack events and health checks keep the rest
    shutdown_drain_s: float = 20.0  # on SIGTERM, running diagnoses get this long to finish
    replicas: int = Field(default=1, ge=1)  # how many `opsbot serve` run (the Helm chart sets it); >1 needs Redis
    # and a shared trace store


class AccessSettings(Section):
    """Applied at every entry point: Slack, HTTP API, Alertmanager webhook."""

    allowed_channels: list[str] = Field(default_factory=list)  # empty = every channel
    rate_limit_per_minute: int = 6  # per user


class StoreSettings(Section):
    backend: Literal["sqlite", "elasticsearch"] = "sqlite"
    retention_days: int = 30  # traces older than this are deleted at start and daily; 0 keeps them forever
    sqlite_path: Path = DEFAULT_STATE_DIR / "traces.db"
    index: str = "opsbot-traces"


class RedisSettings(Section):
    """Shared state for several replicas: dedupe, thread memory, rate limits, the durable job stream.

    Empty url keeps everything in process memory (one replica).
    """

    url: SecretStr = SecretStr("")  # redis://host:6379/0; may carry a password
    prefix: str = "opsbot"  # every key starts with this, so replicas of two deployments can share one Redis
    claim_idle_s: float = 30.0  # a running job whose worker has not renewed it for this long is claimed again
    max_attempts: int = 2  # deliveries of one job; past that it is finished as "interrupted: re-run?"


class IntentSettings(Section):
    use_model: bool = True  # ask the cheap model when the learned classifier is unsure
    unsure_below: float = 0.6  # classifier probability below which it is unsure (chosen by cross-validation)
    model_path: Path | None = None  # a retrained classifier artifact; None = the one shipped in the package


class SandboxSettings(Section):
    dir: Path = DEFAULT_STATE_DIR / "sandbox"
    scenario: str = "hikari-pool"
    prometheus_port: Port = 19090
    osmem_port: Port = 19200
