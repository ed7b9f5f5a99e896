"""The one set of ranking rules find_changes and the playbook share (tools/analysis/ranking.py), on plain data."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from tools.analysis import ranking
from tools.analysis.configdiff import KeyChange

ONSET = datetime(2026, 11, 28, 15, 0, tzinfo=UTC)


@dataclass(frozen=True)
class _Deploy:
    service: str
    at: datetime | None
    version: str = "v1"


def test_neighbourhood_walks_two_hops_both_ways():
    topology = {"gateway": ["order", "catalog"], "order": ["orders-db"], "reporting": ["orders-db"]}
    assert ranking.neighbourhood(topology, "order") == ["order", "gateway", "orders-db", "catalog", "reporting"]
    assert ranking.other_callers(topology, "orders-db", "order") == ["reporting"]


def test_the_lookback_follows_the_shape_of_the_symptom():
    assert ranking.lookback_for(slow_changed=False) == timedelta(minutes=45)
    assert ranking.lookback_for(slow_changed=True) == timedelta(hours=6)
    assert ranking.lookback_words(timedelta(hours=6)) == "6 h"


def test_deploys_to_read_keep_the_neighbourhood_and_lookback_the_asked_service_first():
    deploys = [
        _Deploy("order", ONSET - timedelta(minutes=40)),
        _Deploy("catalog", ONSET - timedelta(minutes=2)),
        _Deploy("order", ONSET - timedelta(minutes=5)),
        _Deploy("billing", ONSET - timedelta(minutes=1)),
        _Deploy("order", ONSET + timedelta(minutes=1)),
        _Deploy("order", None),
        _Deploy("order", ONSET - timedelta(hours=2)),
    ]
    picked = ranking.deploys_to_read(deploys, ["order", "catalog"], "order", ONSET, timedelta(minutes=45))
    assert [(d.service, d.at) for d in picked] == [
        ("order", ONSET - timedelta(minutes=5)),
        ("order", ONSET - timedelta(minutes=40)),
        ("catalog", ONSET - timedelta(minutes=2)),
    ]


def test_a_config_key_named_by_a_log_signature_outranks_a_logging_change():
    close = _Deploy("profile", ONSET - timedelta(minutes=2))
    earlier = _Deploy("profile", ONSET - timedelta(minutes=20))
    logging_only = [KeyChange("logging.level.root", "INFO", "DEBUG", "application.yaml")]
    timeout = [KeyChange("lettuce.commandTimeout", "2000", "20", "application.yaml")]
    signatures = [
        ("RedisCommandTimeoutException: Command timed out after <n>ms",) * 2,
        ("commandTimeout exceeded for GET <id>", "commandTimeout exceeded for GET user:42"),
    ]
    near = ranking.deploy_reasons(close, "profile", ONSET, True) + ranking.diff_reasons(logging_only, [], signatures)
    far = ranking.deploy_reasons(earlier, "profile", ONSET, True) + ranking.diff_reasons(timeout, [], signatures)
    assert ranking.score_of(far) > ranking.score_of(near)
    assert any("commandTimeout 2000 → 20" in r.text for r in far)
    assert any(r.text.endswith("GET user:42") for r in far)  # cited as logged, matched on the template
    assert any(r.points < 0 and "no setting" in r.text for r in near)


def test_a_deploy_of_a_service_not_looked_at_neither_gains_nor_loses_for_its_place():
    other = _Deploy("catalog", ONSET - timedelta(minutes=30))
    unknown = ranking.deploy_reasons(other, "order", ONSET, None)
    steady = ranking.deploy_reasons(other, "order", ONSET, False)
    assert [r.points for r in unknown] == [1, 0] and [r.points for r in steady] == [1, -1]
    assert "well before the onset at 15:00 UTC" in unknown[0].text


def test_a_surge_counts_only_when_big_enough_and_just_before_the_onset():
    assert ranking.is_surge(2.0, ONSET - timedelta(minutes=10), ONSET)
    assert not ranking.is_surge(1.2, ONSET - timedelta(minutes=10), ONSET)
    assert not ranking.is_surge(3.0, ONSET - timedelta(minutes=40), ONSET)
    assert not ranking.is_surge(3.0, ONSET + timedelta(minutes=10), ONSET)
    assert ranking.score_of(ranking.surge_reasons("reporting", "orders-db", "order", "x3")) == 5


def test_a_saturation_signal_that_rose_weighs_more_when_the_diff_sized_what_saturated():
    pool = KeyChange("spring.datasource.hikari.maximum-pool-size", "20", "4", "envs/prod/order/values.yaml")
    risen = [("db_pool_pending", "order db pool pending went from 0 to 11 at 15:05 UTC")]
    [sized] = ranking.saturation_reasons(risen, [pool])
    assert sized.points == 3 and "maximum-pool-size 20 → 4" in sized.text and "pool pending went from 0" in sized.text
    [rose] = ranking.saturation_reasons([("gc_pause", "order gc pause went from 1% to 9% at 15:05 UTC")], [pool])
    assert rose.points == 1 and rose.text.startswith("at the onset order gc pause went")
    assert ranking.saturation_reasons([], [pool]) == []


def test_a_metric_and_a_key_name_the_same_thing_by_a_shared_word_or_a_long_prefix():
    hikari = KeyChange("spring.datasource.hikari.maximumPoolSize", "20", "4")
    [reason] = ranking.saturation_reasons([("hikaricp_connections_pending", "rose")], [hikari])
    assert reason.points == 3
    logging_only = KeyChange("logging.level.root", "INFO", "DEBUG")
    [reason] = ranking.saturation_reasons([("db_pool_pending", "rose")], [logging_only])
    assert reason.points == 1
