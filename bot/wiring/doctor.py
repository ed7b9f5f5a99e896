"""`opsbot doctor`: named checks of the settings and each backend, one line each, ok / warn / fail.

A check is a function of Settings that returns a CheckResult. `default_checks()` lists them in order; other
parts (toolset prerequisites, for one) extend that list with checks of their own. A backend that does not
answer is a warning (it may come up later); one that answers as something else than configured, or a setting
that cannot work, is a failure, and `serve` refuses to start on a failure.
"""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import requests
import urllib3

from bot.config import Settings

log = logging.getLogger(__name__)

Level = Literal["ok", "warn", "fail"]
PROBE_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class CheckResult:
    name: str
    level: Level
    line: str  # one line that names the setting to look at

    def __str__(self) -> str:
        return f"{self.level.upper():4} {self.name}: {self.line}"


Check = Callable[[Settings], "CheckResult | list[CheckResult]"]


def run_checks(settings: Settings, checks: Sequence[Check] | None = None) -> list[CheckResult]:
    """Every check's result (a meaning check gives one per problem); a check that raises is a failure of that
    check, never a traceback."""
    results: list[CheckResult] = []
    for check in checks if checks is not None else default_checks():
        try:
            found = check(settings)
            results += found if isinstance(found, list) else [found]
        except Exception as exc:
            name = getattr(check, "__name__", "check").removeprefix("check_")
            results.append(CheckResult(name, "fail", f"the check itself failed: {type(exc).__name__}: {exc}"))
    return results


def named(settings: Settings, setting: str, value: object) -> str:
    """A setting and its value as its source names it: `OPSBOT_X__Y=value` when the environment set it, else
    `x.y = 'value' (config file F [x] y)` or `(default)`, so the reader fixes the right place."""
    from bot.config.provenance import dotenv_entries, environment, origin_of, origins, variable_name

    path = tuple(setting.split("."))
    where = origin_of(path, origins(environment(), dotenv_entries(), settings.config_file))
    if where.startswith(("environment variable", ".env entry")):
        return f"{where.rsplit(' ', 1)[-1]}={value}"
    return f"{setting} = {str(value)!r} ({where})" if where != "default" else f"{variable_name(path)}={value} (default)"


def default_checks() -> list[Check]:
    """The startup checks `serve` runs: the settings and each backend's reachability. `opsbot doctor` adds the
    meaning checks (bot/wiring/meaning.py), which prove the settings against live data."""
    from bot.wiring.startup import check_replicas  # with serve's start-up checks (it imports CheckResult from here)

    return [
        check_prometheus,
        check_elasticsearch,
        check_logs,
        check_deploys,
        check_llm,
        check_redis,
        check_replicas,
        check_slack,
        check_timezone,
        check_optional_toolsets,
        check_runbook_tools,
    ]


def check_prometheus(settings: Settings) -> CheckResult:
    """Asks as the metrics tools do (bearer token, TLS verification), so a Prometheus behind auth is not a failure."""
    p = settings.prometheus
    url, token = p.url.rstrip("/"), p.bearer_token.get_secret_value()
    auth = {"Authorization": f"Bearer {token}"} if token else None
    if not p.verify_tls:  # asked for, as the metrics tools' client takes it: no warning on every request
        urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
    body = _get_json(f"{url}/api/v1/status/buildinfo", headers=auth, verify=p.verify_tls)
    if isinstance(body, str):
        return CheckResult(
            "prometheus",
            "warn" if body.startswith("unreachable") else "fail",
            f"{named(settings, 'prometheus.url', url)}: {body}",
        )
    version = (body.get("data") or {}).get("version") if body.get("status") == "success" else None
    if not version:
        return CheckResult(
            "prometheus", "fail", f"{named(settings, 'prometheus.url', url)} answers, but not like Prometheus"
        )
    return CheckResult("prometheus", "ok", f"Prometheus {version} at {url}")


def check_elasticsearch(settings: Settings) -> CheckResult:
    used = [
        name
        for name, backend in (
            ("logs", settings.logs.backend),
            ("deploys", "elasticsearch" if settings.deploys.source == "index" else settings.deploys.source),
            ("store", settings.store.backend),
        )
        if backend == "elasticsearch"
    ]
    url = settings.elasticsearch.url.rstrip("/")
    if not used:
        return CheckResult("elasticsearch", "ok", "not used")
    if not url:
        return CheckResult("elasticsearch", "fail", f"OPSBOT_ELASTICSEARCH__URL is empty but {', '.join(used)} use it")
    body = _get_json(url, auth=_es_auth(settings))
    if isinstance(body, str):
        return CheckResult(
            "elasticsearch",
            "warn" if body.startswith("unreachable") else "fail",
            f"{named(settings, 'elasticsearch.url', url)}: {body}",
        )
    number = (body.get("version") or {}).get("number")
    if not number:
        return CheckResult(
            "elasticsearch", "fail", f"{named(settings, 'elasticsearch.url', url)} answers, but not like Elasticsearch"
        )
    return CheckResult(
        "elasticsearch",
        "ok",
        f"{(body.get('version') or {}).get('distribution', 'Elasticsearch')} {number} at {url} (for {', '.join(used)})",
    )


def check_logs(settings: Settings) -> CheckResult:
    if settings.logs.backend == "loki":
        return _core_toolset_check("logs", settings)
    if settings.logs.backend != "sqlite":
        return CheckResult("logs", "ok", f"Elasticsearch index pattern {settings.logs.index_pattern}")
    path = settings.logs.sqlite_path.expanduser()
    if not path.is_file():
        return CheckResult(
            "logs", "warn", f"{named(settings, 'logs.sqlite_path', path)} does not exist (query_logs will say so)"
        )
    return CheckResult("logs", "ok", f"SQLite logs at {path}")


def check_deploys(settings: Settings) -> CheckResult:
    if settings.deploys.source != "git":
        return _core_toolset_check("deploys", settings)
    repo = settings.deploys.git_repo.expanduser()
    if not repo.exists():
        return CheckResult("deploys", "warn", f"{named(settings, 'deploys.git_repo', repo)} does not exist")
    probe = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--git-dir"],
        capture_output=True,
        text=True,
        timeout=PROBE_TIMEOUT_S,
        check=False,
    )
    if probe.returncode != 0:
        return CheckResult("deploys", "fail", f"{named(settings, 'deploys.git_repo', repo)} is not a git repository")
    return CheckResult("deploys", "ok", f"git repository {repo}")


def check_llm(settings: Settings) -> CheckResult:
    c = settings.llm
    if not c.configured:
        return CheckResult("llm", "ok", "no LLM configured: the model-free playbook answers")
    base = (c.base_url or "https://api.openai.com/v1").rstrip("/")
    key = c.api_key.get_secret_value()
    body = _get_json(f"{base}/models", headers={"Authorization": f"Bearer {key}"} if key else None)
    if isinstance(body, str):
        return CheckResult("llm", "warn", f"{named(settings, 'llm.base_url', base)}: /models {body}")
    listed = {str(m.get("id")) for m in body.get("data") or [] if isinstance(m, dict)}
    missing = [m for m in dict.fromkeys([c.model, c.cheap_model or c.model]) if m not in listed]
    if missing and listed:
        return CheckResult(
            "llm", "fail", f"OPSBOT_LLM__MODEL: {', '.join(missing)} not among the {len(listed)} models {base} lists"
        )
    return CheckResult("llm", "ok", f"{c.model} at {base}" + (" (the endpoint lists no models)" if not listed else ""))


def check_redis(settings: Settings) -> CheckResult:
    url = settings.redis.url.get_secret_value()
    if not url:
        return CheckResult("redis", "ok", "not configured: one replica, shared state in memory")
    import redis

    try:
        redis.Redis.from_url(url, socket_timeout=PROBE_TIMEOUT_S, socket_connect_timeout=PROBE_TIMEOUT_S).ping()
    except Exception as exc:
        return CheckResult("redis", "fail", f"OPSBOT_REDIS__URL: no answer to PING ({type(exc).__name__})")
    return CheckResult("redis", "ok", "Redis answers PING: state is shared between replicas")


def check_timezone(settings: Settings) -> CheckResult:
    """The team's zone is one opsbot reads: a name that is none would fail every question that gives a time."""
    from bot.playbook.zones import zone_from_name

    try:
        zone_from_name(settings.timezone)
    except ValueError as exc:
        return CheckResult("timezone", "fail", f"{named(settings, 'timezone', settings.timezone)}: {exc}")
    return CheckResult("timezone", "ok", f"{settings.timezone}: a time a question gives without a zone is read in it")


def check_slack(settings: Settings) -> CheckResult:
    s = settings.slack
    if not s.bot_token.get_secret_value():
        return CheckResult("slack", "warn", "OPSBOT_SLACK__BOT_TOKEN is empty: serving the API only")
    if not s.app_token.get_secret_value() and not s.signing_secret.get_secret_value():
        return CheckResult(
            "slack", "fail", "HTTP mode needs OPSBOT_SLACK__SIGNING_SECRET (or OPSBOT_SLACK__APP_TOKEN for Socket Mode)"
        )
    return CheckResult("slack", "ok", "Socket Mode" if s.app_token.get_secret_value() else "HTTP mode at /slack/events")


def check_optional_toolsets(settings: Settings) -> CheckResult:
    """Kubernetes, runbooks, MCP servers (bot/wiring/toolsets.py): a failing one is left out at start, so WARN."""
    from bot.wiring.toolsets import optional_toolsets

    statuses = [t.check() for t in optional_toolsets(settings) if t.enabled]
    if not statuses:
        return CheckResult("toolsets", "ok", "no optional toolset enabled")
    line = "; ".join(f"{s.name} {s.state}: {s.detail}" for s in statuses)
    return CheckResult("toolsets", "ok" if all(s.state == "ok" for s in statuses) else "warn", line)


def check_runbook_tools(settings: Settings) -> CheckResult:
    """Runbooks that tell the model to call a tool the toolset lacks (query_pods, Kubernetes off) cost it a step."""
    from bot.wiring.core import build_tool_specs
    from tools.base import ToolError
    from tools.runbooks.citations import runbooks_lacking

    r = settings.runbooks
    try:
        count, lacking = runbooks_lacking(r.path.expanduser(), r.git_ref, lambda: build_tool_specs(settings), r.enabled)
    except ToolError as exc:  # the toolsets check says why the runbooks cannot be read; this one only names them
        return CheckResult("runbook tools", "warn", f"the runbooks could not be read: {exc}")
    if not lacking:
        return CheckResult("runbook tools", "ok", f"the {count} runbooks cite only tools the toolset has")
    cited = "; ".join(f"{file} cites {', '.join(tools)}" for file, tools in lacking.items())
    where = named(settings, "runbooks.path", r.path)
    return CheckResult("runbook tools", "warn", f"{cited}: not in the toolset; turn it on or fix the runbook ({where})")


def _core_toolset_check(name: str, settings: Settings) -> CheckResult:
    """Loki logs and Kubernetes rollout deploys: the same probe `opsbot toolsets` runs (bot/wiring/readiness.py)."""
    from bot.wiring.readiness import build_toolsets

    status = next(t for t in build_toolsets(settings) if t.name == name).check()
    return CheckResult(name, status.state if status.state != "off" else "warn", status.detail)


def _get_json(url: str, **kw: Any) -> dict[str, Any] | str:
    """The JSON object at url, or a short reason why not ("unreachable: ..." when nothing answered)."""
    try:
        resp = requests.get(url, timeout=PROBE_TIMEOUT_S, **kw)
    except requests.RequestException as exc:
        return f"unreachable ({type(exc).__name__})"
    if resp.status_code in (401, 403):
        return f"HTTP {resp.status_code}: check the credentials"
    try:
        body = resp.json()
    except ValueError:
        return f"HTTP {resp.status_code} with a body that is not JSON: is this the right URL?"
    return body if isinstance(body, dict) else f"HTTP {resp.status_code} with unexpected JSON"


def _es_auth(settings: Settings) -> tuple[str, str] | None:
    e = settings.elasticsearch
    return (e.username, e.password.get_secret_value()) if e.username else None


def settings_problems(exc: Exception, environ: Mapping[str, str] | None = None) -> list[str]:
    """One line per problem in the configuration, each naming where the bad value came from: the environment
    variable, the .env entry, or the config file's table and key (bot/config/problems.py).

    `exc` is what Settings() raised: pydantic's ValidationError (a value of the wrong type, a key no setting has),
    pydantic-settings' SettingsError (a JSON value that does not parse), or UnknownSettings (an OPSBOT_ variable
    that names no setting).
    """
    from bot.config.problems import settings_problems as problems
    from bot.config.provenance import dotenv_entries, environment
    from bot.config.sources import CONFIG_FILE_VARIABLE

    env = environment() if environ is None else dict(environ)
    dotenv = dotenv_entries() if environ is None else {}
    named = env.get(CONFIG_FILE_VARIABLE) or dotenv.get(CONFIG_FILE_VARIABLE)
    return problems(exc, Settings, env, dotenv, Path(named).expanduser() if named else None)
