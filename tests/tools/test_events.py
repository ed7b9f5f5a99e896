"""Operational events: log lines by pattern (real SQLite store), Kubernetes events (the API stand-in), deploy records
that are rollbacks or failed rollouts, and how an event is scored against an onset."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from kubernetes import config

from tests.fakes.kubeapi import FakeKubeAPI, event
from tools.analysis.events import (
    DEFAULT_PATTERNS,
    OpsEvent,
    actor_of,
    event_reasons,
    kind_of,
    naming_line,
    patterns_from_config,
    read_events,
)
from tools.analysis.reasons import score_of
from tools.deploys.records import DeployRecord
from tools.events.deploys import event_from_record
from tools.events.kubernetes import KubeEvents
from tools.events.logs import LogEvents
from tools.logs.sqlite import SqliteLogs

ONSET = datetime(2026, 11, 28, 15, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("statement: ALTER TABLE orders ADD COLUMN gift_note text", "ddl"),
        ("LOG: statement: VACUUM (FULL, VERBOSE) claims", "ddl"),
        ("statement: CREATE INDEX CONCURRENTLY idx_orders_user ON orders (user_id)", "ddl"),
        ("connection authorized: user=dba.x database=orders application_name=psql", "db session"),
        ("starting job nightly-rebuild (full rebuild of search_index)", "job"),
        ("+sdown master cache 10.0.0.1 6379; +switch-master cache 10.0.0.1 6379 10.0.0.2 6379", "failover"),
        ("promoted self to leader by acquiring session lock: db-1 is the new primary", "failover"),
        ("campaign winter-reactivation started by crm.lucia (scheduled): 412,880 recipients", "campaign"),
        ("process 4 still waiting for RowExclusiveLock on relation orders (blocked by ALTER TABLE, pid 4711)", None),
        ("process 9 still waiting for AccessShareLock; blocked by process 48211 (VACUUM FULL, user dba.x)", None),
        ("GET /api/index.html -> 200 (12 ms)", None),
    ],
)
def test_event_lines_are_recognised_and_their_effects_are_not(line: str, kind: str | None) -> None:
    found = kind_of(line, DEFAULT_PATTERNS)
    assert (found[0] if found else None) == kind


def test_the_actor_comes_from_a_field_or_from_the_line() -> None:
    assert actor_of("statement: ALTER TABLE t ADD c", [("actor", "dba.jane")]) == "dba.jane"
    assert actor_of("statement: ALTER TABLE t ADD c (user=ops_admin)", []) == "ops_admin"
    assert actor_of("campaign spring started by crm.lucia (scheduled)", []) == "crm.lucia"
    assert actor_of("+switch-master cache 10.0.0.1 6379", []) == ""


def test_configured_patterns_replace_the_defaults() -> None:
    patterns = patterns_from_config({"job": r"kicked off \S+"}, ["kicked"])
    assert kind_of("export kicked off nightly", patterns) == ("job", "kicked off nightly")
    assert kind_of("statement: ALTER TABLE t ADD c", patterns) is None
    assert patterns_from_config({}, []) == DEFAULT_PATTERNS


def _doc(at: datetime, service: str, message: str, **fields: str) -> str:
    stamp = at.isoformat().replace("+00:00", "Z")
    return json.dumps({"@timestamp": stamp, "service": service, "level": "INFO", "message": message, **fields})


def test_log_events_fold_repeats_keep_the_first_time_and_the_actor(tmp_path: Path) -> None:
    store = SqliteLogs(tmp_path / "logs.db")
    store.ingest_jsonl(
        [
            _doc(ONSET - timedelta(minutes=3), "orders-db", "statement: ALTER TABLE orders ADD c", actor="dba.x"),
            _doc(ONSET - timedelta(minutes=2), "orders-db", "statement: ALTER TABLE orders ADD c", actor="dba.x"),
            *(
                _doc(
                    ONSET + timedelta(seconds=10 * i),
                    "orders-db",
                    f"process {i} still waiting (blocked by ALTER TABLE)",
                )
                for i in range(20)
            ),
            _doc(ONSET - timedelta(minutes=5), "search", "starting job nightly-rebuild"),
            _doc(ONSET - timedelta(minutes=1), "orders", "GET /orders -> 200 (alter ego)"),
        ]
    )
    start, end = ONSET - timedelta(minutes=45), ONSET + timedelta(minutes=5)
    found = LogEvents(store).events(["orders", "orders-db"], start, end)
    assert [(e.kind, e.service, e.actor, e.count) for e in found] == [("ddl", "orders-db", "dba.x", 2)]
    assert found[0].at == ONSET - timedelta(minutes=3) and found[0].phrase == "ALTER TABLE"
    every = LogEvents(store).events([], start, end)
    assert [e.kind for e in every] == ["job", "ddl"]  # oldest first; no service filter


@pytest.fixture
def kube() -> Iterator[FakeKubeAPI]:
    fake = FakeKubeAPI()
    minutes = lambda n: ONSET + timedelta(minutes=n)  # noqa: E731
    fake.add(
        "shop",
        "events",
        event(
            "e1", "Node", "node-3", "NodeNotSchedulable", "Node node-3 status is now: NodeNotSchedulable", minutes(-2)
        ),
        event("e2", "Pod", "order-6f7c9-x2x9q", "Evicted", "The node was drained", minutes(-1), namespace="shop"),
        event("e3", "Pod", "order-6f7c9-k8d2m", "Evicted", "The node was drained", minutes(0), namespace="shop"),
        event("e4", "HorizontalPodAutoscaler", "order", "SuccessfulRescale", "New size: 2", minutes(-4)),
        event("e5", "Deployment", "order", "ScalingReplicaSet", "Scaled up replica set order-6f7c9 to 2", minutes(-5)),
        event("e6", "Pod", "payment-55d-pq7", "Evicted", "The node was drained", minutes(-1), namespace="shop"),
        event("e7", "Pod", "order-6f7c9-x2x9q", "BackOff", "Back-off restarting", minutes(-300), namespace="shop"),
    )
    yield fake
    fake.stop()


def test_kubernetes_events_of_the_services_and_the_nodes(kube: FakeKubeAPI, tmp_path: Path) -> None:
    api = config.new_client_from_config(config_file=str(kube.write_kubeconfig(tmp_path / "kubeconfig")))
    reader = KubeEvents(api, ["shop", "default"])
    found = reader.events(["order", "order-db"], ONSET - timedelta(minutes=45), ONSET + timedelta(minutes=5))
    assert [(e.kind, e.service, e.source) for e in found] == [
        ("scaling", "order", "kubernetes"),  # the HPA's rescale; the rollout's ScalingReplicaSet is a deploy
        ("drain", "node-3", "kubernetes"),
        ("eviction", "order", "kubernetes"),  # two pods, one event: the first
    ]
    assert found[2].at == ONSET - timedelta(minutes=1) and "Evicted Pod order-6f7c9-x2x9q" in found[2].what


def _record(summary: str, status: str = "", version: str = "v2.8.1") -> DeployRecord:
    return DeployRecord("order", version, ONSET - timedelta(minutes=5), "ci-bot", summary, status=status)


def test_rollbacks_and_failed_rollouts_in_deploy_records_are_events() -> None:
    rollback = event_from_record(_record("Rollback to v2.8.0 after alerts"))
    failed = event_from_record(_record("Bump order", status="Failed"))
    assert rollback is not None and rollback.kind == "rollback" and rollback.actor == "ci-bot"
    assert failed is not None and failed.kind == "failed rollout" and "(Failed)" in failed.what
    assert event_from_record(_record("Raise the pool size", status="success")) is None


def _ddl(minutes_before: int, service: str = "orders-db") -> OpsEvent:
    at = ONSET - timedelta(minutes=minutes_before)
    return OpsEvent(at, "ddl", service, "statement: ALTER TABLE orders ADD c", "dba.x", "logs", phrase="ALTER TABLE")


def test_an_event_just_before_the_onset_that_fits_the_symptom_outscores_one_long_before() -> None:
    close = event_reasons(_ddl(3), "orders", ONSET, True, "latency")
    early = event_reasons(_ddl(40), "orders", ONSET, True, "latency")
    unfit = event_reasons(_ddl(3), "orders", ONSET, True, "memory")
    assert score_of(close) == 6 and "just before the onset" in close[0].text
    assert score_of(early) == 5 and "well before the onset" in early[0].text
    assert score_of(unfit) == 4  # a DDL statement does not explain memory
    assert "not a service of the topology" in event_reasons(_ddl(3, "node-3"), "orders", ONSET, None, "latency")[1].text


def test_a_log_line_names_an_event_unless_it_is_the_event_itself() -> None:
    waits = "120x process <n> still waiting for RowExclusiveLock (blocked by ALTER TABLE, pid 4711)"
    itself = "2x statement: ALTER TABLE orders ADD c"
    assert naming_line(_ddl(3), [itself, waits]) == waits
    assert naming_line(_ddl(3), [itself]) is None


def test_a_cluster_that_cannot_be_reached_is_a_check_not_run(tmp_path: Path) -> None:
    missing = tmp_path / "missing-kubeconfig"
    reader = KubeEvents(lambda: config.new_client_from_config(config_file=str(missing)), ["shop"])
    found, notes = read_events([reader], ["order"], ONSET - timedelta(minutes=45), ONSET)
    assert found == []
    assert notes and notes[0].startswith("not run: events from KubeEvents (ConfigException")
