"""All configuration in one Settings class (env prefix OPSBOT_, nested sections with "__").

This module is a leaf: it imports nothing from the project. Only bot/wiring/ and bot/cli/ read it.
Every field is documented in deploy/.env.example (tests/test_config.py keeps the two in step).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, SecretStr
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

DEFAULT_STATE_DIR = Path(os.environ.get("XDG_STATE_HOME", Path.home() / ".local" / "state")) / "opsbot"


class LLMSettings(BaseModel):
    """Any OpenAI-compatible endpoint. Empty base_url and api_key means: no LLM, use the playbook."""

    base_url: str = ""
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


class AgentSettings(BaseModel):
    """The ReAct loop's gates and context limits."""

    max_steps: int = 8
    time_budget_s: float = 90.0
    token_budget: int = 32_000
    max_format_errors: int = 3
    max_args_chars: int = 2_000
    parallel_tools: bool = False
    max_observation_chars: int = 2_500
    keep_recent_steps: int = (
        0  # 0: every step a line, the newest with its result in full (bot/engine/history/memory.py)
    )
    tool_timeout_s: float = 20.0
    max_concurrent_llm_calls: int = 8  # across Slack, the API and the webhook; 0 = no limit


class MetricTemplate(BaseModel):
    """One PromQL template of the metric catalogue.

    `$label` and `$service` are substituted (string.Template) with the service label name and a service
    name that has already been checked against the label values Prometheus holds.
    """

    promql: str
    unit: Literal["s", "ms", "ratio", "rps", "cores", "bytes", "count"]
    description: str = ""
    # What the model-free playbook reads this metric as (the first entry with a role wins); "" = none.
    role: Literal["latency", "errors", "traffic", "cpu", "memory", "restarts", ""] = ""


def default_metric_catalogue() -> dict[str, MetricTemplate]:
    sel = '$label="$service"'
    return {
        "p99_latency": MetricTemplate(
            promql=f"histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{{{sel}}}[5m])))",
            unit="s",
            description="99th percentile request latency",
            role="latency",
        ),
        "qps": MetricTemplate(
            promql=f"sum(rate(http_requests_total{{{sel}}}[5m]))",
            unit="rps",
            description="requests per second",
            role="traffic",
        ),
        "error_rate": MetricTemplate(
            promql=(
                f'sum(rate(http_requests_total{{{sel},status=~"5.."}}[5m]))'
                f" / sum(rate(http_requests_total{{{sel}}}[5m]))"
            ),
            unit="ratio",
            description="share of requests answered 5xx",
            role="errors",
        ),
        "cpu_usage": MetricTemplate(
            promql=f"sum(rate(process_cpu_seconds_total{{{sel}}}[5m]))",
            unit="cores",
            description="CPU cores in use",
            role="cpu",
        ),
    }


class PrometheusSettings(BaseModel):
    url: str = "http://127.0.0.1:19090"
    timeout_s: float = 10.0
    verify_tls: bool = True
    bearer_token: SecretStr = SecretStr("")
    service_label: str = "service"
    max_points: int = 288
    # A series that stopped: Prometheus' own scrape-health metric, read per service ("" = do not read it)...
    up_metric: str = "up"
    # ...and the share of the other services whose series of the same metric ended at the same step that makes
    # it a gap in collection rather than this service stopping.
    collection_gap_share: float = Field(default=0.8, gt=0.0, le=1.0)
    metrics: dict[str, MetricTemplate] = Field(default_factory=default_metric_catalogue)


class ElasticsearchSettings(BaseModel):
    """One Elasticsearch connection, shared by the logs, deploys and trace-store backends that use it."""

    url: str = ""
    api_key: SecretStr = SecretStr("")
    username: str = ""
    password: SecretStr = SecretStr("")
    verify_certs: bool = True
    timeout_s: float = 10.0
    plain_json: bool = False  # send application/json instead of the compat media type (OpenSearch, osmem)


class LogsSettings(BaseModel):
    backend: Literal["sqlite", "elasticsearch", "loki"] = "sqlite"
    sqlite_path: Path = DEFAULT_STATE_DIR / "logs.db"
    index_pattern: str = "logs-*"
    timestamp_field: str = "@timestamp"
    service_field: str = "service"
    level_field: str = "level"
    message_field: str = "message"
    stack_field: str = "stack_trace"
    trace_field: str = "trace_id"
    logger_field: str = "logger"
    host_field: str = "host"
    default_limit: int = 100
    max_limit: int = 1_000


class DeploysSettings(BaseModel):
    backend: Literal["git", "elasticsearch", "kubernetes"] = "git"
    git_repo: Path = DEFAULT_STATE_DIR / "deploys.git"
    tag_pattern: str = "{service}/{version}"
    service_path: str = "services/{service}"
    index: str = "deploys"
    # Field names in the deploy-events index (a dotted name reads a nested object); service/version are keywords.
    timestamp_field: str = "@timestamp"
    service_field: str = "service"
    version_field: str = "version"
    previous_version_field: str = "previous_version"
    author_field: str = "author"
    commit_field: str = "commit"
    summary_field: str = "summary"
    diff_field: str = "diff"
    max_diff_chars: int = 6_000


class SlackSettings(BaseModel):
    bot_token: SecretStr = SecretStr("")
    signing_secret: SecretStr = SecretStr("")
    app_token: SecretStr = SecretStr("")  # xapp-...: Socket Mode when set
    api_base_url: str = "https://slack.com/api/"
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


class ServerSettings(BaseModel):
    host: str = "127.0.0.1"
    port: int = 8080
    api_token: SecretStr = SecretStr("")  # bearer token for /api/*; empty disables the API
    threads: int = 8
    api_workers: int = 2  # diagnoses from the HTTP API and Alertmanager run on their own pool
    api_queue_size: int = 16  # waiting runs beyond this get 503
    alert_dedupe_ttl_s: int = 21_600  # a re-sent alert group within this window starts no new run
    sync_wait_s: float = 30.0  # a synchronous /api/diagnose waits this long, then answers 202 with the trace URL
    api_threads: int = 4  # HTTP threads for /api/ and /metrics; Slack events and health checks keep the rest
    shutdown_drain_s: float = 20.0  # on SIGTERM, running diagnoses get this long to finish


class AccessSettings(BaseModel):
    """Applied at every entry point: Slack, HTTP API, Alertmanager webhook."""

    allowed_channels: list[str] = Field(default_factory=list)  # empty = every channel
    rate_limit_per_minute: int = 6  # per user


class StoreSettings(BaseModel):
    backend: Literal["sqlite", "elasticsearch"] = "sqlite"
    retention_days: int = 30  # traces older than this are deleted at start and daily; 0 keeps them forever
    sqlite_path: Path = DEFAULT_STATE_DIR / "traces.db"
    index: str = "opsbot-traces"


class RedisSettings(BaseModel):
    """Shared state for several replicas: dedupe, thread memory, rate limits, the durable job stream.

    Empty url keeps everything in process memory (one replica).
    """

    url: SecretStr = SecretStr("")  # redis://host:6379/0; may carry a password
    prefix: str = "opsbot"  # every key starts with this, so replicas of two deployments can share one Redis
    claim_idle_s: float = 30.0  # a running job whose worker has not renewed it for this long is claimed again
    max_attempts: int = 2  # deliveries of one job; past that it is finished as "interrupted: re-run?"


class IntentSettings(BaseModel):
    use_model: bool = True  # ask the cheap model when the learned classifier is unsure
    unsure_below: float = 0.6  # classifier probability below which it is unsure (chosen by cross-validation)
    model_path: Path | None = None  # a retrained classifier artifact; None = the one shipped in the package


class SandboxSettings(BaseModel):
    dir: Path = DEFAULT_STATE_DIR / "sandbox"
    scenario: str = "hikari-pool"
    prometheus_port: int = 19090
    osmem_port: int = 19200


class KubernetesSettings(BaseModel):
    """Read-only Kubernetes: pods, events and rollout history, only in the allowed namespaces."""

    enabled: bool = False
    kubeconfig: str = ""  # empty = the client's default (~/.kube/config or $KUBECONFIG)
    context: str = ""  # empty = the kubeconfig's current context
    in_cluster: bool = False  # use the pod's ServiceAccount instead of a kubeconfig
    namespaces: list[str] = Field(default_factory=lambda: ["default"])
    service_label: str = "app"  # the pod label that names a service
    timeout_s: float = 10.0
    max_events: int = 30
    max_pods: int = 40


class LokiSettings(BaseModel):
    """Grafana Loki, read through its HTTP API when logs.backend is "loki"."""

    url: str = ""
    tenant: str = ""  # X-Scope-OrgID for multi-tenant Loki
    bearer_token: SecretStr = SecretStr("")
    timeout_s: float = 10.0
    service_label: str = "service"  # the stream label that names a service
    level_label: str = "level"  # the stream label that holds the level


class RunbooksSettings(BaseModel):
    """Markdown runbooks in a folder or a git repository, searched with SQLite FTS5 (search_runbooks)."""

    enabled: bool = False
    path: Path = DEFAULT_STATE_DIR / "runbooks"
    git_ref: str = "HEAD"  # read at this ref when path is a git repository
    max_results: int = 3
    max_section_chars: int = 1_200


class MCPServerSettings(BaseModel):
    """One external MCP server whose allowed tools are mounted as opsbot tools named <name>_<tool>."""

    name: str
    transport: Literal["stdio", "http"] = "stdio"
    command: str = ""  # stdio: the program to start
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    url: str = ""  # http: the streamable HTTP endpoint, e.g. http://host:8000/mcp
    allowed_tools: list[str] = Field(default_factory=list)  # tool names to mount; ["*"] = all; empty = none
    timeout_s: float = 20.0
    max_output_chars: int = 4_000


class MCPSettings(BaseModel):
    """MCP both ways: servers whose tools opsbot mounts, and which own tools `opsbot mcp` serves."""

    servers: list[MCPServerSettings] = Field(default_factory=list)
    serve_tools: list[str] = Field(default_factory=list)  # empty = every opsbot tool


class Settings(BaseSettings):
    """opsbot's whole configuration. Nested sections read from OPSBOT_<SECTION>__<FIELD>."""

    model_config = SettingsConfigDict(
        env_prefix="OPSBOT_",
        env_nested_delimiter="__",
        env_file=".env",
        extra="ignore",
    )

    log_level: str = "INFO"
    llm: LLMSettings = Field(default_factory=LLMSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    prometheus: PrometheusSettings = Field(default_factory=PrometheusSettings)
    elasticsearch: ElasticsearchSettings = Field(default_factory=ElasticsearchSettings)
    logs: LogsSettings = Field(default_factory=LogsSettings)
    deploys: DeploysSettings = Field(default_factory=DeploysSettings)
    topology: dict[str, list[str]] = Field(default_factory=dict)  # service -> downstream services
    slack: SlackSettings = Field(default_factory=SlackSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    access: AccessSettings = Field(default_factory=AccessSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    redis: RedisSettings = Field(default_factory=RedisSettings)
    intent: IntentSettings = Field(default_factory=IntentSettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    # toolsets beyond metrics, logs and deploys (see TOOLSETS below)
    config_file: Path | None = None  # a TOML file read below the environment (OPSBOT_CONFIG_FILE)
    kubernetes: KubernetesSettings = Field(default_factory=KubernetesSettings)
    loki: LokiSettings = Field(default_factory=LokiSettings)
    runbooks: RunbooksSettings = Field(default_factory=RunbooksSettings)
    mcp: MCPSettings = Field(default_factory=MCPSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The standard OPENAI_* variables rank below every OPSBOT_ source; the config file below every variable.
        config_file = ConfigFileSource(settings_cls, init_settings)
        return (
            init_settings,
            env_settings,
            dotenv_settings,
            OpenAIEnvSource(settings_cls),
            config_file,
            file_secret_settings,
        )


class OpenAIEnvSource(PydanticBaseSettingsSource):
    """Honours OPENAI_API_KEY and OPENAI_BASE_URL, the variables every OpenAI-compatible tool reads."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        llm = {
            key: os.environ[env]
            for key, env in (("api_key", "OPENAI_API_KEY"), ("base_url", "OPENAI_BASE_URL"))
            if os.environ.get(env)
        }
        return {"llm": llm} if llm else {}


class ConfigFileSource(PydanticBaseSettingsSource):
    """A TOML file named by OPSBOT_CONFIG_FILE (or Settings(config_file=...)): sections as tables, e.g.
    `[prometheus.metrics.p99_latency]`, `topology = {...}`, `[kubernetes]`, `[[mcp.servers]]`."""

    def __init__(self, settings_cls: type[BaseSettings], init: PydanticBaseSettingsSource) -> None:
        super().__init__(settings_cls)
        named = getattr(init, "init_kwargs", {}).get("config_file") or os.environ.get("OPSBOT_CONFIG_FILE", "")
        self.path = Path(named).expanduser() if named else None

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        if self.path is None:
            return {}
        if not self.path.is_file():
            raise FileNotFoundError(f"OPSBOT_CONFIG_FILE names {self.path}, which is not a file")
        import tomllib  # its patterns compile on import: only when a config file is named

        with self.path.open("rb") as handle:
            return {**tomllib.load(handle), "config_file": self.path}
