"""`opsbot doctor`: named checks of the settings and each backend, one line each, ok / warn / fail.

A check is a function of Settings that returns a CheckResult. `default_checks()` lists them in order; other
parts (toolset prerequisites, for one) extend that list with checks of their own. A backend that does not
answer is a warning (it may come up later); one that answers as something else than configured, or a setting
that cannot work, is a failure, and `serve` refuses to start on a failure.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
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


Check = Callable[[Settings], CheckResult]


def run_checks(settings: Settings, checks: Sequence[Check] | None = None) -> list[CheckResult]:
    """Every check's result; a check that raises is a failure of that check, never a traceback."""
    results = []
    for check in checks if checks is not None else default_checks():
        try:
            results.append(check(settings))
        except Exception as exc:
            name = getattr(check, "__name__", "check").removeprefix("check_")
            results.append(CheckResult(name, "fail", f"the check itself failed: {type(exc).__name__}: {exc}"))
    return results


def default_checks() -> list[Check]:
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
        check_optional_toolsets,
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
            "prometheus", "warn" if body.startswith("unreachable") else "fail", f"OPSBOT_PROMETHEUS__URL={url}: {body}"
        )
    version = (body.get("data") or {}).get("version") if body.get("status") == "success" else None
    if not version:
        return CheckResult("prometheus", "fail", f"OPSBOT_PROMETHEUS__URL={url} answers, but not like Prometheus")
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
            f"OPSBOT_ELASTICSEARCH__URL={url}: {body}",
        )
    number = (body.get("version") or {}).get("number")
    if not number:
        return CheckResult(
            "elasticsearch", "fail", f"OPSBOT_ELASTICSEARCH__URL={url} answers, but not like Elasticsearch"
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
        return CheckResult("logs", "warn", f"OPSBOT_LOGS__SQLITE_PATH={path} does not exist (query_logs will say so)")
    return CheckResult("logs", "ok", f"SQLite logs at {path}")


def check_deploys(settings: Settings) -> CheckResult:
    if settings.deploys.source != "git":
        return _core_toolset_check("deploys", settings)
    repo = settings.deploys.git_repo.expanduser()
    if not repo.exists():
        return CheckResult("deploys", "warn", f"OPSBOT_DEPLOYS__GIT_REPO={repo} does not exist")
    probe = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--git-dir"],
        capture_output=True,
        text=True,
        timeout=PROBE_TIMEOUT_S,
        check=False,
    )
    if probe.returncode != 0:
        return CheckResult("deploys", "fail", f"OPSBOT_DEPLOYS__GIT_REPO={repo} is not a git repository")
    return CheckResult("deploys", "ok", f"git repository {repo}")


def check_llm(settings: Settings) -> CheckResult:
    c = settings.llm
    if not c.configured:
        return CheckResult("llm", "ok", "no LLM configured: the model-free playbook answers")
    base = (c.base_url or "https://api.openai.com/v1").rstrip("/")
    key = c.api_key.get_secret_value()
    body = _get_json(f"{base}/models", headers={"Authorization": f"Bearer {key}"} if key else None)
    if isinstance(body, str):
        return CheckResult("llm", "warn", f"OPSBOT_LLM__BASE_URL={base}: /models {body}")
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
    """One line per problem in the configuration, each naming the environment variable to fix.

    `exc` is what Settings() raised: pydantic's ValidationError (a value of the wrong type), or pydantic-settings'
    SettingsError (a JSON value that does not parse, which names only the section).
    """
    env = os.environ if environ is None else environ
    errors = getattr(exc, "errors", None)
    if callable(errors):
        return [_problem_line(error, env) for error in errors()]
    broken = [name for name, value in env.items() if name.startswith("OPSBOT_") and not _json_ok(value)]
    if broken:
        return [f"{name}: not valid JSON ({_json_error(env[name])})" for name in broken]
    return [f"configuration: {exc}"]


def _problem_line(error: Mapping[str, Any], env: Mapping[str, str]) -> str:
    loc = [str(part) for part in error["loc"]]
    for cut in range(len(loc), 0, -1):  # a JSON-valued variable holds the deeper parts of the path
        name = "OPSBOT_" + "__".join(part.upper() for part in loc[:cut])
        if name in env:
            inside = f" (at {'.'.join(loc[cut:])})" if cut < len(loc) else ""
            return f"{name}={env[name]:.60}{inside}: {error['msg']}"
    return f"OPSBOT_{'__'.join(part.upper() for part in loc)}: {error['msg']} (got {error.get('input')!s:.60})"


def _json_ok(value: str) -> bool:
    return not value.lstrip().startswith(("{", "[")) or not _json_error(value)


def _json_error(value: str) -> str:
    try:
        json.loads(value)
    except ValueError as exc:
        return str(exc)
    return ""
