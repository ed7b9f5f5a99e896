"""Every bundled scenario loads, builds, and reads back from the real Prometheus as its timeline says."""

from __future__ import annotations

import math
import statistics
from datetime import datetime, timedelta

import pytest
from prometheus_api_client import PrometheusConnect

from bot.sandbox.scenario import HELDOUT, Effect, load_scenario, scenario_names
from tests.fakes.backends import RunningSandbox, run_clock_at, start_sandbox

# the held-out scenarios are checked as data too (their series and facts); only the playbook never tunes on them
ALL_SCENARIOS = scenario_names() + scenario_names(HELDOUT)
LEVEL_MINUTES = 10  # a level before and after an effect is read over this span (three 5 min rate() windows)

PROMQL = {
    "p99_ms": "1000 * histogram_quantile(0.99, sum by (le) "
    '(rate(http_request_duration_seconds_bucket{service="$s"}[5m])))',
    "qps": 'sum(rate(http_requests_total{service="$s"}[5m]))',
    "error_ratio": 'sum(rate(http_requests_total{service="$s",status=~"5.."}[5m])) '
    '/ sum(rate(http_requests_total{service="$s"}[5m]))',
    "cpu_cores": 'sum(rate(process_cpu_seconds_total{service="$s"}[5m]))',
    "memory_mb": 'max(process_resident_memory_bytes{service="$s"}) / 1048576',
}


def _value(client: PrometheusConnect, promql: str, when: datetime) -> float:
    result = client.custom_query(promql, params={"time": when.timestamp()})
    assert result, f"no sample for {promql} at {when:%H:%M}"
    return float(result[0]["value"][1])


def _level(client: PrometheusConnect, promql: str, first: datetime, last: datetime) -> float:
    """The median of the values from `first` to `last` at a 5 min step: back-to-back rate() windows, so that a
    single window's noise (a noisy scenario's is 15 % a minute) neither makes an effect nor hides one."""
    result = client.custom_query_range(promql, start_time=first, end_time=last, step="300s")
    values = [v for _, raw in (result[0]["values"] if result else []) if math.isfinite(v := float(raw))]
    assert values, f"no sample for {promql} from {first:%H:%M} to {last:%H:%M}"
    return statistics.median(values)


def _held_minutes(effect: Effect, box: RunningSandbox) -> int:
    """How long past its probe a step or a ramp still holds its level (two more windows), within its end and the
    run clock; 0 for the shapes that move by design (recover, sawtooth) or an effect that ends sooner."""
    end = effect.end_minutes if effect.end_minutes is not None else box.scenario.resolved_minutes
    last = _probe_minutes(effect) + LEVEL_MINUTES
    held = effect.shape in ("step", "ramp") and (end is None or last <= end)
    return LEVEL_MINUTES if held and box.incident_at + timedelta(minutes=last) <= box.now else 0


def _probe_minutes(effect: Effect) -> int:
    """Minutes after the incident where the effect should be fully visible (rate windows are 5 minutes)."""
    if effect.shape == "recover":
        return effect.at_minutes + 5
    if effect.shape == "sawtooth":
        return effect.at_minutes + int(effect.ramp_minutes * 0.9)
    return effect.at_minutes + effect.ramp_minutes + 6


@pytest.mark.parametrize("name", ALL_SCENARIOS)
def test_scenario_timeline_is_visible_in_prometheus(name, make_sandbox):
    _assert_timeline_visible(make_sandbox(name))


def test_a_fast_databases_small_wobble_is_visible_at_a_clock_where_it_once_hid(tmp_path):
    # media-db's p99 12 -> 18.5 ms (x1.54) read 21.7 -> 23.7 ms at this clock (x1.09), when its buckets
    # jumped from 10 to 25 ms: a p99 near a bound swung with the noise, and the wobble was squeezed under 25
    box = start_sandbox("media-resizer-port-db-wobble", tmp_path / "sandbox", run_clock_at(18, 59))
    try:
        _assert_timeline_visible(box)
    finally:
        box.stop()


def _assert_timeline_visible(box: RunningSandbox) -> None:
    name = box.scenario.name
    client = PrometheusConnect(url=box.prometheus_url, disable_ssl=True)
    scenario = box.scenario
    for effect in scenario.timeline:
        promql = PROMQL[effect.metric].replace("$s", effect.service)
        before_at = box.incident_at + timedelta(minutes=min(effect.at_minutes, 0) - 30)
        before = _level(client, promql, before_at - timedelta(minutes=LEVEL_MINUTES), before_at)
        after_at = box.incident_at + timedelta(minutes=_probe_minutes(effect))
        after = _level(client, promql, after_at, after_at + timedelta(minutes=_held_minutes(effect, box)))
        base = scenario.service(effect.service).baseline(effect.metric)
        label = f"{name}: {effect.service} {effect.metric} {before:.4g} -> {after:.4g} (scenario {base} -> {effect.to})"
        if base == 0:
            assert after > 0.5 * effect.to, label
            continue
        if effect.to == 0:  # a service that stopped serving: its rate falls to (next to) nothing
            assert after < 0.05 * before, label
            continue
        expected = math.log(effect.to / base)
        if scenario.noise is not None and abs(expected) < math.log(1.5):
            continue  # a small effect in a noisy scenario with a daily curve hides in the noise by design
        moved = math.log(max(after, 1e-9) / max(before, 1e-9))
        assert moved * expected > 0 and abs(moved) >= 0.3 * abs(expected), label


@pytest.mark.parametrize("name", ALL_SCENARIOS)
def test_scenario_answers_instant_queries_at_the_wall_clock(name, make_sandbox):
    box = make_sandbox(name)
    client = PrometheusConnect(url=box.prometheus_url, disable_ssl=True)
    services = {r["metric"]["service"] for r in client.custom_query("sum by (service) (http_requests_total)")}
    names = {s.name for s in box.scenario.services}
    lost = (
        (set(box.scenario.collection_gap_services) or names)
        if box.scenario.collection_gap_minutes is not None
        else set()
    )
    assert services == names - lost  # a collection gap leaves nothing to answer for the services it hits


def test_oom_scenario_counts_container_restarts(make_sandbox):
    box = make_sandbox("memory-leak-oom")
    client = PrometheusConnect(url=box.prometheus_url, disable_ssl=True)
    promql = 'max(kube_pod_container_status_restarts_total{service="cart"})'
    assert _value(client, promql, box.incident_at - timedelta(minutes=5)) == 0
    assert _value(client, promql, box.incident_at + timedelta(minutes=85)) == 3


def test_nothing_changes_in_the_no_incident_scenario(make_sandbox):
    box = make_sandbox("no-incident")
    assert not box.scenario.expect_incident
    client = PrometheusConnect(url=box.prometheus_url, disable_ssl=True)
    promql = PROMQL["p99_ms"].replace("$s", "checkout")
    before = _value(client, promql, box.incident_at - timedelta(hours=3))
    after = _value(client, promql, box.incident_at)
    assert abs(math.log(after / before)) < 0.2


@pytest.mark.parametrize("name", ALL_SCENARIOS)
def test_scenario_names_its_facts_and_a_user_question(name):
    scenario = load_scenario(name)
    assert scenario.question.strip() and scenario.root_cause.strip()
    assert scenario.must_name, "a scenario must say which facts a correct answer names"
    for fact in scenario.must_name:
        assert fact in scenario.root_cause, f"{fact!r} is not in the root cause of {name}"
