"""Settings and toolboxes pointed at the session's real local backends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot import wiring
from bot.config import Settings
from tools.base import Toolbox


def tool_settings(
    *,
    prometheus_url: str = "http://127.0.0.1:9",
    logs_db: Path | str = "/nonexistent/logs.db",
    git_repo: Path | str = "/nonexistent/deploys",
    **sections: Any,
) -> Settings:
    """Settings for the tools only, built explicitly (never from the developer's environment)."""
    values: dict[str, Any] = {
        "prometheus": {"url": prometheus_url, "timeout_s": 2.0},
        "logs": {"backend": "sqlite", "sqlite_path": str(logs_db)},
        "deploys": {"source": "git", "git_repo": str(git_repo)},
    }
    for name, overrides in sections.items():
        values[name] = {**values.get(name, {}), **overrides}
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


@pytest.fixture
def sandbox_tools(sandbox: Any) -> Toolbox:
    """Every tool over the default scenario's Prometheus, SQLite logs and git repository."""
    settings = tool_settings(prometheus_url=sandbox.prometheus_url, logs_db=sandbox.logs_db, git_repo=sandbox.git_repo)
    return wiring.build_toolbox(settings)
