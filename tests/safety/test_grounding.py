"""The grounding check flags numbers, versions and times in an answer that no observation backs up."""

from __future__ import annotations

import pytest

from bot.engine.types import Step, StopReason, Totals, Trace
from bot.safety.grounding import claims_from_text, mark_unverified, unverified_claims

EVIDENCE = [
    "order p99_latency 24h: change: 15:05 212 ms -> 1,180 ms (x5.6)",
    "order/v2.8.1 deployed 2026-11-28T15:02:00Z by alice: hikari.maximumPoolSize 50 -> 200",
    "ERROR HikariPool-1 - Connection is not available, request timed out after 30000ms. host 10.0.0.5",
    "5.566037736",
    "456.6037736",
    "memory 1.5 GiB, qps 240 req/s, error_rate 4.2%",
    "series (mean per 2h, ms): 14:00 205, 16:00 990",
    "deploy telemetry-ingest/v3.6.0-config.1 at 15:09 by dev.tomasz; the listings 8.12 release at 14:40",
]

# (case, answer, expected unverified claims)
CASES: list[tuple[str, str, list[str]]] = [
    ("grounded_answer", "order v2.8.1 raised maximumPoolSize 50 -> 200; p99 212 ms -> 1,180 ms at 15:05.", []),
    ("invented_number", "p99 rose to 1,180 ms, then to 2,400 ms.", ["2,400 ms"]),
    ("invented_version", "Rolled out order v9.9.9 at 15:02.", ["v9.9.9"]),
    ("thousands_separator_and_spacing", "p99 1180ms (was 212ms)", []),
    ("unit_conversion_within_dimension", "p99 reached 1.2 s; timeouts after 30 s", []),
    ("different_unit_stays_unverified", "p99 reached 1180 s", ["1180 s"]),
    ("number_seen_only_with_other_dimension", "memory reached 240 MB", ["240 MB"]),
    ("unit_stated_in_a_header_backs_the_value", "the hourly mean was 205 ms", []),
    ("ratio_both_spellings", "latency grew 5.6x (x5.6), roughly 5x", []),
    ("calculator_output_backs_dimensionless", "p99 rose 456% (5.57x)", []),
    ("rounded_and_truncated", "error rate 4%, memory 1.5 GB, qps 240 rps", []),
    ("wrong_precision_is_unverified", "error rate 4.5%", ["4.5%"]),
    ("small_counts_ignored", "I checked 3 services in 4 steps; 2 of them were fine.", []),
    ("small_number_with_unit_is_a_claim", "it recovered after 7 min", ["7 min"]),
    ("bare_number_backed_by_any_unit", "pool size 200; timeout 30000", []),
    ("version_without_v_prefix", "order 2.8.1 is the culprit", []),
    ("version_prefix_of_another_is_not_enough", "v2.8 is the culprit", ["v2.8"]),
    ("ip_like_literal", "node 10.0.0.5 and 10.0.0.6", ["10.0.0.6"]),
    ("time_trivially_equal_to_iso", "deployed at 15:02:00, spike at 3:05 PM", []),
    ("invented_time", "spike at 16:10", ["16:10"]),
    ("date_from_timestamp", "on 2026-11-28", []),
    ("invented_date", "on 2026-11-27", ["2026-11-27"]),
    ("question_is_evidence", "since 14:00 the order service is slow", []),
    ("thousands_suffix", "about 0.24k req/s, timeouts after 30k ms", []),
    ("thousands_suffix_at_its_precision", "qps 2.4k", ["2.4k"]),
    (
        "chinese_answer_without_spaces",
        "P99 从212ms升至1180ms，15:05开始；数据库耗时42ms，版本v9.9.9已回滚",
        ["42ms", "v9.9.9"],
    ),
    ("duplicates_reported_once", "42 ms, then 42 ms again", ["42 ms"]),
    ("a_pre_release_version_ending_a_sentence", "The cause is release v3.6.0-config.1.", []),
    ("v_written_for_a_release_the_evidence_names_without_it", "Not the v8.12 release; not v9.12 either.", ["v9.12"]),
    ("identifiers_are_not_numbers", "p99 and 5xx errors; pod order-7f9c4d; trace 4bf92f3577b34da6", []),
]


@pytest.mark.parametrize(("answer", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_unverified_claims(answer: str, expected: list[str]) -> None:
    assert unverified_claims(answer, [*EVIDENCE, "why is order slow since 14:00?"]) == expected


@pytest.mark.parametrize(("answer", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_order_the_evidence_comes_in_changes_nothing(answer: str, expected: list[str]) -> None:
    """Evidence is read shortest first and reading stops once every claim is backed: any order, the same claims."""
    evidence = [*EVIDENCE, "why is order slow since 14:00?"]
    assert unverified_claims(answer, evidence[::-1]) == unverified_claims(answer, sorted(evidence)) == expected


def test_claims_keep_their_written_form_and_order() -> None:
    claims = claims_from_text("v2.8.1 at 15:02: p99 1,180 ms (x5.6)")
    assert [c.text for c in claims] == ["v2.8.1", "15:02", "1,180 ms", "x5.6"]
    assert [c.kind for c in claims] == ["literal", "time", "number", "number"]
    assert (claims[2].value, claims[2].unit) == (1180.0, "ms")


def _trace(answer: str) -> Trace:
    step = Step(1, "check latency", "query_metrics", {"service": "order"}, EVIDENCE[0], "ok")
    return Trace(
        trace_id="t1",
        question="why is order slow?",
        protocol="text",
        steps=(step,),
        answer=answer,
        complete=True,
        stop_reason=StopReason.FINISH,
        totals=Totals(steps=1),
    )


def test_the_grounding_check_catches_an_invented_number() -> None:
    marked = mark_unverified(_trace("p99 went from 212 ms to 1,180 ms; the DB answered in 42 ms."))
    assert marked.answer == "p99 went from 212 ms to 1,180 ms; the DB answered in 42 ms.\n\nunverified: 42 ms"
    assert marked.notes == ("unverified: 42 ms",)


def test_grounded_answer_is_unchanged() -> None:
    trace = _trace("p99 went from 212 ms to 1,180 ms (x5.6) at 15:05.")
    assert mark_unverified(trace) is trace


def test_marking_twice_adds_nothing() -> None:
    once = mark_unverified(_trace("p99 hit 42 ms after v9.9.9"))
    twice = mark_unverified(once)
    assert twice.answer == once.answer
    assert twice.answer.endswith("unverified: 42 ms, v9.9.9")
    assert twice.answer.count("unverified:") == 1


def test_observations_only_from_the_trace_count_as_evidence() -> None:
    marked = mark_unverified(_trace("order v2.8.1 raised the pool size"))
    assert marked.notes == ("unverified: v2.8.1",)  # the deploy record was never observed in this trace


def test_a_ratio_and_a_percent_change_of_numbers_the_answer_states_are_backed():
    evidence = ["p99_latency of order\nchange: 15:05 212 ms -> 1,180 ms (x5.6)", "errors: 248 lines"]
    answer = "p99 rose from 212 ms to 1,180 ms, 5.57 times as slow (+457 %), a difference of 968 ms."
    assert unverified_claims(answer, evidence) == []


def test_a_derivation_of_two_numbers_on_one_observation_line_is_backed():
    evidence = ["error_rate of order, step 30s\nchange: 15:06 0.21 % -> 4.1 % (x19.5)"]
    assert unverified_claims("Errors rose about 20-fold, by 3.89 percentage points.", evidence) == []


def test_numbers_from_different_observations_not_stated_in_the_answer_back_no_ratio():
    evidence = ["catalog p99 100 ms", "payment p99 370 ms"]  # x3.7 would be a pair drawn from anywhere
    assert unverified_claims("order is x3.7 slower than before.", evidence) == ["x3.7"]


def test_an_invented_number_stays_unverified_among_many_observed_ones():
    table = "\n".join(f"{minute:02d}:00 {200 + 7 * minute} ms" for minute in range(24))
    evidence = [f"series (mean per 1h, ms):\n{table}", "change: 15:05 212 ms -> 1,180 ms (x5.6)"]
    assert unverified_claims("p99 reached 8,765 ms, from 212 ms to 1,180 ms.", evidence) == ["8,765 ms"]


def test_the_time_between_two_backed_times_the_answer_states_is_backed():
    evidence = ["lock wait since 19:02:00 on claims", "cancelled at 19:35 by dba.x", "last deploy 23:50"]
    answer = (
        "The lock was held from 19:02 to 19:35 (33 min, about 0.5 h); the deploy at 23:50 came 40 min before 00:30."
    )
    assert unverified_claims(answer, evidence) == ["40 min", "00:30"]  # 00:30 is unbacked: no duration from it
    assert unverified_claims("Held from 19:02 to 19:35, 33 minutes.", evidence) == []


def test_a_duration_no_two_backed_times_explain_stays_unverified():
    evidence = ["lock wait since 19:02:00 on claims", "cancelled at 19:35 by dba.x"]
    assert unverified_claims("The lock was held from 19:02 to 19:35, 52 min in all.", evidence) == ["52 min"]
    assert unverified_claims("It took 33 min.", evidence) == ["33 min"]  # the times are not stated: no source
