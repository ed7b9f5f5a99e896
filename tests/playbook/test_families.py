"""Incident families with no deploy behind them, each read through canned tools that answer typed data the way the
real tools do: an operation a named actor ran, a credential refused for its state, stale data from a producer, a 429
the error rate does not count, and pods of several services stopped together."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from bot.playbook.evidence import LogSignature
from bot.playbook.families.causes import refused_credential
from bot.playbook.families.database import check_database_locks
from bot.playbook.families.operations import actor_of, check_operations
from bot.playbook.families.staleness import check_staleness
from bot.playbook.families.statuscodes import check_status_answered
from bot.playbook.findings import Findings, ServiceHealth, Suspect
from bot.playbook.onset import saturation_where_it_changed
from bot.playbook.probes import ProbeRun, Window
from bot.playbook.toolsetprobes import stopped_together
from tests.playbook.canned import (
    change,
    clock,
    deploy,
    deploys,
    diff,
    entry,
    metrics_toolbox,
    series,
    signature,
    steady,
)
from tools.analysis.configdiff import KeyChange
from tools.base import Toolbox, ToolResult, tool
from tools.database.locks import DbLocks, LockSession, render_locks
from tools.deploys.records import render_deploys, render_diff
from tools.kubernetes.objects import KubeEvent
from tools.logs.model import LogEntry
from tools.logs.render import render_logs
from tools.logs.summary import LogLine, LogSummary, OnsetContrast, Signature, SignatureBlock
from tools.timerange import TimeWindow

NOW = datetime(2026, 11, 29, 16, 0, tzinfo=UTC)
ONSET = NOW - timedelta(minutes=20)
WINDOW = TimeWindow(NOW - timedelta(hours=4), NOW)


def run_over(toolbox: Toolbox) -> ProbeRun:
    return ProbeRun(toolbox, None, Window("4h", "the last 4 hours", NOW))


def summary(
    service: str | None,
    lines: Sequence[LogEntry] = (),
    *,
    errors: SignatureBlock | None = None,
    warnings: SignatureBlock | None = None,
) -> LogSummary:
    entries = tuple(LogLine(e) for e in sorted(lines, key=lambda e: e.timestamp, reverse=True))
    total = len(entries) + sum(s.count for b in (errors, warnings) if b for s in b.top)
    return LogSummary(service, WINDOW, "", (), total, {}, ("ERROR",), errors, warnings=warnings, newest=entries)


def block(level: str, *sigs: Signature) -> SignatureBlock:
    count = sum(s.count for s in sigs)
    return SignatureBlock((level,), count, count, len(sigs), sigs)


def logs_tool(answer: dict[str, LogSummary]) -> Callable[..., ToolResult]:
    """query_logs answering by service ("*" for every service's), from typed summaries."""

    def query_logs(
        service: str,
        query: str = "",
        level: str = "",
        range: str = "1h",
        start: str = "",
        end: str = "",
        limit: int = 100,
        onset: str = "",
    ) -> ToolResult:
        """Canned log summaries (tests only); with `onset`, the signatures that began after it are the new ones."""
        found = answer.get(service)
        if found is None:
            return ToolResult("no_data", f"no lines for {service}")
        if onset:
            found = replace(found, onset=_contrast(found, datetime.fromisoformat(onset)))
        return ToolResult("ok", render_logs(found), found)

    return query_logs


def _contrast(found: LogSummary, onset: datetime) -> OnsetContrast:
    sigs = [s for b in (found.signatures, found.warnings) if b is not None for s in b.top if s.first_at >= onset]
    new = SignatureBlock(("ERROR", "WARN"), len(sigs), len(sigs), len(sigs), tuple(sigs)) if sigs else None
    return OnsetContrast(onset, 0, len(sigs), new)


# --- an operation a named actor ran ---------------------------------------------------------------------------


def test_the_actor_is_a_field_or_a_named_user_never_a_process_or_the_system() -> None:
    at = ONSET
    assert actor_of(replace(entry(at, "claims-db", "VACUUM claims"), fields=(("actor", "dba.okafor"),))) == "dba.okafor"
    assert actor_of(entry(at, "db", "blocked by process 48211 (VACUUM FULL, user dba.okafor)")) == "dba.okafor"
    assert actor_of(entry(at, "sms", "campaign winter started by crm.lucia (scheduled)")) == "crm.lucia"
    assert actor_of(entry(at, "db", "still waiting for lock; blocked by process 4711")) == ""
    assert actor_of(replace(entry(at, "db", "checkpoint complete"), fields=(("user", "postgres"),))) == ""


def test_an_operation_is_the_earliest_line_with_an_actor_near_the_degraded_services_with_its_lock_wait() -> None:
    statement = replace(
        entry(ONSET - timedelta(minutes=1), "claims-db", "statement: VACUUM (FULL, VERBOSE) claims", "INFO"),
        fields=(("actor", "dba.okafor"),),
    )
    wait = entry(
        ONSET + timedelta(minutes=1),
        "claims-db",
        "waiting for AccessShareLock; blocked by process 48211 (VACUUM FULL, user dba.okafor)",
        "WARN",
    )
    elsewhere = replace(
        entry(ONSET - timedelta(minutes=5), "billing-batch", "export started by ops.kim", "INFO"),
        fields=(("actor", "ops.kim"),),
    )
    run = run_over(Toolbox([tool(logs_tool({"*": summary(None, [statement, wait, elsewhere])}))]))

    found = check_operations(run, {"claims-api", "claims-db"}, ONSET)

    assert found is not None
    assert (found.service, found.actor, found.at) == ("claims-db", "dba.okafor", statement.timestamp)
    assert "VACUUM (FULL, VERBOSE)" in found.line and "VACUUM FULL, user dba.okafor" in found.blocking
    assert "no deploy caused this" in found.describe()


def test_a_statement_with_no_pid_holds_others_up_when_wait_lines_name_the_table_it_locks() -> None:
    statement = replace(
        entry(
            ONSET - timedelta(minutes=1),
            "ledger-db",
            "statement: ALTER TABLE entries ALTER COLUMN n TYPE bigint",
            "INFO",
        ),
        fields=(("actor", "dba.okafor"),),
    )
    wait = entry(ONSET, "ledger-db", "process 77 still waiting for RowExclusiveLock on relation 1 (entries)", "INFO")
    other = entry(ONSET, "ledger-db", "process 78 still waiting for ShareLock on relation 2 (accounts)", "INFO")
    run = run_over(
        Toolbox([tool(logs_tool({"*": summary(None, [statement]), "ledger-db": summary(None, [other, wait])}))])
    )

    found = check_operations(run, {"ledger-api", "ledger-db"}, ONSET)

    assert found is not None and "relation 1 (entries)" in found.blocking and "accounts" not in found.blocking


def test_a_job_started_by_hand_is_read_for_the_throttling_it_meets_since() -> None:
    started = replace(
        entry(ONSET - timedelta(minutes=3), "batch", "backfill started: 9000 cards, workers=32", "INFO"),
        fields=(("actor", "ops.kim"),),
    )
    throttled = entry(ONSET, "batch", "Provider POST /v1/tokens -> 429 Too Many Requests", "WARN")
    own = summary(
        "batch",
        [started],
        warnings=block("WARN", signature("Provider POST /v1/tokens -> 429 Too Many Requests", 40, ONSET, throttled)),
    )
    run = run_over(Toolbox([tool(logs_tool({"*": summary(None, [started]), "batch": own}))]))

    found = check_operations(run, {"web", "batch"}, ONSET)

    assert found is not None and not found.blocking
    assert found.throttled.startswith("40 lines since") and "429 Too Many Requests" in found.throttled


def test_no_operation_when_no_line_names_who_ran_it() -> None:
    background = entry(ONSET, "claims-db", "automatic vacuum of table claims.public.claim_events", "INFO")
    run = run_over(Toolbox([tool(logs_tool({"*": summary(None, [background])}))]))
    assert check_operations(run, {"claims-db"}, ONSET) is None


# --- a credential refused for its state ------------------------------------------------------------------------


def _refused_findings(*changes: KeyChange) -> Findings:
    findings = Findings(window_label="4h", service="uploader")
    findings.signatures["uploader"] = [
        LogSignature(400, "batch <hex> not delivered: 401 Unauthorized, will retry"),
        LogSignature(130, "token request failed: 401 Unauthorized body=invalid_client: client secret has expired"),
    ]
    findings.log_levels["uploader"] = "ERROR"
    findings.key_changes = list(changes)
    return findings


def test_an_expired_secret_in_the_errors_is_the_cause_when_no_deploy_touched_a_credential() -> None:
    refused = refused_credential(_refused_findings(KeyChange("datahub.http_client", "apache4", "jdk")))
    assert refused is not None
    service, sig = refused
    assert service == "uploader" and "client secret has expired" in sig.text


def test_a_deploy_that_changed_the_secret_keeps_the_blame() -> None:
    assert refused_credential(_refused_findings(KeyChange("datahub.client_secret_ref", "vault:a", "vault:b"))) is None


# --- stale data from a producer --------------------------------------------------------------------------------


def test_a_flat_service_whose_new_warning_says_stale_is_traced_to_the_producer_it_names() -> None:
    start = WINDOW.start
    cookie = entry(NOW, "paywall-api", "malformed meter cookie, resetting count", "WARN")
    stale = entry(NOW, "paywall-api", "entitlement snapshot is stale: last projector update 400 s ago", "WARN")
    warnings = block(
        "WARN",
        signature("malformed meter cookie, resetting count", 900, start, cookie),
        signature("entitlement snapshot is stale: last projector update <n> s ago", 200, ONSET, stale),
    )
    failing = entry(NOW, "entitlement-projector", "Failed to process record events-1@884213; seeking back to retry")
    errors = block("ERROR", signature(failing.message, 600, ONSET - timedelta(minutes=9), failing))
    toolbox = Toolbox(
        [
            tool(
                logs_tool(
                    {
                        "paywall-api": summary("paywall-api", warnings=warnings),
                        "entitlement-projector": summary("entitlement-projector", errors=errors),
                    }
                )
            )
        ]
    )
    topology = {"paywall-api": ["entitlement-cache"], "entitlement-projector": ["entitlement-cache"]}
    findings = Findings(window_label="4h", service="paywall-api")

    check_staleness(run_over(toolbox), findings, topology, "paywall-api")

    assert findings.stale is not None
    assert findings.stale.producer == "entitlement-projector"
    assert "lags behind its input" in findings.stale.describe() and "seeking back" in findings.stale.error


def _clipped_logs(true_first: dict[str, dict[str, datetime]]) -> Callable[..., ToolResult]:
    """query_logs over lines each service logs from a true first time on: a window starting later sees them from its
    start; with `onset`, the ones that began after it are new (tests only)."""

    def query_logs(
        service: str, level: str = "", range: str = "", start: str = "", end: str = "", onset: str = ""
    ) -> ToolResult:
        """Canned clipped logs (tests only)."""
        began = datetime.fromisoformat(start) if start else WINDOW.start
        lines = true_first.get(service, {})
        if not lines:
            return ToolResult("no_data", f"no lines for {service}")
        sigs = tuple(
            signature(text, 50, max(first, began), entry(NOW, service, text, "WARN")) for text, first in lines.items()
        )
        found = summary(service, warnings=block("WARN", *sigs))
        if onset:
            new = tuple(s for s in sigs if lines[s.template] >= datetime.fromisoformat(onset))
            contrast = OnsetContrast(datetime.fromisoformat(onset), 0, len(sigs), block("WARN", *new) if new else None)
            found = replace(found, onset=contrast)
        return ToolResult("ok", render_logs(found), found)

    return query_logs


STALE_LINE = "orders view freshness check: newest order in the view is older than 15 minutes"
BACKGROUND_LINE = "slow render of the orders page"


def _stale_near_start(stale_since: datetime) -> Findings:
    producer_error = {"order-projector": {"cannot decode OrderPlaced: unknown field shape": stale_since}}
    logs = {"orders-page": {BACKGROUND_LINE: WINDOW.start - timedelta(hours=5), STALE_LINE: stale_since}}
    toolbox = Toolbox([tool(_clipped_logs({**logs, **producer_error}))])
    topology = {"orders-page": ["orders-view"], "order-projector": ["orders-view"]}
    findings = Findings(window_label="4h", service="orders-page")
    check_staleness(run_over(toolbox), findings, topology, "orders-page")
    return findings


def test_a_stale_line_that_began_just_inside_the_window_is_new_when_the_hour_before_lacks_it() -> None:
    findings = _stale_near_start(WINDOW.start + timedelta(minutes=8))
    assert findings.stale is not None and findings.stale.producer == "order-projector"
    assert findings.stale.line.startswith("orders view freshness check")


def test_a_stale_line_logged_long_before_the_window_is_background() -> None:
    assert _stale_near_start(WINDOW.start - timedelta(hours=3)).stale is None


# --- a 429 the error rate does not count ----------------------------------------------------------------------


RATELIMIT_DIFF = """diff --git a/config/ratelimit.yaml b/config/ratelimit.yaml
--- a/config/ratelimit.yaml
+++ b/config/ratelimit.yaml
@@ -1,3 +1,3 @@
 descriptors:
-  - value: partner-gold
+  - value: partner_gold
"""


def test_a_429_the_question_names_is_traced_to_the_service_answering_it_and_its_rate_limit_change() -> None:
    start = WINDOW.start
    background = entry(NOW, "partner-gateway", "rate limit exceeded: consumer=small tier=default -> 429", "WARN")
    throttled = entry(NOW, "partner-gateway", "rate limit exceeded: consumer=tixswap tier=default -> 429", "WARN")
    warnings = block(
        "WARN",
        signature("rate limit exceeded: consumer=tixswap tier=default -> 429", 1100, ONSET, throttled),
        signature("rate limit exceeded: consumer=small tier=default -> 429", 60, start, background),
    )
    change = deploy("partner-gateway", "v3.4.0-config.1", ONSET - timedelta(hours=7), "v3.4.0")

    def query_deploy_records(service: str, start: str = "", end: str = "") -> ToolResult:
        """Canned deploys (tests only)."""
        found = deploys(service, WINDOW, change)
        return ToolResult("ok", render_deploys(found), found)

    def query_deploy_diff(version: str, service: str = "") -> ToolResult:
        """Canned diff (tests only)."""
        found = diff(change, RATELIMIT_DIFF)
        return ToolResult("ok", render_diff(found), found)

    toolbox = Toolbox(
        [
            tool(logs_tool({"*": summary(None, warnings=warnings)})),
            tool(query_deploy_records),
            tool(query_deploy_diff),
        ]
    )
    findings = Findings(window_label="4h", service="inventory-api")

    check_status_answered(run_over(toolbox), findings, "partners were getting 429s from us yesterday afternoon")

    assert findings.status is not None
    assert (findings.status.service, findings.status.since) == ("partner-gateway", ONSET)
    assert findings.status.deploy == change
    assert "partner-gold → partner_gold" in findings.status.describe()


def test_no_status_read_when_the_question_names_none() -> None:
    findings = Findings(window_label="4h", service="inventory-api")
    check_status_answered(run_over(Toolbox([])), findings, "inventory sync is slow")
    assert findings.status is None


# --- pods of several services stopped together ----------------------------------------------------------------


def _stopped(at: datetime, pod: str, reason: str = "Killing") -> KubeEvent:
    return KubeEvent(at, "Normal", reason, "Pod", pod, 1, f"Stopping container {pod.split('-')[0]}")


def test_pods_of_several_services_stopped_in_the_same_minute_are_kept_and_a_rollout_is_not() -> None:
    events = [
        _stopped(ONSET, "quote-api-4e5d9c-54stn"),
        _stopped(ONSET, "rate-cache-3d5d9c-nnx9m"),
        _stopped(ONSET + timedelta(seconds=30), "rates-db-3d5d9c-42n48"),
        _stopped(ONSET, "tracking-api-4e5d9c-2vlms"),
        KubeEvent(ONSET, "Normal", "ScalingReplicaSet", "Deployment", "tracking-api", 1, "Scaled down"),
        _stopped(ONSET + timedelta(minutes=9), "broker-gateway-3d5d9c-5n628"),
    ]
    kept = {e.object_name.rsplit("-", 2)[0] for e in stopped_together(events)}
    assert kept == {"quote-api", "rate-cache", "rates-db"}


# --- a database's lock waits -----------------------------------------------------------------------------------


def test_the_root_of_a_databases_blocking_chain_is_an_operation_with_its_user() -> None:
    vacuum = LockSession(48211, "psql", "dba.okafor", "active", (), transaction_s=900, statement="VACUUM (FULL) claims")
    waiters = [
        LockSession(pid, "claims-api", "claims", "active", (48211,), "AccessShareLock on relation claims", wait_s=30.0)
        for pid in (101, 102, 103)
    ]
    asked: list[str] = []

    def query_db_locks(database: str, range: str = "1h", start: str = "", end: str = "") -> ToolResult:
        """Canned lock waits (tests only)."""
        asked.append(database)
        found = DbLocks(database, "", "sql", (vacuum, *waiters))
        return ToolResult("ok", render_locks(found), found)

    toolbox = Toolbox([tool(query_db_locks, choices={"database": ["claims"]})])

    found = check_database_locks(run_over(toolbox), ["claims-api", "claims-db"], ONSET)

    assert asked == ["claims"]  # claims-api is no database; claims-db is the database "claims"
    assert found is not None and (found.service, found.actor) == ("claims-db", "dba.okafor")
    assert "VACUUM (FULL) claims" in found.line and found.blocking.startswith("3 session(s) wait behind it")


# --- saturation on the dependency the walk ended at ------------------------------------------------------------


def test_saturation_is_read_on_the_dependency_too_and_weighs_for_its_deploy() -> None:
    now = NOW
    found = {
        ("order", "p99_latency"): series(
            now, "order", "p99_latency", "ms", (80, 90, 900, 800), changes=[change(now, "15:40", 90, 800)]
        ),
        ("stock", "p99_latency"): series(
            now, "stock", "p99_latency", "ms", (20, 25, 700, 600), changes=[change(now, "15:39", 25, 600)]
        ),
        ("stock", "db_pool_pending"): series(
            now, "stock", "db_pool_pending", "count", (0, 0, 40, 35), changes=[change(now, "15:39", 0.5, 35)]
        ),
        ("order", "db_pool_pending"): steady(now, "order", "db_pool_pending", "count", 0.5),
    }
    run = run_over(metrics_toolbox(found))
    findings = Findings(window_label="4h", service="order", origin="stock", roles={"latency": "p99_latency"})
    for service in ("order", "stock"):
        run.read_metric("the symptom", findings.health.setdefault(service, ServiceHealth(service)), "p99_latency")
    shrink = KeyChange("spring.datasource.hikari.maximum-pool-size", "20", "4", "values.yaml")
    suspect = Suspect(
        "deploy stock 2.1.0", "stock", deploy=deploy("stock", "2.1.0", clock(now, "15:30")), key_changes=[shrink]
    )
    findings.suspects = [suspect]

    saturation_where_it_changed(run, findings, ["db_pool_pending"])

    assert [(s.args["service"], s.args["metric"]) for s in run.steps[2:]] == [
        ("order", "db_pool_pending"),
        ("stock", "db_pool_pending"),
    ]
    assert suspect.score > 0 and "stock db pool pending" in suspect.why[0]
