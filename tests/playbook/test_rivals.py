"""Hypotheses from every source weighed on the same evidence: a leak hours old in the service that degraded, a canary in
the deepest degraded dependency, nodes lost under pods the walk did not survey, a drain by a named person, stale data
three hops away, a campaign on a shared provider account, a retry storm. End to end over the sandbox (real Prometheus,
SQLite, git and the Kubernetes stand-in), and the rules alone over typed findings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot import wiring
from bot.engine.types import Question
from bot.eval import fact_named
from bot.eval.scoring import blames, headline_from_answer
from bot.playbook.evidence import ChangePoint, LogSignature
from bot.playbook.families.failover import RETRY_RX
from bot.playbook.families.hypotheses import Operation
from bot.playbook.families.rivals import (
    load_from_elsewhere,
    load_sent_after,
    operation_suspect,
    other_tables_waited_on,
    retry_reasons,
)
from bot.playbook.findings import Findings, ServiceHealth, Suspect
from tests.eval.harness import sandbox_settings
from tools.analysis.placement import origin_reasons
from tools.analysis.ranking import deploys_to_read
from tools.deploys.records import DeployRecord

NOW = datetime(2026, 11, 29, 16, 0, tzinfo=UTC)
ONSET = NOW - timedelta(minutes=20)
TOPOLOGY = {"otp": ["sms", "db"], "batch": ["sms", "db"], "eta": ["locator"], "locator": ["geo-db"]}


def _headline(box, tmp_path: Path) -> str:
    settings = sandbox_settings(box, tmp_path, toolsets=True)  # the Kubernetes API stand-in, as `opsbot eval` has it
    tools = wiring.build_toolbox(settings, clock=lambda: box.now)
    trace = wiring.build_playbook(settings)(Question(box.scenario.question), tools, now=box.now)
    return headline_from_answer(trace.answer)


def _named_not_blamed(headline: str, named: tuple[str, ...], decoy: str) -> None:
    assert all(fact_named(f, headline) for f in named), headline
    assert not blames(decoy, headline), headline


def test_a_leak_deployed_hours_before_in_the_dependency_that_ran_out_of_heap_is_named(make_sandbox, tmp_path):
    headline = _headline(make_sandbox("a2-tracker-dedupe-leak"), tmp_path)
    _named_not_blamed(headline, ("shipment-tracker", "v4.2.0", "OutOfMemoryError"), "v1.9.3")


def test_the_canary_of_the_deepest_degraded_service_outranks_the_asked_services_older_deploy(make_sandbox, tmp_path):
    headline = _headline(make_sandbox("d-quote-pricing-canary"), tmp_path)
    _named_not_blamed(headline, ("quote-pricing", "v5.3.0", "ZONE_FLOOD_2027"), "v3.9.2")


def test_nodes_lost_under_pods_of_services_the_walk_did_not_survey_are_found_with_their_zone(make_sandbox, tmp_path):
    headline = _headline(make_sandbox("b-zone-1b-outage"), tmp_path)
    assert "no deploy caused this" in headline
    _named_not_blamed(headline, ("eu-central-1b", "NotReady"), "v2.30.0")


def test_a_drain_by_a_named_person_is_the_cause_though_the_stopped_store_looks_steady(make_sandbox, tmp_path):
    headline = _headline(make_sandbox("vod-node-drain-sessions"), tmp_path)
    _named_not_blamed(headline, ("vod-session-store", "ip-10-30-1-15", "drain"), "v8.0.0")


def test_stale_data_is_traced_to_the_consumer_three_hops_out(make_sandbox, tmp_path):
    headline = _headline(make_sandbox("e-insights-stale-rollups"), tmp_path)
    assert all(fact_named(f, headline) for f in ("ingest.rollup-consumer", "CommitFailedException")), headline


def test_a_campaign_on_a_shared_provider_account_outranks_the_asked_services_deploy(make_sandbox, tmp_path):
    headline = _headline(make_sandbox("care-sms-429-shared-account"), tmp_path)
    _named_not_blamed(headline, ("care-outreach-batch", "429", "msgbird-sms"), "v3.7.0")


def test_a_retry_setting_of_the_day_before_outranks_the_deploy_of_the_service_the_storm_hit(make_sandbox, tmp_path):
    headline = _headline(make_sandbox("dispatch-retry-storm"), tmp_path)
    _named_not_blamed(headline, ("retry", "dispatch.eta"), "v2.15.0")


def _findings(traffic_rose: dict[str, bool]) -> Findings:
    findings = Findings(window_label="4h", service="otp", roles={"traffic": "qps"})
    for service, rose in traffic_rose.items():
        points = [ChangePoint(ONSET, 10.0, 90.0, "req/s", 9.0)] if rose else []
        findings.health[service] = ServiceHealth(service, readings={"qps": points})
    return findings


def test_an_operation_on_a_caller_of_the_shared_dependency_that_took_more_load_scores_like_a_deploy() -> None:
    findings = _findings({"sms": True, "otp": False})
    example = "sms answered 429 for account acct-main-7"
    findings.signatures["otp"] = [LogSignature(40, "sms answered 429 for account <id>", example)]
    line = "campaign spring started: channel=sms, account=acct-main-7, rate=80/s"
    operation = Operation(ONSET - timedelta(minutes=1), "batch", "c.mbeki", line)

    suspect = operation_suspect(findings, TOPOLOGY, "otp", operation, ONSET)

    assert suspect.score == 2 + 1 + 3 + 2  # at the onset, an actor, the shared dependency that rose, an identifier
    assert any("acct-main-7" in why for why in suspect.why)


def test_an_operation_far_from_the_load_and_the_errors_scores_on_its_timing_alone() -> None:
    findings = _findings({"sms": False, "otp": False})
    operation = Operation(ONSET - timedelta(hours=2), "batch", "c.mbeki", "report export started")

    assert operation_suspect(findings, TOPOLOGY, "otp", operation, ONSET).score == 1 + 1


def test_a_deploy_whose_service_kept_its_traffic_while_the_shared_dependency_took_more_counts_against() -> None:
    assert [r.points for r in load_from_elsewhere(_findings({"sms": True, "otp": False}), TOPOLOGY, "otp")] == [-2]
    assert load_from_elsewhere(_findings({"sms": True, "otp": True}), TOPOLOGY, "otp") == []  # it sent more itself
    assert load_from_elsewhere(_findings({"sms": False, "otp": False}), TOPOLOGY, "otp") == []


def test_a_retry_change_counts_when_its_callee_took_more_traffic() -> None:
    assert [r.points for r in retry_reasons(_findings({"locator": True}), TOPOLOGY, "eta")] == [2]
    assert retry_reasons(_findings({"locator": False}), TOPOLOGY, "eta") == []


def test_the_deepest_degraded_service_below_the_asked_one_gets_the_tie() -> None:
    assert [r.points for r in origin_reasons("pricing", "web", "pricing")] == [1]
    assert origin_reasons("web", "web", "pricing") == []  # the asked service's own change is weighed as such
    assert origin_reasons("pricing", "web", "") == []


class _Deploy:
    def __init__(self, service: str, minutes_before: int) -> None:
        self.service, self.at = service, ONSET - timedelta(minutes=minutes_before)


def test_deploys_of_degraded_services_are_read_before_fresher_ones_of_steady_services() -> None:
    found = [_Deploy(f"steady-{n}", 10 + n) for n in range(5)] + [_Deploy("tracker", 300)]
    near = ["web", "tracker", *(f"steady-{n}" for n in range(5))]

    read = deploys_to_read(found, near, "web", ONSET, timedelta(hours=6), degraded=["web", "tracker"])

    assert read[0].service == "tracker" and len(read) == 4


def _record(service: str, at: datetime) -> DeployRecord:
    return DeployRecord(service, "v1.5.3-config.1", at, "d.k", "fresher heatmap")


def test_a_caller_deploy_followed_at_once_by_its_shared_dependencys_surge_is_weighed_with_the_throttling() -> None:
    findings = _findings({"sms-gw": True, "otp": False})  # sms-gw surged at the onset; the deploy landed 7 min before
    example = "SmsGw answered 429 Too Many Requests (quota used up)"
    findings.signatures["otp"] = [LogSignature(300, "SmsGw answered 429 Too Many Requests <n>", example)]
    topology = {"otp": ["sms-gw"], "batch": ["sms-gw"]}

    reasons = load_sent_after(findings, topology, _record("batch", ONSET - timedelta(minutes=7)), "otp")

    assert [r.points for r in reasons] == [3, 2]
    assert "7 min after it" in reasons[0].text and "sms-gw throttles it" in reasons[1].text
    findings.signatures["otp"] = [LogSignature(300, "SmsGw answered 503 <n>", "SmsGw answered 503 (1200 ms)")]
    assert [r.points for r in load_sent_after(findings, topology, _record("batch", ONSET), "otp")] == [3]


def test_a_caller_deploy_long_before_the_surge_or_of_the_asked_service_sent_no_load() -> None:
    findings = _findings({"sms": True, "otp": False})
    assert load_sent_after(findings, TOPOLOGY, _record("batch", ONSET - timedelta(hours=3)), "otp") == []
    assert load_sent_after(findings, TOPOLOGY, _record("otp", ONSET - timedelta(minutes=7)), "otp") == []
    steady = _findings({"sms": False, "otp": False})
    assert load_sent_after(steady, TOPOLOGY, _record("batch", ONSET - timedelta(minutes=7)), "otp") == []


def _migration_deploy() -> Suspect:
    suspect = Suspect("deploy ticketing v4.12.0", "ticketing", score=7, deploy=_record("ticketing", ONSET))
    suspect.risky_lines = ["db/migration/V42__tours.sql: ALTER TABLE tours ADD COLUMN audio boolean"]
    return suspect


def test_a_migration_on_another_table_than_the_one_sessions_wait_on_counts_against_its_deploy() -> None:
    line = "statement: ALTER TABLE ticket_holds ALTER COLUMN email TYPE varchar(320);"
    waits = "process 79 still waiting for RowExclusiveLock on relation 16431 (ticket_holds); holding the lock: 48211"
    deploy = _migration_deploy()

    other_tables_waited_on([deploy], Operation(ONSET, "tickets-db", "dba.margit", line, blocking=waits))

    assert deploy.score == 4 and "ticket_holds" in deploy.why[-1] and "tours" in deploy.why[-1]


def test_a_migration_on_the_table_waited_on_or_an_operation_nobody_waits_on_leaves_the_deploy_as_it_was() -> None:
    same = _migration_deploy()
    waits_on_tours = "process 79 still waiting for AccessShareLock on relation 16431 (tours)"
    other_tables_waited_on([same], Operation(ONSET, "db", "dba.m", "ALTER TABLE tours DROP x", blocking=waits_on_tours))
    unblocked = _migration_deploy()
    other_tables_waited_on([unblocked], Operation(ONSET, "db", "dba.m", "ALTER TABLE ticket_holds DROP x"))
    assert same.score == unblocked.score == 7


def test_retry_lines_are_read_in_the_forms_clients_log_them() -> None:
    for line in (
        "redis GET rack:1:state failed (attempt 391/10, backoff 0ms)",
        "controller c1 re-sent upload batch immediately after 504 (attempt 363)",
        "retrying in 0 ms",
        "attempt 4 of 10 failed",
    ):
        assert RETRY_RX.search(line), line
    assert not RETRY_RX.search("checkout completed in 120 ms")
