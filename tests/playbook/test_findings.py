"""How the playbook words what it found: a spike that came back is told as one, with where it came back to."""

from __future__ import annotations

import typing
from datetime import UTC, datetime

from bot.config import MetricTemplate
from bot.playbook.evidence import ChangePoint, change_points_from_text
from bot.playbook.findings import ROLES, Findings, Recovery, ServiceHealth, describe_change, excursion_from_text
from bot.playbook.verdict import conclusion_from_findings

NOW = datetime(2026, 11, 29, 17, 14, tzinfo=UTC)
PLATEAU = """\
gateway p99_latency over 13:44-17:14 UTC (1-minute points)
min 231 ms · median 246 ms · max 2,675 ms · last 243 ms
change: 15:39 246 ms -> 2,173 ms (x8.8)
spike: 15:39 246 ms -> peak 2,675 ms at 15:43 (x10.9), back to ~243 ms by 16:16"""


def excursion(observation: str) -> tuple[ChangePoint, Recovery | None] | None:
    return excursion_from_text(observation, NOW, change_points_from_text(observation, NOW))


def test_a_plateau_seen_as_change_and_spike_is_reported_as_the_spike_with_its_recovery() -> None:
    found = excursion(PLATEAU)
    assert found is not None
    spike, recovery = found
    assert spike.spike and (spike.before, spike.after, spike.factor) == ("246 ms", "2,675 ms", "x10.9")
    assert recovery == Recovery("~243 ms", datetime(2026, 11, 29, 16, 16, tzinfo=UTC))


def test_spike_wording_says_the_level_before_the_spike_and_when_it_recovered() -> None:
    found = excursion(PLATEAU)
    assert found is not None
    text = describe_change("gateway", "p99_latency", *found)
    assert text == (
        "gateway p99 latency spiked at 15:39 UTC from 246 ms (its level before the spike) to a peak "
        "of 2,675 ms, x10.9; it recovered to ~243 ms by 16:16 UTC"
    )
    assert "median" not in text and "went from" not in text


def test_a_level_shift_outside_the_spike_keeps_the_change_points() -> None:
    shifted = PLATEAU.replace("change: 15:39 246 ms -> 2,173 ms (x8.8)", "change: 14:00 120 ms -> 246 ms (x2.1)")
    assert excursion(shifted) is None  # the series did not come back to where it was before 14:00


def test_a_spike_alone_is_reported_and_dates_in_the_line_are_read() -> None:
    text = "change: none detected\nspike: 11-29 14:44 0 -> peak 1.0 at 11-29 14:45 (from 0), back to ~0 by 11-29 15:00"
    found = excursion(text)
    assert found is not None
    spike, recovery = found
    assert spike.at == datetime(2026, 11, 29, 14, 44, tzinfo=UTC)
    assert recovery == Recovery("~0", datetime(2026, 11, 29, 15, 0, tzinfo=UTC))
    worded = describe_change("cart", "restarts", spike, recovery)
    assert worded.endswith("to a peak of 1.0; it recovered to ~0 by 15:00 UTC")  # no factor printed from zero


def test_a_level_shift_is_still_worded_as_one() -> None:
    [point] = change_points_from_text("change: 15:05 212 ms -> 1,180 ms (x5.6)", NOW)
    assert excursion("change: 15:05 212 ms -> 1,180 ms (x5.6)") is None
    worded = describe_change("order", "p99_latency", point)
    assert worded == "order p99 latency went from 212 ms to 1,180 ms at 15:05 UTC, x5.6"


SEARCH_ROLES = {"latency": "lat", "traffic": "rps", "cpu": "cores"}


def search_findings(cpu_at: str, traffic_at: str) -> Findings:
    """search's latency, traffic and CPU each with one change point, read as the tool prints them."""
    health = ServiceHealth(
        "search",
        readings={
            "lat": change_points_from_text("change: 15:38 190 ms -> 970 ms (x5.1)", NOW),
            "rps": change_points_from_text(f"change: {traffic_at} 190 req/s -> 583 req/s (x3.1)", NOW),
            "cores": change_points_from_text(f"change: {cpu_at} 1.5 cores -> 4.8 cores (x3.2)", NOW),
        },
    )
    return Findings(
        "the last 24h",
        service="search",
        health={"search": health},
        roles=dict(SEARCH_ROLES),
        deploys_checked=["search"],
    )  # checked, none found (an unchecked source says so instead)


def test_traffic_that_rose_with_cpu_is_the_cause_even_a_minute_later() -> None:
    answer, complete = conclusion_from_findings(search_findings(cpu_at="15:35", traffic_at="15:36"))
    assert complete and answer.startswith("Likely cause: a traffic surge on search with no deploy before it")
    assert "search rps went from 190 req/s to 583 req/s" in answer  # the operator's metric name


def test_cpu_that_saturated_well_before_traffic_rose_is_the_cause() -> None:
    answer, _ = conclusion_from_findings(search_findings(cpu_at="15:20", traffic_at="15:36"))
    assert answer.startswith("Likely cause: CPU saturation on search")


def test_roles_the_playbook_knows_are_the_roles_a_catalogue_entry_may_have() -> None:
    # "saturation" is the role many entries share: check_saturation reads every one of them
    assert typing.get_args(MetricTemplate.model_fields["role"].annotation) == (*ROLES, "saturation", "")


def test_cpu_changing_at_the_same_point_as_latency_still_sends_the_playbook_looking_for_a_job() -> None:
    from bot.playbook.diagnosis import saturation_at_onset

    at = datetime(2026, 11, 29, 15, 55, tzinfo=UTC)
    health = ServiceHealth(
        "recommendation",
        {
            "p99_latency": [ChangePoint(at, "132 ms", "2,498 ms", 18.9)],
            "cpu_usage": [ChangePoint(at, "1.7 cores", "4.6 cores", 2.7)],
        },
    )
    findings = Findings("24h", roles={"latency": "p99_latency", "cpu": "cpu_usage"}, health={"recommendation": health})
    first = findings.first_change("recommendation")
    assert first is not None and first[0] == "p99_latency"  # the tie goes to latency, read first
    assert saturation_at_onset(findings, "recommendation", first) == at
    latency_only = ServiceHealth("recommendation", {"p99_latency": health.readings["p99_latency"]})
    steady = Findings("24h", roles=findings.roles, health={"recommendation": latency_only})
    assert saturation_at_onset(steady, "recommendation", first) is None
