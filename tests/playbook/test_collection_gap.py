"""A gap in metrics collection (every service's series ended at the same minute) is no change of the service: the
playbook says the metrics are missing for every service from HH:MM, what it could still check, and is partial."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.eval import fact_named
from bot.eval.scoring import headline_from_answer
from bot.playbook.evidence import NO_SAMPLES, gap_of, stops_of
from bot.playbook.findings import Findings, ServiceHealth
from bot.playbook.verdict import conclusion_from_findings
from tests.playbook.canned import clock, series, stop
from tests.playbook.test_playbook import _diagnose
from tools.metrics.series import GAP, SERVICE, UNKNOWN, Collection, MetricSeries, stop_line

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
UP_ENDED = "up ended with it: Prometheus stopped scraping it (stopped, or lost the target)"
LAST_RAW = clock(NOW, "11:20")
EVERY = Collection(GAP, UP_ENDED, "all 4 others' http_requests_total ended at the same minute", 0, 4, 4, LAST_RAW)
MOST = Collection(GAP, UP_ENDED, "4 of 5 others' http_requests_total ended at the same minute", 0, 4, 5, LAST_RAW)
THE_SERVICE = Collection(SERVICE, "up == 0: Prometheus cannot scrape it", "its own series is still collected")
NOT_CHECKED = Collection(UNKNOWN, "not checked (no up series for it)", "not checked")


def stopped(collection: Collection | None) -> MetricSeries:
    last = stop(NOW, "11:24", 55.9)
    return series(NOW, "checkout", "p99_latency", "ms", (47, 49, 60, 56), stopped=last, collection=collection)


def test_a_gap_is_read_as_a_gap_from_the_last_raw_sample_never_as_a_stop_of_the_service():
    assert stops_of(stopped(EVERY)) == []
    gap = gap_of(stopped(EVERY))
    assert gap is not None and gap.at == datetime(2026, 12, 1, 11, 20, tzinfo=UTC) and gap.services == "every service"
    assert "cause: collection gap" in stop_line(stop(NOW, "11:24", 55.9), EVERY, "ms", "%H:%M")  # as the model reads
    most = gap_of(stopped(MOST))
    assert most is not None and most.services == "5 of 6 services"


def test_a_stop_of_the_service_or_of_unknown_cause_is_still_a_change_to_no_samples():
    for collection, cause in ((THE_SERVICE, SERVICE), (NOT_CHECKED, UNKNOWN), (None, UNKNOWN)):
        [point] = stops_of(stopped(collection))
        assert point.after is None and point.after_text == NO_SAMPLES and point.cause == cause
        assert gap_of(stopped(collection)) is None


def test_a_stop_of_unknown_cause_is_never_worded_as_the_service_stopping_for_sure():
    [unsure] = stops_of(stopped(NOT_CHECKED))
    worded = ServiceHealth("ranker").describe("p99_latency", unsure)
    assert worded.endswith("(whether the service or the metrics collection stopped is unknown)")
    [sure] = stops_of(stopped(THE_SERVICE))
    assert ServiceHealth("ranker").describe("p99_latency", sure).endswith("so no requests were measured")


def test_the_verdict_on_a_gap_names_every_service_and_the_minute_and_is_partial():
    findings = Findings(window_label="the last 6 hours", roles={"latency": "p99_latency"}, service="checkout")
    findings.health["checkout"] = ServiceHealth("checkout")
    findings.health["checkout"].record("p99_latency", stopped(EVERY))
    answer, complete = conclusion_from_findings(findings)
    headline = headline_from_answer(answer)
    assert not complete and "partial" in headline
    assert "metrics are missing for every service from 11:20 UTC" in headline and "collection" in headline
    assert "not a change in checkout" in headline
    assert "whether checkout still logs after 11:20 (not checked)" in headline and "deploys (not checked)" in headline
    assert "checkout: no significant change" not in answer  # a gap is not "steady"


def test_a_collection_gap_scenario_is_answered_as_a_gap_not_as_the_service(make_sandbox, tmp_path):
    box = make_sandbox("collection-gap")
    trace = _diagnose(box, tmp_path)
    headline = headline_from_answer(trace.answer)
    assert all(fact_named(f, headline) for f in box.scenario.must_name), trace.answer
    assert not trace.complete and "Likely cause" not in headline
    assert "checkout still logs after" in headline  # its logs do not go through Prometheus
    assert not any(s.action == "query_metrics" and s.args.get("range") == "7d" for s in trace.steps)  # no lookback


def test_a_gap_found_by_the_scan_when_no_service_is_named_is_still_answered_as_a_gap(make_sandbox, tmp_path):
    box = make_sandbox("collection-gap")
    trace = _diagnose(box, tmp_path, text="every dashboard went blank about 20 minutes ago, what is down?")
    headline = headline_from_answer(trace.answer)
    assert "metrics are missing for every service from" in headline and "collection" in headline, trace.answer
    assert not trace.complete
