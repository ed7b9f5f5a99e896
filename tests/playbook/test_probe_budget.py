"""The playbook's own budget: a backend that timed out once is not called again in the same run."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest

from bot.playbook import probes
from bot.playbook.probes import ProbeRun, Window
from tools.base import Toolbox, tool


def test_a_backend_that_timed_out_is_not_called_again_in_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    never = threading.Event()

    def query_metrics(service: str, metric: str, range: str = "6h") -> str:
        """A Prometheus that hangs (tests only)."""
        calls.append(metric)
        never.wait(5)
        return "late"

    monkeypatch.setattr(probes, "TOOL_TIMEOUT_S", 0.2)
    run = ProbeRun(Toolbox([tool(query_metrics)]), None, Window("6h", "the last 6 hours", datetime.now(UTC)))
    for metric in ("p99_latency", "error_rate", "qps", "cpu_usage"):
        assert run.call(f"reading {metric}", "query_metrics", {"service": "order", "metric": metric}) == ""
    never.set()
    assert calls == ["p99_latency"]  # one timeout, not four
    assert [s.status for s in run.steps] == ["error"] * 4
    assert "timed out after" in run.steps[0].observation
    assert all("not checked: query_metrics timed out earlier" in s.observation for s in run.steps[1:])
