"""The composition root: the one place that reads Settings and builds clients, tools, LLM, agent and apps.

Every other module receives ready objects and plain limits through its constructor. The package is split by
what is built (core objects, the surfaces, the sandbox) so each part stays readable; callers use
`from bot import wiring` and `wiring.build_x(settings)`, whichever module builds x.
"""

from bot.config import Settings
from bot.wiring.core import (
    build_access,
    build_budget,
    build_classifier,
    build_context_limits,
    build_deploy_source,
    build_es,
    build_llm,
    build_log_source,
    build_metrics_tools,
    build_playbook,
    build_prometheus,
    build_responder,
    build_store,
    build_telemetry,
    build_tool_specs,
    build_toolbox,
    install_log_redaction,
    load_settings,
)
from bot.wiring.mcpsurface import build_served_toolbox, serve_mcp
from bot.wiring.readiness import build_toolsets, toolset_statuses
from bot.wiring.sandbox import (
    bring_up_sandbox,
    build_eval_diagnoser,
    sandbox_overrides,
    take_down_sandbox,
)
from bot.wiring.surfaces import (
    SHUTDOWN_DRAIN_S,
    build_api,
    build_server,
    build_slack_app,
    serve_forever,
    slack_health,
)

__all__ = [
    "SHUTDOWN_DRAIN_S",
    "Settings",
    "bring_up_sandbox",
    "build_access",
    "build_api",
    "build_budget",
    "build_classifier",
    "build_context_limits",
    "build_deploy_source",
    "build_es",
    "build_eval_diagnoser",
    "build_llm",
    "build_log_source",
    "build_metrics_tools",
    "build_playbook",
    "build_prometheus",
    "build_responder",
    "build_served_toolbox",
    "build_server",
    "build_slack_app",
    "build_store",
    "build_telemetry",
    "build_tool_specs",
    "build_toolbox",
    "build_toolsets",
    "install_log_redaction",
    "load_settings",
    "sandbox_overrides",
    "serve_forever",
    "serve_mcp",
    "slack_health",
    "take_down_sandbox",
    "toolset_statuses",
]
