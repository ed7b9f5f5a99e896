"""Saturation signals read by role: the playbook reads every "saturation" entry of the asked service, and a pool
that filled with the symptom weighs for the deploy that sized it (tools/analysis/ranking.py)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from types import SimpleNamespace
from typing import Any, cast

from bot import wiring
from bot.config import Settings
from bot.playbook.findings import Findings, ServiceHealth, Suspect
from bot.playbook.probes import ProbeRun, Window, check_saturation, iso_from_moment
from bot.playbook.verdict import conclusion_from_findings
from bot.wiring.roles import saturation_metrics, unmeasured_metrics
from tests.stacks.build import RunningStack, discovered_config
from tools.analysis.configdiff import KeyChange
from tools.base import Toolbox


def test_a_pool_that_filled_with_the_symptom_weighs_for_the_deploy_that_shrank_it(
    make_stack: Callable[[str], RunningStack], tmp_path
):
    shop = make_stack("shop")
    settings = Settings(_env_file=None, config_file=discovered_config(shop, tmp_path / "opsbot.toml"))  # type: ignore[call-arg]
    saturation = [n for n, m in settings.prometheus.metrics.items() if m.role == "saturation"]
    assert saturation == ["gc_pause", "db_pool_pending", "db_pool_usage", "thread_pool_queue"]
    at = shop.built.incident_at
    start, end = at - timedelta(hours=1), at + timedelta(hours=1)
    window = Window(f"{iso_from_moment(start)}/{iso_from_moment(end)}", "", end)
    run = ProbeRun(Toolbox(wiring.build_metrics_tools(settings).specs()), None, window)
    findings = Findings(window_label="", service="order", roles={"latency": "p99_latency"})
    health = findings.health.setdefault("order", ServiceHealth("order"))
    run.read_metric("the symptom", health, "p99_latency")
    shrink = KeyChange("spring.datasource.hikari.maximum-pool-size", "20", "4", "envs/prod/order/values.yaml")
    deploy = cast(Any, SimpleNamespace(service="order", version="config @abc1234", at=at - timedelta(minutes=4)))
    suspect = Suspect("deploy order config @abc1234", "order", deploy=deploy, key_changes=[shrink])
    bystander = Suspect("deploy payment 1.9.4", "payment", deploy=cast(Any, SimpleNamespace(service="payment")))
    findings.suspects = [bystander, suspect]

    check_saturation(run, findings, "order", saturation)

    assert [step.args["metric"] for step in run.steps[1:]] == saturation
    assert findings.suspects == [suspect, bystander] and bystander.score == 0
    [why] = suspect.why
    assert why.startswith("order db pool pending went from ") and suspect.score == 3
    assert why.endswith("and its diff changed spring.datasource.hikari.maximum-pool-size 20 → 4, which sizes it")
    assert health.changed("gc_pause") is None  # steady: read, and no reason


def test_a_metric_the_service_does_not_measure_is_not_queried_and_the_answer_says_it_was_not_checked(
    make_stack: Callable[[str], RunningStack], tmp_path
):
    shop = make_stack("shop")
    settings = Settings(_env_file=None, config_file=discovered_config(shop, tmp_path / "opsbot.toml"))  # type: ignore[call-arg]
    assert unmeasured_metrics(settings)["web"] == {"db_pool_pending", "db_pool_usage"}
    at = shop.built.incident_at
    window = Window(f"{iso_from_moment(at - timedelta(hours=1))}/{iso_from_moment(at + timedelta(hours=1))}", "", at)
    tools = Toolbox(wiring.build_metrics_tools(settings).specs())
    run = ProbeRun(tools, None, window, unmeasured=unmeasured_metrics(settings))
    findings = Findings(window_label="", service="web", roles={"latency": "p99_latency"})
    health = findings.health.setdefault("web", ServiceHealth("web"))
    run.read_metric("the symptom", health, "p99_latency")

    check_saturation(run, findings, "web", saturation_metrics(settings))

    assert [step.args["metric"] for step in run.steps] == ["p99_latency", "gc_pause", "thread_pool_queue"]
    assert all(step.status == "ok" for step in run.steps)
    assert health.unmeasured == {"db_pool_pending", "db_pool_usage"}
    answer, _ = conclusion_from_findings(findings)
    assert "not checked: web's db_pool_pending, db_pool_usage (prometheus.services.web.not_measured)" in answer
    assert "could not be read" not in answer
