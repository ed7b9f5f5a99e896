"""The doctor's meaning checks: each family proves its settings against live data and returns Findings; here they
become doctor lines that name the setting, where its value came from (the file and key, or the variable), the
value, and what does not hold, with a "did you mean". A family that cannot be checked says "not checked". What
holds but would leave answers short (a default the stack does not fill, a histogram that caps its quantile) is a
WARN line of the same shape, with the fix. Aliases are checked here too: each names one service.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from bot.config import Settings
from bot.config.provenance import dotenv_entries, environment, origin_of, origins
from bot.wiring.core import build_deploy_source, build_log_source, build_metrics_tools
from bot.wiring.doctor import CheckResult
from tools.base import ToolError
from tools.discovery import Finding, setting_parts

MAX_SAMPLED_SERVICES = 20  # with no topology and no per-service settings, this many of Prometheus' services
MAX_VALUE_CHARS = 100
MAX_OK_CHARS = 400


def meaning_checks() -> list[Callable[[Settings], list[CheckResult]]]:
    """Each family's check of what its settings mean, in the order doctor prints them."""
    return [check_metrics_meaning, check_logs_meaning, check_deploys_meaning, check_aliases, check_topology]


NO_TOPOLOGY = (
    "topology is not set (OPSBOT_TOPOLOGY, or a [topology] table in the config file: each service with the "
    "services it calls, web = ['order', 'inventory']): a caller's question cannot weigh its dependencies' "
    "deploys, and a symptom is not followed to the dependency it comes from"
)


def check_topology(settings: Settings) -> list[CheckResult]:
    """No topology is a warning with what it costs; nothing in the stack tells which service calls which."""
    if settings.topology:
        return [CheckResult("topology", "ok", f"{len(settings.topology)} services with their dependencies")]
    return [CheckResult("topology", "warn", NO_TOPOLOGY)]


def services_to_check(settings: Settings, known: Callable[[], list[str]]) -> tuple[list[str], str]:
    """The topology's services and those with their own metric settings; with no topology, the services Prometheus
    holds (at most MAX_SAMPLED_SERVICES). Returns them and how they were chosen, in words."""
    own = list(settings.prometheus.services)
    if settings.topology:
        named = [*settings.topology, *(d for ds in settings.topology.values() for d in ds), *own]
        return list(dict.fromkeys(named)), "the services the topology names"
    found = known()
    chosen = list(dict.fromkeys([*own, *found]))[:MAX_SAMPLED_SERVICES]
    return chosen, f"{len(chosen)} of the {len(found)} services Prometheus holds (no topology is configured)"


def check_metrics_meaning(settings: Settings) -> list[CheckResult]:
    """Every catalogue query of every service returns data, or the missing label value is named."""
    from tools.metrics.checks import check_metrics

    tools = build_metrics_tools(settings)
    try:
        services, chosen = services_to_check(settings, tools.known_services)
        up = settings.prometheus.up_metric
        findings = check_metrics(
            tools, services, datetime.now(UTC), up, "prometheus.up_metric" in set_by_user(settings)
        )
    except ToolError as exc:
        return [CheckResult("metrics", "warn", f"not checked: {exc}")]
    return results_from_findings("metrics", findings, settings, f"{chosen}: ")


def check_logs_meaning(settings: Settings) -> list[CheckResult]:
    """The log fields exist in the mapping and hold values, the level values match (tools/logs/checks.py)."""
    from tools.logs.checks import check_logs

    services, chosen = _named_or_metric_services(settings)
    found = check_logs(build_log_source(settings), services, set_by_user(settings))
    return results_from_findings("logs", found, settings, f"{chosen}: ")


def check_deploys_meaning(settings: Settings) -> list[CheckResult]:
    """The deploy source yields deploys of each service, and its patterns match (tools/deploys/discovery.py)."""
    from tools.deploys.discovery import check_deploys

    services, chosen = _named_or_metric_services(settings)
    try:
        checked = check_deploys(build_deploy_source(settings), services, datetime.now(UTC))
    except ToolError as exc:
        return [CheckResult("deploys", "warn", f"not checked: {exc}")]
    findings = [
        Finding(f.setting, f.value, f.evidence, () if f.ok else (f.evidence + _suggested(f.suggestion),))
        for f in checked
    ]
    return results_from_findings("deploys", findings, settings, f"{chosen}: ")


def set_by_user(settings: Settings) -> set[str]:
    """The logs and prometheus settings not left at their defaults ("logs.host_field"): an optional one the user set
    must hold; a default one that does not is only a warning."""
    claims = origins(environment(), dotenv_entries(), settings.config_file)
    sections = {"logs": settings.logs.model_dump(), "prometheus": settings.prometheus.model_dump()}
    return {
        f"{section}.{key}"
        for section, values in sections.items()
        for key in values
        if origin_of((section, key), claims) != "default"
    }


def check_aliases(settings: Settings) -> list[CheckResult]:
    """Each alias names one service, and no alias is another service's own name (tools/servicenames.py)."""
    from tools.servicenames import alias_problems

    if not settings.aliases:
        return []
    services, _ = _named_or_metric_services(settings)
    everyone = list(dict.fromkeys([*services, *settings.aliases]))
    problems = alias_problems(settings.aliases, everyone)
    unknown = [s for s in settings.aliases if s not in services]
    warnings = tuple(f"{s!r} has aliases but is not among {_short(services)}" for s in unknown) if services else ()
    evidence = f"{sum(map(len, settings.aliases.values()))} aliases of {len(settings.aliases)} services"
    finding = Finding("aliases", settings.aliases, evidence, tuple(problems), warnings)
    return results_from_findings("aliases", [finding], settings)


def _short(services: Sequence[str]) -> str:
    return f"the services checked ({', '.join(services[:6])}{', …' if len(services) > 6 else ''})"


def _suggested(suggestion: str) -> str:
    return f" (did you mean {suggestion!r}?)" if suggestion else ""


def _named_or_metric_services(settings: Settings) -> tuple[list[str], str]:
    """The services the logs and deploys must cover: the topology's, else those the metrics know (when Prometheus
    answers), so each family is checked for the same services."""
    try:
        return services_to_check(settings, build_metrics_tools(settings).known_services)
    except ToolError:
        return list(settings.topology), "the services the topology names"


def results_from_findings(
    family: str, findings: Sequence[Finding], settings: Settings, scope: str = ""
) -> list[CheckResult]:
    """A FAIL line per problem (the setting, its source, its value, the problem); one OK line when none."""
    claims = origins(environment(), dotenv_entries(), settings.config_file)
    failed, warned = [], []
    for finding in findings:
        path = tuple(setting_parts(finding.setting))
        source = origin_of(path, claims) if path else "default"
        named = f"{finding.setting} = {finding.value!r:.{MAX_VALUE_CHARS}} ({source})"
        failed += [CheckResult(family, "fail", f"{named}: {problem}") for problem in finding.problems]
        warned += [CheckResult(family, "warn", f"{named}: {warning}") for warning in finding.warnings]
    warned = list({str(result): result for result in warned}.values())
    if failed:  # one line per problem, however many services showed it
        return list({str(result): result for result in failed}.values()) + warned
    if family == "metrics":  # each finding is one service's queries
        held = "; ".join(f.evidence for f in findings if f.evidence)
    else:
        held = ", ".join(dict.fromkeys(f.setting for f in findings if f.setting and not f.warnings)) + " hold"
    return [CheckResult(family, "ok", f"{scope}{held or 'nothing to check'}"[:MAX_OK_CHARS]), *warned]
