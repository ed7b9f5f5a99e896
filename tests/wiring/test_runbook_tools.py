"""`opsbot doctor` names the runbooks that tell the model to call a tool the toolset lacks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.config import Settings
from bot.wiring.doctor import check_runbook_tools, default_checks
from tests.fakes.kubeapi import FakeKubeAPI

RUNBOOKS = Path(__file__).resolve().parents[2] / "bot" / "sandbox" / "runbooks"


@pytest.fixture
def kube() -> Iterator[FakeKubeAPI]:
    fake = FakeKubeAPI()
    yield fake
    fake.stop()


def settings(runbooks: Path, enabled: bool = True, **sections: Any) -> Settings:
    values: dict[str, Any] = {
        "deploys": {"source": "git", "git_repo": "/nonexistent/deploys"},
        "logs": {"backend": "sqlite", "sqlite_path": "/nonexistent/logs.db"},
        "runbooks": {"enabled": enabled, "path": runbooks},
        **sections,
    }
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def test_a_runbook_citing_kubernetes_tools_without_kubernetes_is_named() -> None:
    result = check_runbook_tools(settings(RUNBOOKS))
    assert result.level == "warn"
    assert "pod-oomkilled.md cites query_pods, query_k8s_events" in result.line
    assert "crashloop-config.md cites query_pods" in result.line
    assert "order-latency.md" not in result.line  # it cites tools the toolset has


def test_with_kubernetes_on_the_same_runbooks_pass(kube: FakeKubeAPI, tmp_path: Path) -> None:
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    on = {"enabled": True, "kubeconfig": str(kubeconfig), "namespaces": ["shop"]}
    result = check_runbook_tools(settings(RUNBOOKS, kubernetes=on))
    assert result.level == "ok", result.line
    assert result.line == f"the {len(list(RUNBOOKS.glob('*.md')))} runbooks cite only tools the toolset has"


def test_a_tool_no_toolset_has_is_named_and_disabled_runbooks_are_not_read(tmp_path: Path) -> None:
    (tmp_path / "db.md").write_text("# DB\n\n## Locks\nRun `query_db_locks`, then `query_logs` for the blocker.\n")
    result = check_runbook_tools(settings(tmp_path))
    assert result.level == "warn" and result.line.startswith("db.md cites query_db_locks:")
    off = settings(tmp_path, enabled=False)
    assert check_runbook_tools(off).level == "ok"
    assert check_runbook_tools in default_checks()


def test_runbooks_that_cannot_be_read_are_a_warning_not_a_failure(tmp_path: Path) -> None:
    result = check_runbook_tools(settings(tmp_path / "missing"))
    assert result.level == "warn" and "could not be read" in result.line and "does not exist" in result.line
