"""Every toolset with its prerequisites check: `opsbot toolsets`, and the checks a doctor command can run.

The core toolsets (metrics, logs, deploys) are always on; the optional ones (Kubernetes, runbooks, each MCP
server) come from bot/wiring/toolsets.py. A check asks its backend one cheap question and reports one line.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from bot.config import Settings
from bot.wiring.core import build_deploy_source, build_log_source, build_metrics_tools, build_prometheus
from bot.wiring.toolsets import optional_toolsets
from tools.base import ToolError
from tools.logs.loki import LokiLogs
from tools.toolset import CheckWarning, Toolset, ToolsetStatus


def build_toolsets(settings: Settings) -> list[Toolset]:
    """metrics, logs, deploys, then the optional toolsets; specs are built by build_tool_specs, not here."""
    return [
        Toolset("metrics", True, list, lambda: _probe_metrics(settings)),
        Toolset("logs", True, list, lambda: _probe_logs(settings)),
        Toolset("deploys", True, list, lambda: _probe_deploys(settings)),
        *optional_toolsets(settings),
    ]


def toolset_statuses(settings: Settings, *, timeout_s: float = 30.0) -> list[ToolsetStatus]:
    """Each toolset's check, run side by side; one that does not finish in time is "fail: no answer"."""
    toolsets = build_toolsets(settings)
    pool = ThreadPoolExecutor(max_workers=max(1, len(toolsets)), thread_name_prefix="check")
    futures = [pool.submit(t.check) for t in toolsets]
    statuses = []
    for toolset, future in zip(toolsets, futures, strict=True):
        try:
            statuses.append(future.result(timeout=timeout_s))
        except TimeoutError:
            statuses.append(ToolsetStatus(toolset.name, "fail", f"no answer within {timeout_s:g} s"))
    pool.shutdown(wait=False, cancel_futures=True)  # a hung check must not hold up the answer
    return statuses


def _probe_metrics(settings: Settings) -> str:
    """Prometheus answers with services, and every catalogue template parses (`opsbot doctor` checks each query)."""
    p = settings.prometheus
    broken = build_metrics_tools(settings).problems
    if broken:
        path, problems = next(iter(broken.items()))
        more = f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""
        raise ToolError(f"the catalogue's template {path} is broken: {problems[0]}{more}")
    services = build_prometheus(settings).label_values(p.service_label)
    if not services:
        raise CheckWarning(f"Prometheus at {p.url} answers but no series has the label {p.service_label!r}")
    return f"Prometheus at {p.url}: {len(services)} services, {len(p.metrics)} catalogue metrics"


def _probe_logs(settings: Settings) -> str:
    source = build_log_source(settings)
    if isinstance(source, LokiLogs):
        return source.check()
    services = source.services()
    if not services:
        raise CheckWarning(f"{source.describe()} holds no logs yet")
    return f"{source.describe()}: {len(services)} services"


def _probe_deploys(settings: Settings) -> str:
    source = build_deploy_source(settings)
    services = source.services()
    if not services:
        raise CheckWarning(f"{source.describe()} records no deploys yet")
    return f"{source.describe()}: {len(services)} services with deploys"
