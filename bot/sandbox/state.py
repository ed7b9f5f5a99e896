"""A running sandbox as recorded in <dir>/state.json, and the OPSBOT_* settings (<dir>/opsbot.env) that point
opsbot at it."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from bot.sandbox.apprepo import REF_PATTERN as APP_REF_PATTERN
from bot.sandbox.apprepo import app_repo_path
from bot.sandbox.esindex import DEPLOYS_INDEX

log = logging.getLogger(__name__)

# Extra catalogue entries the sandbox's series support ($label and $service are filled in by the tool).
SANDBOX_METRIC_TEMPLATES: dict[str, dict[str, str]] = {
    "memory_usage": {
        "promql": 'max(process_resident_memory_bytes{$label="$service"})',
        "unit": "bytes",
        "description": "resident memory of the largest pod",
        "role": "memory",
    },
    "restarts": {
        "promql": 'sum(increase(kube_pod_container_status_restarts_total{$label="$service"}[15m]))',
        "unit": "count",
        "description": "container restarts (e.g. OOM kills) in the last 15 minutes",
        "role": "restarts",
    },
}


@dataclass(frozen=True)
class SandboxInfo:
    """A running sandbox and the settings that point opsbot at it."""

    scenario: str
    now: datetime
    incident_at: datetime
    prometheus_url: str
    prometheus_pid: int
    logs_db: Path
    git_repo: Path
    topology: dict[str, list[str]]
    env_path: Path
    data_end: datetime
    es_url: str = ""
    already_running: bool = False
    runbooks_dir: str = ""  # the runbooks in the deploy repository
    kubeconfig: str = ""  # the scenario's Kubernetes API stand-in ("" when it has no [kubernetes] block)
    kube_namespace: str = ""
    kubeapi_pid: int = 0
    kube_namespaces: list[str] = field(default_factory=list)  # every namespace with objects (the toolset allowlist)
    loki_url: str = ""  # the Loki stand-in over the logs (`up --loki`), then the log backend
    loki_pid: int = 0
    metric_templates: dict[str, dict[str, str]] = field(default_factory=lambda: dict(SANDBOX_METRIC_TEMPLATES))
    databases: dict[str, list[str]] = field(default_factory=dict)  # postgres_exporter targets -> their callers

    def env(self, base_metrics: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, str]:
        """OPSBOT_* variables; base_metrics is the configured catalogue the sandbox's templates extend."""
        values = {
            "OPSBOT_PROMETHEUS__URL": self.prometheus_url,
            "OPSBOT_PROMETHEUS__METRICS": json.dumps({**(base_metrics or {}), **self.metric_templates}),
            "OPSBOT_TOPOLOGY": json.dumps(self.topology),
            "OPSBOT_LOGS__BACKEND": "elasticsearch" if self.es_url else "loki" if self.loki_url else "sqlite",
            "OPSBOT_LOGS__SQLITE_PATH": str(self.logs_db),
            "OPSBOT_DEPLOYS__SOURCE": "index" if self.es_url else "git",
            "OPSBOT_DEPLOYS__GIT_REPO": str(self.git_repo),
            "OPSBOT_SANDBOX__SCENARIO": self.scenario,
        }
        if self.runbooks_dir:
            values |= {"OPSBOT_RUNBOOKS__ENABLED": "true", "OPSBOT_RUNBOOKS__PATH": self.runbooks_dir}
        if self.databases:
            targets = {name: {"services": callers} for name, callers in self.databases.items()}
            values["OPSBOT_DATABASE__TARGETS"] = json.dumps(targets)
        if app_repo_path(self.git_repo).exists():  # the applications' code behind the images
            values |= {
                "OPSBOT_DEPLOYS__CODE__SOURCE": "git",
                "OPSBOT_DEPLOYS__CODE__REPO_PATTERN": str(app_repo_path(self.git_repo)),
                "OPSBOT_DEPLOYS__CODE__REF_PATTERN": APP_REF_PATTERN,
            }
        if self.kubeconfig:
            values |= {
                "OPSBOT_KUBERNETES__ENABLED": "true",
                "OPSBOT_KUBERNETES__KUBECONFIG": self.kubeconfig,
                "OPSBOT_KUBERNETES__NAMESPACES": json.dumps(self.kube_namespaces or [self.kube_namespace]),
            }
        if self.loki_url:
            values["OPSBOT_LOKI__URL"] = self.loki_url
        if self.es_url:
            values |= {
                "OPSBOT_ELASTICSEARCH__URL": self.es_url,
                "OPSBOT_ELASTICSEARCH__PLAIN_JSON": "true",
                "OPSBOT_DEPLOYS__INDEX": DEPLOYS_INDEX,
            }
        return values


def write_env_file(info: SandboxInfo, base_metrics: Mapping[str, Mapping[str, Any]] | None = None) -> Path:
    """Write opsbot.env (single-quoted values: readable by `. file` in a shell and by dotenv)."""
    lines = [f"# written by `opsbot sandbox up` for scenario {info.scenario} (clock {info.now:%Y-%m-%d %H:%M} UTC)"]
    lines += [f"{key}='{value}'" for key, value in info.env(base_metrics).items()]
    info.env_path.write_text("\n".join(lines) + "\n")
    return info.env_path


def write_state(sandbox_dir: Path, info: SandboxInfo) -> None:
    state = {
        k: (str(v) if isinstance(v, Path) else v.isoformat() if isinstance(v, datetime) else v)
        for k, v in asdict(info).items()
    }
    sandbox_dir.mkdir(parents=True, exist_ok=True)
    (sandbox_dir / "state.json").write_text(json.dumps(state, indent=2))


def read_state(sandbox_dir: Path) -> SandboxInfo | None:
    path = sandbox_dir / "state.json"
    if not path.exists():
        return None
    try:
        raw = json.loads(path.read_text())
        for key in ("now", "incident_at", "data_end"):
            raw[key] = datetime.fromisoformat(raw[key])
        for key in ("logs_db", "git_repo", "env_path"):
            raw[key] = Path(raw[key])
        return SandboxInfo(**raw)
    except (ValueError, KeyError, TypeError) as exc:
        log.warning("ignoring unreadable sandbox state %s: %s", path, exc)
        return None
