"""Incident families below the deploys: a GC flag tied to the runtime's own lines, a canary read per version, one node
at fault, a reconnect storm after a caller's pod restarted, stale data traced to the upstream change its consumer names,
and a schema file as a change of contract. End to end over the sandbox (real Prometheus, SQLite, git and the
Kubernetes stand-in), checking the mechanism's own evidence in the headline and the steps; and the pure rules alone."""

from __future__ import annotations

from pathlib import Path

import tools.analysis.changeclass as changeclass
from bot import wiring
from bot.engine.types import Question, Trace
from bot.eval import fact_named
from bot.eval.scoring import blames, headline_from_answer
from bot.playbook.rollout import _stands_apart
from tests.eval.harness import sandbox_settings
from tools.analysis.configdiff import KeyChange
from tools.metrics.views import PartMove


def _trace(box, tmp_path: Path) -> Trace:
    settings = sandbox_settings(box, tmp_path, toolsets=True)  # the Kubernetes API stand-in, as `opsbot eval` has it
    tools = wiring.build_toolbox(settings, clock=lambda: box.now)
    return wiring.build_playbook(settings)(Question(box.scenario.question), tools, now=box.now)


def _named_not_blamed(trace: Trace, named: tuple[str, ...], decoy: str) -> str:
    headline = headline_from_answer(trace.answer)
    assert all(fact_named(f, headline) for f in named), headline
    assert not blames(decoy, headline), headline
    return headline


def test_a_gc_flag_is_tied_to_the_pauses_its_runtime_logs_at_info_since_the_deploy(make_sandbox, tmp_path):
    trace = _trace(make_sandbox("mm-rating-parallelgc"), tmp_path)
    headline = _named_not_blamed(trace, ("mm-rating-svc", "UseParallelGC"), "v14.0.0")
    assert "own runtime lines since the deploy show" in headline and "Pause Full" in headline
    onset_reads = [s for s in trace.steps if s.action == "query_logs" and s.args.get("onset")]
    assert any(s.args["service"] == "mm-rating-svc" and s.args["level"] == "" for s in onset_reads)


def test_a_canary_is_read_per_version_and_named_though_the_question_names_another_service(make_sandbox, tmp_path):
    trace = _trace(make_sandbox("marketplace-search-intermittent-500s"), tmp_path)
    headline = _named_not_blamed(trace, ("search-api", "v4.13.0", "canary"), "listing-indexer v8.0.0")
    assert "only the pods on v4.13.0 degraded" in headline
    assert any(s.action == "query_metrics" and s.args.get("by") == "version" for s in trace.steps)


def test_one_node_whose_pods_alone_log_the_new_errors_is_the_cause_not_the_deploy(make_sandbox, tmp_path):
    trace = _trace(make_sandbox("patient-portal-session-drops"), tmp_path)
    headline = _named_not_blamed(trace, ("node-3", "clock"), "v3.8.2-config.1")
    assert "no deploy caused this" in headline and "alone log new warnings and errors" in headline
    per_node = [s.args.get("where") for s in trace.steps if s.action == "query_logs" and s.args.get("where")]
    assert "node=node-3" in per_node and len(per_node) >= 2  # every node read, not only the guilty one


def test_a_surge_through_a_caller_whose_pod_restarted_is_a_reconnect_storm(make_sandbox, tmp_path):
    trace = _trace(make_sandbox("meter-reading-ingest"), tmp_path)
    headline = _named_not_blamed(trace, ("meter-broker", "reconnect"), "v4.6.0")
    assert "OOMKilled" in headline and "no deploy caused this" in headline


def test_stale_data_is_traced_through_the_stuck_consumer_to_the_upstream_change_its_line_names(make_sandbox, tmp_path):
    trace = _trace(make_sandbox("search-indexer-skips-v3-events"), tmp_path)
    headline = _named_not_blamed(trace, ("search-indexer", "catalog-service", "v4.12.0", "schema_version"), "v7.0.3")
    assert "what changed there: deploy catalog-service v4.12.0" in headline
    read = [
        s.args.get("level") for s in trace.steps if s.action == "query_logs" and s.args.get("service") == "search-api"
    ]
    assert "INFO" in read  # the freshness check logs at INFO


def test_a_producers_schema_file_is_a_change_of_contract_tied_to_its_consumers_decode_errors(make_sandbox, tmp_path):
    trace = _trace(make_sandbox("wealth-portfolio-stale-positions"), tmp_path)
    headline = _named_not_blamed(trace, ("trade-capture", "v5.0.0", "position-indexer"), "portfolio-api v2.14.0")
    assert "TradeExecuted.avsc" in headline and "stopped keeping up" in headline


def test_a_consumer_that_fell_behind_is_said_to_lag_when_the_asked_service_is_healthy(make_sandbox, tmp_path):
    trace = _trace(make_sandbox("storefront-stale-prices-indexer"), tmp_path)
    _named_not_blamed(trace, ("catalog_indexer", "max.poll.records", "lag"), "result_cache_ttl")


DIFF = """diff --git a/svc/config/schema/Trade.avsc b/svc/config/schema/Trade.avsc
--- a/svc/config/schema/Trade.avsc
+++ b/svc/config/schema/Trade.avsc
@@ -1 +1 @@
-{"name": "quantity"}
+{"name": "qty"}
diff --git a/svc/config/app.yaml b/svc/config/app.yaml
--- a/svc/config/app.yaml
+++ b/svc/config/app.yaml
"""


def test_a_schema_file_no_key_parser_reads_becomes_one_change_of_contract() -> None:
    parsed = [KeyChange("timeout_ms", "500", "900", "svc/config/app.yaml")]
    changes = changeclass.with_contract_files(parsed, DIFF)
    assert [c.key for c in changes] == ["timeout_ms", "Trade.avsc"]
    assert changeclass.class_of(changes[1]) == changeclass.CONTRACT
    assert (
        changeclass.class_of(KeyChange("producer.event.schema_version", "2", "3", "events.yaml"))
        == "data schema or message format"
    )


def test_decode_failures_are_a_symptom_a_contract_change_explains_and_a_log_volume_does_not() -> None:
    for line in (
        "SerializationException: Error deserializing Avro message for id 412",
        "skipping event with unsupported schema_version=3 (supported: 1,2)",
    ):
        assert changeclass.DECODE in changeclass.symptoms_in_text(line)
    assert changeclass.DECODE in changeclass.EXPLAINS[changeclass.CONTRACT]
    assert changeclass.DECODE not in changeclass.EXPLAINS[changeclass.LOGGING]


def test_a_version_stands_apart_only_far_above_every_other_one() -> None:
    canary = PartMove("v2", 0.2, 40.0, None, 30, new=True)
    assert _stands_apart(canary, PartMove("v1", 0.2, 0.25, None, 200))
    assert not _stands_apart(canary, PartMove("v1", 0.2, 20.0, None, 200))  # the whole fleet degraded
    assert not _stands_apart(PartMove("v2", 0.0, 0.0, None, 30), PartMove("v1", 0.0, 0.0, None, 200))
