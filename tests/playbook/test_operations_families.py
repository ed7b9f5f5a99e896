"""Causes that operations, databases and third parties make, weighed against the deploys on the same evidence: a
statement someone ran whose session holds others up, a neighbour's pool that takes a shared server's connection slots,
a caller's retries multiplying its callee's traffic, one host of several refusing a credential, a client status a
healthy service's neighbour receives, data left behind by a paused replay. End to end over the sandbox (real
Prometheus, SQLite, git and the Kubernetes stand-in), and the rules alone over typed findings."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot import wiring
from bot.engine.types import Question
from bot.eval import fact_named
from bot.eval.scoring import blames, headline_from_answer
from bot.playbook.evidence import ChangePoint, LogSignature
from bot.playbook.families.causes import files_of
from bot.playbook.families.hypotheses import Operation
from bot.playbook.families.peers import _peer_of
from bot.playbook.families.received import _callee_named, _receiver
from bot.playbook.families.rivals import operation_suspect, retried_into
from bot.playbook.families.sessions import locked_tables, ran_a_statement, session_marks
from bot.playbook.families.sharedload import shared_slots_reasons
from bot.playbook.findings import Findings, ServiceHealth, Suspect
from tests.eval.harness import sandbox_settings
from tools.analysis.configdiff import KeyChange
from tools.deploys.records import DeployRecord
from tools.logs.model import LogEntry
from tools.logs.summary import Signature

NOW = datetime(2026, 11, 29, 16, 0, tzinfo=UTC)
ONSET = NOW - timedelta(minutes=20)

# scenario -> (facts the headline names, decoys it must not blame)
CASES = {
    "bookings-alter-table-lock": (("ALTER TABLE", "bookings-db", "dba.okafor"), ("v3.18.0",)),
    "claims-idle-in-transaction": (("claims-db", "marek.n", "idle in transaction"), ("v5.9.0", "fraud-scorer")),
    "ticket-resale-listings-timeouts": (("marketplace-db", "ALTER TABLE", "dba.kowalski"), ("v8.12.0",)),
    "pricing-db-connection-slots": (("rate-sync-worker", "maximum-pool-size", "pricing-db"), ("v9.4.0",)),
    "driver-bff-retry-429": (("driver-app-bff", "v3.15.0", "retry"), ("v2.20.0", "maps-provider")),
    "receipts-smtp-cert-expired": (("mail-relay", "smtp-b", "certificate has expired"), ("v3.8.0",)),
    "northwind-overtime-rule": (("rules-engine", "northwind.yaml", "shift.break_minutes"), ("v6.2.0", "globex")),
    "parcelnet-key-revoked-401": (("shipping-quote-service", "pk_live_7f3a", "401"), ("v11.2.0",)),
    "playback-v1-heartbeat-404": (("playback-api", "v8.0.0", "/v1/sessions"), ("v5.3.0", "drm-license")),
    "orders-replica-replay-paused": (("orders-db-replica", "pg_wal_replay_pause", "dba.olu"), ("v2.7.0",)),
}


def _headline(box, tmp_path: Path) -> str:
    settings = sandbox_settings(box, tmp_path, toolsets=True)
    tools = wiring.build_toolbox(settings, clock=lambda: box.now)
    trace = wiring.build_playbook(settings)(Question(box.scenario.question), tools, now=box.now)
    return headline_from_answer(trace.answer)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_cause_is_named_and_the_decoy_is_not_blamed(make_sandbox, tmp_path, name):
    named, decoys = CASES[name]
    headline = _headline(make_sandbox(name), tmp_path)
    assert all(fact_named(f, headline) for f in named), headline
    assert not any(blames(d, headline) for d in decoys), headline


def test_no_deploy_is_blamed_when_an_operation_left_the_data_behind(make_sandbox, tmp_path):
    headline = _headline(make_sandbox("orders-replica-replay-paused"), tmp_path)
    assert "no deploy caused this" in headline and "restaurant-gateway" not in headline


def _entry(message: str, **fields: str) -> LogEntry:
    return LogEntry(ONSET, "db", "INFO", message, fields=tuple(fields.items()))


def test_what_an_actor_ran_is_told_from_the_session_they_opened() -> None:
    assert ran_a_statement(_entry("statement: VACUUM FULL orders"))
    assert ran_a_statement(_entry("query done", statement="UPDATE t SET x = 1"))
    assert not ran_a_statement(_entry("connection authorized: user=ops.kim database=orders"))
    assert session_marks(_entry("x", pid="4711", actor="ops.kim"), "ops.kim") == ["ops.kim", "4711"]


def test_a_lock_taking_statement_is_known_in_wait_lines_by_the_table_it_names() -> None:
    rewrite = _entry("LOG:  statement: ALTER TABLE sales.invoices ALTER COLUMN total TYPE numeric(14,2);")
    assert locked_tables(rewrite) == ["invoices"]  # a wait line names the relation, not its schema
    assert session_marks(rewrite, "ops.kim") == ["ops.kim", "invoices"]
    assert locked_tables(_entry("ran it", statement="vacuum full ledger")) == ["ledger"]
    assert locked_tables(_entry("statement: CREATE INDEX CONCURRENTLY ix ON ledger (at)")) == []  # takes no such lock
    assert locked_tables(_entry("statement: SELECT * FROM ledger")) == []
    assert locked_tables(_entry("truncate the lock timeout list")) == []  # prose, not SQL


def _findings(*signatures: tuple[str, str]) -> Findings:
    findings = Findings(window_label="4h", service="web", roles={"traffic": "qps", "errors": "error_rate"})
    findings.signatures["web"] = [LogSignature(30, text, text) for text, _ in signatures]
    return findings


def test_an_operation_whose_session_holds_others_up_outweighs_one_that_only_ran() -> None:
    findings = _findings(("canceling statement due to lock timeout", ""))
    ran = Operation(ONSET, "db", "ops.kim", "statement: ALTER TABLE t ADD COLUMN c int")
    held = Operation(ONSET, "db", "ops.kim", ran.line, blocking="process 9 still waiting; blocked by process 4711")

    assert (
        operation_suspect(findings, {}, "web", held, ONSET).score
        - operation_suspect(findings, {}, "web", ran, ONSET).score
        == 2 + 2
    )  # its session holds others up, and the errors are lock waits it explains


def test_an_operation_in_another_caller_counts_when_the_shared_dependency_throttles_the_asked_service() -> None:
    topology = {"web": ["provider", "db"], "batch": ["provider"], "ledger": ["db"]}
    throttled = _findings(("charge failed: Provider 429 Too Many Requests (limit 100 req/s for the shared key)", ""))
    refused = _findings(("charge failed: Provider answered 500", ""))
    started = Operation(ONSET, "batch", "ops.kim", "backfill started: workers=32")
    echoed = Operation(ONSET, "batch", "ops.kim", started.line, throttled='40 lines like "provider -> 429"')

    def score(findings: Findings, operation: Operation) -> int:
        return operation_suspect(findings, topology, "web", operation, ONSET).score

    assert score(throttled, started) - score(refused, started) == 3  # it spends a limit the asked service needs
    assert score(throttled, echoed) - score(throttled, started) == 2  # and is throttled the same way itself
    elsewhere = Operation(ONSET, "ledger", "ops.kim", started.line)  # shares db, which is not the one throttling
    assert score(throttled, elsewhere) == score(refused, elsewhere)


def _deploy(service: str, *changes: KeyChange) -> Suspect:
    record = DeployRecord(service, "v1.1.0", ONSET - timedelta(minutes=5), "ops.kim", "raise the pool")
    return Suspect(f"deploy {service} v1.1.0", service, deploy=record, key_changes=list(changes))


POOL = KeyChange("db.pool.max-size", "10", "40", "services/sync/app.yaml")
TOPOLOGY = {"web": ["db", "cache"], "sync": ["db"], "loner": ["queue"]}


def test_a_neighbours_pool_counts_only_when_the_shared_server_ran_out_of_slots() -> None:
    out_of_slots = _findings(("FATAL: sorry, too many clients already", ""))
    own_pool = _findings(("Pool-1 - Connection is not available, request timed out", ""))

    assert [r.points for r in shared_slots_reasons(out_of_slots, TOPOLOGY, _deploy("sync", POOL), "web")] == [3]
    assert shared_slots_reasons(own_pool, TOPOLOGY, _deploy("sync", POOL), "web") == []  # the caller's own pool
    assert shared_slots_reasons(out_of_slots, TOPOLOGY, _deploy("loner", POOL), "web") == []  # shares nothing
    timeout = KeyChange("client.timeout_ms", "400", "800", "services/sync/app.yaml")
    assert shared_slots_reasons(out_of_slots, TOPOLOGY, _deploy("sync", timeout), "web") == []


def _callee(traffic_at: datetime | None, errors_at: datetime | None) -> Findings:
    findings = _findings()
    readings: dict[str, list[ChangePoint] | None] = {
        "qps": [ChangePoint(traffic_at, 100.0, 300.0, "req/s", 3.0)] if traffic_at else [],
        "error_rate": [ChangePoint(errors_at, 0.001, 0.2, "ratio", 200.0)] if errors_at else [],
    }
    findings.health["geo"] = ServiceHealth("geo", readings=readings)
    return findings


def test_a_callee_whose_traffic_rose_without_failing_first_is_not_its_own_deploys_doing() -> None:
    assert [r.points for r in retried_into(_callee(ONSET, None), "geo", "bff")] == [-2]
    assert retried_into(_callee(ONSET, ONSET - timedelta(minutes=2)), "geo", "bff") == []  # it broke first
    assert retried_into(_callee(None, None), "geo", "bff") == []


def _signature(service: str, message: str, **fields: str) -> Signature:
    entry = LogEntry(ONSET, service, "WARN", message, fields=tuple(fields.items()))
    return Signature(message, 10, ONSET, ONSET, entry)


def test_the_status_is_received_by_the_caller_and_answered_by_the_callee_its_lines_name() -> None:
    topology = {"tv-bff": ["player", "catalog"], "player": ["drm"]}
    assert _receiver(Counter({"tv-bff": 40, "player": 60}), topology) == "tv-bff"  # it calls the other one logging it
    assert _receiver(Counter({"player": 60}), topology) == "player"
    line = _signature("tv-bff", "heartbeat rejected: 404 Not Found", upstream="player")
    assert _callee_named(line, topology["tv-bff"]) == "player"
    provider = _signature("quotes", "Acmeship rate request rejected: 401 Unauthorized")
    assert _callee_named(provider, ["acmeship-api", "other-api"]) == "acmeship-api"


def test_a_refusing_host_belongs_to_the_callee_that_shares_a_word_with_it() -> None:
    assert _peer_of("smtp-2.relay.internal:465", ["mail-relay", "billing-db"]) == "mail-relay"
    assert _peer_of("10.0.3.7:443", ["vault"]) == "vault"  # the only callee
    assert _peer_of("10.0.3.7:443", ["vault", "kms"]) == ""


def test_a_named_change_names_the_file_it_lives_in_but_not_for_an_image_bump() -> None:
    rule = KeyChange("overtime.rule", "v1", "v2", "services/rules/tenants/acme.yaml")
    image = KeyChange("images[app].newTag", "v1.0.0", "v1.1.0", "services/app/kustomization.yaml")
    assert files_of([rule, image]) == " in services/rules/tenants/acme.yaml"
    assert files_of([image]) == ""
