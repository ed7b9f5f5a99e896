"""Numbers stay numbers: the playbook judges a change on the ratio the detector found, never on the factor the text
rounds it to for the model ("x0.7" for 0.653, which read back would be no change at all)."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.playbook.findings import Findings, ServiceHealth
from bot.playbook.probes import ProbeRun, Window
from bot.playbook.verdict import conclusion_from_findings
from tests.playbook.canned import change, clock, metrics_toolbox, series

NOW = datetime(2026, 11, 29, 17, 0, tzinfo=UTC)


def test_a_latency_drop_to_x0_653_is_judged_a_change_though_its_text_prints_x0_7() -> None:
    drop = series(NOW, "order", "p99_latency", "ms", (640, 1000, 1020, 653), changes=[change(NOW, "15:05", 1000, 653)])
    run = ProbeRun(metrics_toolbox({("order", "p99_latency"): drop}), None, Window("6h", "the last 6 hours", NOW))
    findings = Findings("the last 6 hours", service="order", roles={"latency": "p99_latency"})
    run.read_metric("order's latency", findings.health.setdefault("order", ServiceHealth("order")), "p99_latency")
    assert "change: 15:05 1,000 ms -> 653 ms (x0.7)" in run.steps[-1].observation  # what the model reads
    assert findings.first_change("order") == ("p99_latency", clock(NOW, "15:05"))  # a drop past 2/3 is a change
    answer, _ = conclusion_from_findings(findings)
    assert "order p99 latency went from 1,000 ms to 653 ms at 15:05 UTC" in answer  # worded as the text shows it
    assert "no significant change" not in answer


def test_a_drop_to_x0_7_is_still_no_change() -> None:
    drop = series(NOW, "order", "p99_latency", "ms", (690, 1000, 1020, 700), changes=[change(NOW, "15:05", 1000, 700)])
    health = ServiceHealth("order")
    health.record("p99_latency", drop)
    assert health.readings["p99_latency"] and health.changed("p99_latency") is None
