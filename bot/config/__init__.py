"""All configuration in one Settings class (env prefix OPSBOT_, nested sections with "__").

This package is a leaf: it imports nothing else from the project. Only bot/wiring/ and bot/cli/ read it.
Every field is documented in deploy/.env.example (tests/test_config.py keeps the two in step). The sections live in
service.py (how opsbot runs), backends.py, deploys.py and database.py (what it reads); the sources beyond
pydantic-settings' in sources.py.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from bot.config.backends import (
    ElasticsearchSettings,
    KubernetesSettings,
    LogsSettings,
    LokiSettings,
    MCPServerSettings,
    MCPSettings,
    MetricTemplate,
    PrometheusSettings,
    RunbooksSettings,
    ServiceMetricsSettings,
    default_metric_catalogue,
)
from bot.config.database import DatabaseSettings, DatabaseTarget
from bot.config.deploys import ArgoCDDeploysSettings, DeploysSettings, GitHubDeploysSettings
from bot.config.section import DEFAULT_STATE_DIR
from bot.config.service import (
    AccessSettings,
    AgentSettings,
    IntentSettings,
    LLMSettings,
    RedisSettings,
    SandboxSettings,
    ServerSettings,
    SlackSettings,
    StoreSettings,
)
from bot.config.sources import ConfigFileSource, OpenAIEnvSource, config_file_path

__all__ = [
    "DEFAULT_STATE_DIR",
    "AccessSettings",
    "AgentSettings",
    "ArgoCDDeploysSettings",
    "DatabaseSettings",
    "DatabaseTarget",
    "DeploysSettings",
    "ElasticsearchSettings",
    "GitHubDeploysSettings",
    "IntentSettings",
    "KubernetesSettings",
    "LLMSettings",
    "LogsSettings",
    "LokiSettings",
    "MCPServerSettings",
    "MCPSettings",
    "MetricTemplate",
    "PrometheusSettings",
    "RedisSettings",
    "RunbooksSettings",
    "SandboxSettings",
    "ServerSettings",
    "ServiceMetricsSettings",
    "Settings",
    "SlackSettings",
    "StoreSettings",
    "default_metric_catalogue",
]


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
    # service -> the names people call it ("orders" for orders-v2); the answer names every such reading
    aliases: dict[str, list[str]] = Field(default_factory=dict)
    # also read "checkout" as the one service checkout-api (tools/servicenames.py says when); off: a question's word
    # is then taken for a service nobody named ("awaiting label" as label-service)
    guess_service_names: bool = False
    # The team's time zone: a question's time without a zone is read in it, and answers show times in it with UTC
    # beside them. An IANA name (Europe/Berlin), UTC+8 or an abbreviation (CET); checked where it is used (wiring).
    timezone: str = "UTC"
    slack: SlackSettings = Field(default_factory=SlackSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    access: AccessSettings = Field(default_factory=AccessSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    redis: RedisSettings = Field(default_factory=RedisSettings)
    intent: IntentSettings = Field(default_factory=IntentSettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    config_file: Path | None = None  # a TOML file read below the environment (OPSBOT_CONFIG_FILE)
    # toolsets beyond metrics, logs and deploys (bot/wiring/toolsets.py)
    kubernetes: KubernetesSettings = Field(default_factory=KubernetesSettings)
    loki: LokiSettings = Field(default_factory=LokiSettings)
    runbooks: RunbooksSettings = Field(default_factory=RunbooksSettings)
    mcp: MCPSettings = Field(default_factory=MCPSettings)
    database: DatabaseSettings = Field(default_factory=DatabaseSettings)

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
        config_file = ConfigFileSource(settings_cls, config_file_path(init_settings, env_settings, dotenv_settings))
        return (
            init_settings,
            env_settings,
            dotenv_settings,
            OpenAIEnvSource(settings_cls),
            config_file,
            file_secret_settings,
        )
