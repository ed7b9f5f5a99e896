"""How the playbook words what it found: a spike that came back is told as one, with where it came back to."""

from __future__ import annotations

import typing
from datetime import UTC, datetime

from bot.config import MetricTemplate
from bot.playbook.evidence import ChangePoint, Recovery, change_points_of, spikes_of
from bot.playbook.findings import ROLES, Findings, ServiceHealth, describe_change, excursion
from bot.playbook.verdict import conclusion_from_findings
from tests.playbook.canned import change, clock, series, spike
from tools.metrics.series import MetricSeries, finding_lines

NOW = datetime(2026, 11, 29, 17, 14, tzinfo=UTC)


def plateau(shift: tuple[str, float, float] = ("15:39", 246, 2173)) -> MetricSeries:
    """gateway's p99: a change point and a spike for the same excursion (one minute points over a plateau)."""
    peak = spike(NOW, "15:39", 246, ("15:43", 2675), ("16:16", 243))
    level = change(NOW, *shift)
    return series(NOW, "gateway", "p99_latency", "ms", (231, 246, 2675, 243), changes=[level], spikes=[peak])


def found(reading: MetricSeries) -> tuple[ChangePoint, Recovery] | None:
    return excursion(spikes_of(reading), change_points_of(reading))


def test_a_plateau_seen_as_change_and_spike_is_reported_as_the_spike_with_its_recovery() -> None:
    assert finding_lines(plateau())[1] == (
        "spike: 15:39 246 ms -> peak 2,675 ms at 15:43 (x10.9), back to ~243 ms by 16:16"
    )  # what the model reads
    reported = found(plateau())
    assert reported is not None
    point, recovery = reported
    assert point.spike and (point.before_text, point.after_text, point.factor) == ("246 ms", "2,675 ms", "x10.9")
    assert recovery == Recovery("~243 ms", datetime(2026, 11, 29, 16, 16, tzinfo=UTC))


def test_spike_wording_says_the_level_before_the_spike_and_when_it_recovered() -> None:
    reported = found(plateau())
    assert reported is not None
    text = describe_change("gateway", "p99_latency", *reported)
    assert text == (
        "gateway p99 latency spiked at 15:39 UTC from 246 ms (its level before the spike) to a peak "
        "of 2,675 ms, x10.9; it recovered to ~243 ms by 16:16 UTC"
    )
    assert "median" not in text and "went from" not in text


def test_a_level_shift_outside_the_spike_keeps_the_change_points() -> None:
    assert found(plateau(("14:00", 120, 246))) is None  # it did not come back to where it was before 14:00


def test_a_spike_from_zero_is_reported_without_a_factor() -> None:
    blip = spike(NOW, "14:44", 0, ("14:45", 1.0), ("15:00", 0))
    reported = found(series(NOW, "cart", "restarts", "", (0, 0, 1, 0), spikes=[blip]))
    assert reported is not None
    point, recovery = reported
    assert point.at == datetime(2026, 11, 29, 14, 44, tzinfo=UTC) and recovery == Recovery("~0", blip.back_at)
    worded = describe_change("cart", "restarts", point, recovery)
    assert worded.endswith("to a peak of 1.0; it recovered to ~0 by 15:00 UTC")  # the tool printed "from 0"


def test_a_level_shift_is_still_worded_as_one() -> None:
    shift = series(NOW, "order", "p99_latency", "ms", (190, 212, 1240, 1180), changes=[change(NOW, "15:05", 212, 1180)])
    [point] = change_points_of(shift)
    assert found(shift) is None
    worded = describe_change("order", "p99_latency", point)
    assert worded == "order p99 latency went from 212 ms to 1,180 ms at 15:05 UTC, x5.6"


SEARCH_ROLES = {"latency": "lat", "traffic": "rps", "cpu": "cores"}


def search_findings(cpu_at: str, traffic_at: str) -> Findings:
    """search's latency, traffic and CPU each with one change point, read as the tool prints them."""
    health = ServiceHealth(
        "search",
        readings={
            "lat": [ChangePoint(clock(NOW, "15:38"), 190, 970, "ms", 970 / 190)],
            "rps": [ChangePoint(clock(NOW, traffic_at), 190, 583, "req/s", 583 / 190)],
            "cores": [ChangePoint(clock(NOW, cpu_at), 1.5, 4.8, "cores", 4.8 / 1.5)],
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
    # "saturation" is the role many entries share: check_saturation reads every one of them; query_metrics reads
    # the 4xx and 429 shares beside the 5xx, and the outbound calls and retries per called service
    tool_roles = ("client_errors", "rate_limited", "client_calls", "client_retries")
    assert typing.get_args(MetricTemplate.model_fields["role"].annotation) == (*ROLES, "saturation", *tool_roles, "")


def test_cpu_changing_at_the_same_point_as_latency_still_sends_the_playbook_looking_for_a_job() -> None:
    from bot.playbook.diagnosis import saturation_at_onset

    at = datetime(2026, 11, 29, 15, 55, tzinfo=UTC)
    health = ServiceHealth(
        "recommendation",
        {
            "p99_latency": [ChangePoint(at, 132, 2498, "ms", 2498 / 132)],
            "cpu_usage": [ChangePoint(at, 1.7, 4.6, "cores", 4.6 / 1.7)],
        },
    )
    findings = Findings("24h", roles={"latency": "p99_latency", "cpu": "cpu_usage"}, health={"recommendation": health})
    first = findings.first_change("recommendation")
    assert first is not None and first[0] == "p99_latency"  # the tie goes to latency, read first
    assert saturation_at_onset(findings, "recommendation", first) == at
    latency_only = ServiceHealth("recommendation", {"p99_latency": health.readings["p99_latency"]})
    steady = Findings("24h", roles=findings.roles, health={"recommendation": latency_only})
    assert saturation_at_onset(steady, "recommendation", first) is None
