"""`opsbot init`: inspect a team's stack, one backend family at a time, and return what each found.

Each family has one discovery function returning Findings (tools/discovery.py): metrics from Prometheus, logs
from Elasticsearch or Loki, deploys from a git repository or a deploy index. What the command line names is a
finding too (its evidence: "given"), so the file says where every value came from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bot.config import Settings
from bot.wiring.core import build_es, build_prometheus
from bot.wiring.toolsets import build_loki_logs
from tools.base import ToolError
from tools.discovery import Finding

GIVEN = "given on the command line"


@dataclass(frozen=True)
class StackOptions:
    """What `opsbot init` was pointed at."""

    prometheus: str
    elasticsearch: str = ""
    loki: str = ""
    deploys_git: Path | None = None
    deploys_index: str = ""


def settings_for(settings: Settings, options: StackOptions) -> Settings:
    """The settings init asks the stack with: the given URLs, and the credentials the environment holds."""
    update: dict[str, object] = {"prometheus": settings.prometheus.model_copy(update={"url": options.prometheus})}
    if options.elasticsearch:
        update["elasticsearch"] = settings.elasticsearch.model_copy(update={"url": options.elasticsearch})
    if options.loki:
        update["loki"] = settings.loki.model_copy(update={"url": options.loki})
    return settings.model_copy(update=update)


def discover_stack(settings: Settings, options: StackOptions, now: datetime | None = None) -> list[Finding]:
    """Every family's findings, in the order the config file lists them."""
    settings = settings_for(settings, options)
    moment = now or datetime.now(UTC)
    found = [*_metrics(settings, options, moment), *_logs(settings, options), *_deploys(settings, options)]
    return [*found, _topology(settings)]


def _topology(settings: Settings) -> Finding:
    """Which service calls which is not in what init reads: said, with what the playbook does without it."""
    if settings.topology:
        return Finding("topology", settings.topology, "set in the environment when init ran")
    return Finding("topology", None, "", (NO_TOPOLOGY,))


NO_TOPOLOGY = (
    "not discovered (nothing init reads says which service calls which): set it, each service with the services "
    "it calls (web = ['order', 'inventory']); without it diagnose does not follow a symptom to a dependency and "
    "names other services' deploys without weighing them"
)


def _metrics(settings: Settings, options: StackOptions, now: datetime) -> list[Finding]:
    from tools.metrics.discovery import discover_metrics

    try:
        return discover_metrics(build_prometheus(settings), now, options.prometheus)
    except ToolError as exc:  # unreachable, or not Prometheus: nothing else can be learnt from it
        return [Finding("prometheus.url", None, options.prometheus, (str(exc),))]


def _logs(settings: Settings, options: StackOptions) -> list[Finding]:
    """Elasticsearch or Loki (tools/logs/discovery.py): the backend, the index pattern, every field and the levels."""
    from tools.logs.discovery import discover_logs, discover_loki_logs

    if options.elasticsearch:
        given = [Finding("elasticsearch.url", options.elasticsearch, GIVEN)]
        if settings.elasticsearch.plain_json:  # the connection init needed (OpenSearch and its kin) is kept
            given.append(Finding("elasticsearch.plain_json", True, "set in the environment when init ran"))
        return [*given, *_asked(lambda: discover_logs(build_es(settings)), "logs.backend")]
    if options.loki:
        given = [Finding("loki.url", options.loki, GIVEN)]
        return [*given, *_asked(lambda: discover_loki_logs(build_loki_logs(settings)), "logs.backend")]
    return [Finding("logs.backend", None, "", ("no --elasticsearch or --loki given: logs were not looked at",))]


def _deploys(settings: Settings, options: StackOptions) -> list[Finding]:
    """A repository or a deploy index (tools/deploys/discovery.py): the source, its layout, tags and environments."""
    from tools.deploys.discovery import discover_deploys

    if options.deploys_git is None and not options.deploys_index:
        unasked = "no --deploys-git or --deploys-index given: deploys were not looked at"
        return [Finding("deploys.source", None, "", (unasked,))]
    repo = options.deploys_git.expanduser().resolve() if options.deploys_git is not None else None
    es = build_es(settings) if options.deploys_index and settings.elasticsearch.url else None
    found = discover_deploys(repo, es, options.deploys_index)
    evidence: dict[str, list[str]] = {}
    problems = []
    for item in found.findings:
        if item.ok:
            evidence.setdefault(item.setting, []).append(item.evidence)
        else:
            hint = f" (did you mean {item.suggestion!r}?)" if item.suggestion else ""
            problems.append(Finding(item.setting, None, "", (f"{item.evidence}{hint}",)))
    chosen = [
        Finding(f"deploys.{name}", value, "; ".join(evidence.get(f"deploys.{name}", [])) or GIVEN)
        for name, value in found.settings.items()
    ]
    return [*chosen, *problems, *(Finding("deploys", None, "", (m,)) for m in found.missing)]


NOT_INSPECTED = "could not be inspected"
# OpenSearch and its kin answer the Elasticsearch client's compatibility media type with 406 Not Acceptable
PLAIN_JSON_HINT = (
    "the server refused the Elasticsearch client's compatibility headers (406): an OpenSearch-compatible server "
    "needs OPSBOT_ELASTICSEARCH__PLAIN_JSON=true (elasticsearch.plain_json); set it and run init again"
)


def _asked(discover: Callable[[], list[Finding]], setting: str) -> list[Finding]:
    """A family's findings; a backend that does not answer is one finding that says so (and, for a server that
    refuses the compatibility headers, names the setting that fixes it)."""
    try:
        return discover()
    except Exception as exc:  # the stack's answer, whatever its kind, is reported, never a traceback
        problem = f"{NOT_INSPECTED}: {type(exc).__name__}: {exc}"
        if _refused_media_type(exc):
            problem = f"{problem}; {PLAIN_JSON_HINT}"
        return [Finding(setting, None, "", (problem,))]


def _refused_media_type(exc: Exception) -> bool:
    """406 from the search server: its status as the client reports it, or in the message of a wrapped error."""
    status = getattr(exc, "status_code", None) or getattr(getattr(exc, "meta", None), "status", None)
    return status == 406 or "406" in str(exc)


def not_inspected(findings: list[Finding]) -> list[str]:
    """One line per backend init was pointed at and could not inspect (init then exits non-zero)."""
    return [f"{f.setting}: {p}" for f in findings for p in f.problems if p.startswith(NOT_INSPECTED)]
