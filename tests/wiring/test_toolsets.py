"""Toolsets switched on by configuration only (a TOML config file and env vars), their tools in the catalogue, and
each toolset's check as `opsbot toolsets` shows it, against the real sandbox backends and the wire-level fakes."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from bot import wiring
from bot.cli import app
from bot.config import Settings
from tests.fakes.faulty import closed_port_url
from tests.fakes.kubeapi import FakeKubeAPI, container_status, pod
from tests.fakes.loki import FakeLoki, lines_from_jsonl
from tools.base import call_tool

ROOT = Path(__file__).resolve().parents[2]
RUNBOOKS = ROOT / "bot" / "sandbox" / "runbooks"


@pytest.fixture
def kube(sandbox: Any) -> Iterator[FakeKubeAPI]:
    fake = FakeKubeAPI(forbidden={"kube-system"})
    oom = container_status(
        "order",
        ready=False,
        restarts=3,
        last_reason="OOMKilled",
        last_exit=137,
        last_finished=sandbox.incident_at + timedelta(minutes=2),
    )
    fake.add("shop", "pods", pod("order-1", {"app": "order"}, [oom], namespace="shop"))
    yield fake
    fake.stop()


@pytest.fixture
def loki(sandbox: Any) -> Iterator[FakeLoki]:
    fake = FakeLoki(lines_from_jsonl(sandbox.logs_jsonl))
    yield fake
    fake.stop()


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for key in [k for k in os.environ if k.startswith(("OPSBOT_", "OPENAI_"))]:
        monkeypatch.delenv(key)
    return monkeypatch


def write_config(path: Path, sandbox: Any, kube: FakeKubeAPI, loki: FakeLoki, tmp_path: Path) -> Path:
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    path.write_text(f"""
topology = {{ order = ["payment", "orders-db"] }}

[prometheus]
url = "{sandbox.prometheus_url}"

[prometheus.metrics.p99_latency]
promql = 'histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{{$label="$service"}}[5m])))'
unit = "s"
role = "latency"

[logs]
backend = "loki"

[loki]
url = "{loki.url}"

[deploys]
git_repo = "{sandbox.git_repo}"

[kubernetes]
enabled = true
kubeconfig = "{kubeconfig}"
namespaces = ["shop"]

[runbooks]
enabled = true
path = "{RUNBOOKS}"

[[mcp.servers]]
name = "pager"
command = "{sys.executable}"
args = ["-m", "tests.fakes.mcp_server"]
allowed_tools = ["list_alerts"]
""")
    return path


def test_a_config_file_turns_every_toolset_on_and_their_tools_answer(
    sandbox: Any, kube: FakeKubeAPI, loki: FakeLoki, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    clean_env.chdir(ROOT)  # the MCP server is started as `python -m tests.fakes.mcp_server`
    config = write_config(tmp_path / "opsbot.toml", sandbox, kube, loki, tmp_path)
    settings = Settings(_env_file=None, config_file=config)  # type: ignore[call-arg]
    assert list(settings.prometheus.metrics) == ["p99_latency"]
    assert settings.topology["order"] == ["payment", "orders-db"]
    box = wiring.build_toolbox(settings)
    assert box.names[-5:] == [
        "query_pods",
        "query_k8s_events",
        "query_rollout_history",
        "search_runbooks",
        "pager_list_alerts",
    ]
    pods = call_tool(box, "query_pods", {"namespace": "shop", "service": "order"})
    assert "last terminated: OOMKilled exit 137" in pods.text
    logs = call_tool(box, "query_logs", {"service": "order", "range": "2d", "level": "ERROR", "limit": 1})
    assert "HikariPool-1 - Connection is not available" in logs.text
    assert loki.requests  # the logs came from Loki, not the SQLite store
    assert (
        "Runbook: order-latency.md § Connection pool"
        in call_tool(box, "search_runbooks", {"query": "connection pool exhausted"}).text
    )
    assert call_tool(box, "pager_list_alerts", {"service": "order", "limit": 1}).status == "ok"


def test_env_vars_override_the_config_file(
    sandbox: Any, kube: FakeKubeAPI, loki: FakeLoki, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    config = write_config(tmp_path / "opsbot.toml", sandbox, kube, loki, tmp_path)
    clean_env.setenv("OPSBOT_CONFIG_FILE", str(config))
    clean_env.setenv("OPSBOT_KUBERNETES__NAMESPACES", '["shop", "kube-system"]')
    clean_env.setenv("OPSBOT_LOGS__BACKEND", "sqlite")
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.kubernetes.namespaces == ["shop", "kube-system"]
    assert settings.kubernetes.enabled and settings.kubernetes.kubeconfig.endswith("kubeconfig")  # from the file
    assert settings.logs.backend == "sqlite" and settings.loki.url == loki.url


def test_a_config_file_that_is_not_there_is_an_error(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_env.setenv("OPSBOT_CONFIG_FILE", str(tmp_path / "missing.toml"))
    with pytest.raises(FileNotFoundError, match=r"missing\.toml, which is not a file"):
        Settings(_env_file=None)  # type: ignore[call-arg]


def test_opsbot_toolsets_reports_each_toolsets_check(
    sandbox: Any, kube: FakeKubeAPI, loki: FakeLoki, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    clean_env.chdir(ROOT)
    config = write_config(tmp_path / "opsbot.toml", sandbox, kube, loki, tmp_path)
    result = CliRunner().invoke(app, ["toolsets", "--json"], env={"OPSBOT_CONFIG_FILE": str(config)})
    statuses = {s["name"]: (s["state"], s["detail"]) for s in map(json.loads, result.output.splitlines())}
    assert statuses["metrics"] == ("ok", f"Prometheus at {sandbox.prometheus_url}: 5 services, 1 catalogue metrics")
    assert statuses["logs"] == ("ok", f"ready at {loki.url}; 5 services under label 'service'")
    assert statuses["deploys"][0] == "ok" and "services with deploys" in statuses["deploys"][1]
    assert statuses["kubernetes"] == ("ok", "pods readable in 1 namespace(s): shop")
    assert statuses["runbooks"] == ("ok", f"4 runbooks, 13 sections from {RUNBOOKS}")
    assert statuses["mcp:pager"] == ("ok", "1 of 6 tools mounted: list_alerts")
    assert result.exit_code == 0


def test_failing_and_switched_off_toolsets_say_why(sandbox: Any, tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    values: dict[str, Any] = {
        "prometheus": {"url": closed_port_url(), "timeout_s": 1},
        "logs": {"backend": "loki"},
        "loki": {"url": closed_port_url(), "timeout_s": 1},
        "deploys": {"git_repo": str(tmp_path / "none")},
        "runbooks": {"enabled": True, "path": str(tmp_path)},
    }
    settings = Settings(_env_file=None, **values)  # type: ignore[call-arg]
    statuses = {s.name: s for s in wiring.toolset_statuses(settings)}
    assert statuses["metrics"].state == "fail" and "is unreachable" in statuses["metrics"].detail
    assert statuses["logs"].state == "fail" and statuses["logs"].detail.startswith("Loki unreachable")
    assert statuses["deploys"].state == "fail" and "does not exist" in statuses["deploys"].detail
    assert (statuses["kubernetes"].state, statuses["kubernetes"].detail) == (
        "off",
        "not enabled (OPSBOT_KUBERNETES__ENABLED)",
    )
    assert statuses["runbooks"].state == "warn" and "no Markdown runbooks" in statuses["runbooks"].detail


def test_a_toolset_that_cannot_start_is_left_out_and_the_rest_still_works(
    sandbox: Any, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    values: dict[str, Any] = {
        "prometheus": {"url": sandbox.prometheus_url},
        "logs": {"sqlite_path": str(sandbox.logs_db)},
        "deploys": {"git_repo": str(sandbox.git_repo)},
        "kubernetes": {"enabled": True, "kubeconfig": str(tmp_path / "missing-kubeconfig")},
        "mcp": {
            "servers": [{"name": "gone", "command": "/nonexistent/mcp-server", "allowed_tools": ["*"], "timeout_s": 5}]
        },
        "runbooks": {"enabled": True, "path": str(RUNBOOKS)},
    }
    box = wiring.build_toolbox(Settings(_env_file=None, **values))  # type: ignore[call-arg]
    assert box.names[-2:] == ["calculate", "search_runbooks"]
    statuses = {s.name: s.state for s in wiring.toolset_statuses(Settings(_env_file=None, **values))}  # type: ignore[call-arg]
    assert statuses["kubernetes"] == "fail" and statuses["mcp:gone"] == "fail" and statuses["runbooks"] == "ok"
