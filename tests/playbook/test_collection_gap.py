"""A gap in metrics collection (every service's series ended at the same minute) is no change of the service: the
playbook says the metrics are missing for every service from HH:MM, what it could still check, and is partial."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.eval import fact_named
from bot.eval.scoring import headline_from_answer
from bot.playbook import evidence
from bot.playbook.evidence import NO_SAMPLES, gaps_from_text, stops_from_text
from bot.playbook.findings import Findings, ServiceHealth
from bot.playbook.verdict import conclusion_from_findings
from tests.playbook.test_playbook import _diagnose
from tools.metrics import collection

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
HEAD = "stopped: no samples after 11:24 (last 55.9 ms), 36m to the window's end; "
GAP = HEAD + (
    "cause: collection gap (scrape health: up ended with it: Prometheus stopped scraping it (stopped, or "
    "lost the target); other services: all 4 others' http_requests_total ended at the same minute (its "
    "last sample 11:20))"
)
MOST = GAP.replace("all 4 others'", "4 of 5 others'")
SERVICE = HEAD + (
    "cause: the service (scrape health: up == 0: Prometheus cannot scrape it (down, or unreachable "
    "from Prometheus); other services: its own http_requests_total is still collected)"
)
UNKNOWN = HEAD + "cause: unknown (scrape health: not checked (no up series for it); other services: not checked)"


def test_a_gap_is_read_as_a_gap_from_the_last_raw_sample_never_as_a_stop_of_the_service():
    assert evidence.GAP == collection.GAP  # the playbook reads the words the tool prints
    assert stops_from_text(GAP, NOW) == []
    [gap] = gaps_from_text(GAP, NOW)
    assert gap.at == datetime(2026, 12, 1, 11, 20, tzinfo=UTC) and gap.services == "every service"
    assert gaps_from_text(MOST, NOW)[0].services == "5 of 6 services"


def test_a_stop_of_the_service_or_of_unknown_cause_is_still_a_change_to_no_samples():
    for text, cause in ((SERVICE, "the service"), (UNKNOWN, "unknown"), (HEAD.rstrip("; "), "")):
        [point] = stops_from_text(text, NOW)
        assert point.after == NO_SAMPLES and point.cause == cause and gaps_from_text(text, NOW) == []


def test_a_stop_of_unknown_cause_is_never_worded_as_the_service_stopping_for_sure():
    [point] = stops_from_text(UNKNOWN, NOW)
    worded = ServiceHealth("ranker").describe("p99_latency", point)
    assert worded.endswith("(whether the service or the metrics collection stopped is unknown)")


def test_the_verdict_on_a_gap_names_every_service_and_the_minute_and_is_partial():
    findings = Findings(window_label="the last 6 hours", roles={"latency": "p99_latency"}, service="checkout")
    [gap] = gaps_from_text(GAP, NOW)
    findings.health["checkout"] = ServiceHealth("checkout", {"p99_latency": []}, gaps={"p99_latency": gap})
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
