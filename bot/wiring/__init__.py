"""The composition root: the one place that reads Settings and builds clients, tools, LLM, agent and apps.

Every other module receives ready objects and plain limits through its constructor. The package is split by
what is built (core objects, the surfaces, the sandbox) so each part stays readable; callers use
`from bot import wiring` and `wiring.build_x(settings)`, whichever module builds x.

Lazy: each name is imported from its module on first use (module `__getattr__`), so a command loads only what it
builds: `opsbot parse` does not load Elasticsearch, Slack or waitress, and `opsbot classify` without a model does
not load openai either.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names below, for type checkers; at run time __getattr__ imports them on first use
    from bot.config import Settings
    from bot.wiring.basics import (
        build_access,
        build_budget,
        build_classifier,
        build_context_limits,
        build_default_classifier,
        build_llm,
        build_redis,
        install_log_redaction,
        load_settings,
    )
    from bot.wiring.core import (
        build_deploy_source,
        build_es,
        build_log_fields,
        build_log_source,
        build_log_store,
        build_metrics_tools,
        build_playbook,
        build_prometheus,
        build_responder,
        build_store,
        build_telemetry,
        build_tool_specs,
        build_toolbox,
        build_zone,
    )
    from bot.wiring.doctor import (
        CheckResult,
        default_checks,
        run_checks,
    )
    from bot.wiring.mcpsurface import (
        build_served_toolbox,
        serve_mcp,
    )
    from bot.wiring.readiness import (
        build_toolsets,
        toolset_statuses,
    )
    from bot.wiring.sandbox import (
        bring_up_sandbox,
        build_eval_diagnoser,
        build_relay_diagnoser,
        sandbox_overrides,
        take_down_sandbox,
    )
    from bot.wiring.service import (
        SHUTDOWN_DRAIN_S,
        serve_forever,
        slack_health,
    )
    from bot.wiring.stack import (
        StackOptions,
        discover_stack,
        not_inspected,
    )
    from bot.wiring.surfaces import (
        build_api,
        build_dispatcher,
        build_server,
        build_slack_app,
        job_statuses,
    )

_HOMES: dict[str, str] = {
    "SHUTDOWN_DRAIN_S": "service",
    "Settings": "config",
    "StackOptions": "stack",
    "discover_stack": "stack",
    "not_inspected": "stack",
    "CheckResult": "doctor",
    "bring_up_sandbox": "sandbox",
    "build_access": "basics",
    "build_api": "surfaces",
    "build_budget": "basics",
    "build_classifier": "basics",
    "build_context_limits": "basics",
    "build_default_classifier": "basics",
    "build_deploy_source": "core",
    "build_dispatcher": "surfaces",
    "build_es": "core",
    "build_eval_diagnoser": "sandbox",
    "build_relay_diagnoser": "sandbox",
    "build_llm": "basics",
    "build_log_fields": "core",
    "build_log_source": "core",
    "build_log_store": "core",
    "build_metrics_tools": "core",
    "build_playbook": "core",
    "build_prometheus": "core",
    "build_redis": "basics",
    "build_responder": "core",
    "build_served_toolbox": "mcpsurface",
    "build_server": "surfaces",
    "build_slack_app": "surfaces",
    "build_store": "core",
    "build_telemetry": "core",
    "build_tool_specs": "core",
    "build_toolbox": "core",
    "build_toolsets": "readiness",
    "build_zone": "core",
    "default_checks": "doctor",
    "install_log_redaction": "basics",
    "job_statuses": "surfaces",
    "load_settings": "basics",
    "run_checks": "doctor",
    "sandbox_overrides": "sandbox",
    "serve_forever": "service",
    "serve_mcp": "mcpsurface",
    "slack_health": "service",
    "take_down_sandbox": "sandbox",
    "toolset_statuses": "readiness",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = "bot.config" if home == "config" else f"bot.wiring.{home}"  # Settings: pydantic-settings, ~0.3 s
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


__all__ = [
    "SHUTDOWN_DRAIN_S",
    "CheckResult",
    "Settings",
    "StackOptions",
    "bring_up_sandbox",
    "build_access",
    "build_api",
    "build_budget",
    "build_classifier",
    "build_context_limits",
    "build_default_classifier",
    "build_deploy_source",
    "build_dispatcher",
    "build_es",
    "build_eval_diagnoser",
    "build_llm",
    "build_log_fields",
    "build_log_source",
    "build_log_store",
    "build_metrics_tools",
    "build_playbook",
    "build_prometheus",
    "build_redis",
    "build_relay_diagnoser",
    "build_responder",
    "build_served_toolbox",
    "build_server",
    "build_slack_app",
    "build_store",
    "build_telemetry",
    "build_tool_specs",
    "build_toolbox",
    "build_toolsets",
    "build_zone",
    "default_checks",
    "discover_stack",
    "install_log_redaction",
    "job_statuses",
    "load_settings",
    "not_inspected",
    "run_checks",
    "sandbox_overrides",
    "serve_forever",
    "serve_mcp",
    "slack_health",
    "take_down_sandbox",
    "toolset_statuses",
]
