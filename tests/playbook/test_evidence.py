"""The playbook reads tool observations through these readers; they must survive the tools' real text."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.playbook.diffs import deploys_from_text
from bot.playbook.evidence import (
    change_points_from_text,
    listed_services_from_text,
    moment_from_question,
    service_from_text,
    spike_from_text,
    spikes_from_text,
)
from tools.analysis.configdiff import key_changes_from_diff

NOW = datetime(2026, 11, 29, 16, 0, tzinfo=UTC)

METRICS = """p99_latency of order, 2026-11-28 13:05 → 17:05 UTC (4h), step 1m
promql: histogram_quantile(0.99, ...)
min 190 ms · median 650 ms · max 1,240 ms · last 1,190 ms
change: 15:05 212 ms -> 1,180 ms (x5.6)
change: 16:40 1,180 ms -> 230 ms (x0.2)
series (mean per 20m, ms): 13:05 210, 13:25 205"""

DIFF = """diff --git a/services/order/application.yaml b/services/order/application.yaml
--- a/services/order/application.yaml
+++ b/services/order/application.yaml
@@ -4,7 +4,7 @@ spring:
   datasource:
     url: jdbc:postgresql://orders-db:5432/orders
     hikari:
-      maximumPoolSize: 50
+      maximumPoolSize: 200
       minimumIdle: 10
"""


def test_change_lines_are_read_with_times_resolved_against_the_window_end():
    points = change_points_from_text(METRICS, datetime(2026, 11, 28, 17, 5, tzinfo=UTC))
    assert [(p.at.isoformat(), p.before, p.after) for p in points] == [
        ("2026-11-28T15:05:00+00:00", "212 ms", "1,180 ms"),
        ("2026-11-28T16:40:00+00:00", "1,180 ms", "230 ms"),
    ]
    assert points[0].ratio == 5.6 and points[1].ratio < 1


def test_multi_day_change_lines_carry_their_date():
    text = "change: 11-27 23:50 0.2% -> 4.0% (x20.0)"
    assert change_points_from_text(text, NOW)[0].at == datetime(2026, 11, 27, 23, 50, tzinfo=UTC)


def test_no_change_line_gives_no_points():
    assert change_points_from_text("change: none detected", NOW) == []


def test_list_services_observation_gives_every_listed_name_and_not_the_header_or_footer():
    text = (
        "5 services (label 'service'); -> lists a service's downstream services:\n"
        "catalog\ngateway -> order, catalog\norder -> orders-db, payment\norders-db\npayment\n"
        "… and 3 more not shown; query_metrics validates any name."
    )
    assert listed_services_from_text(text) == ["catalog", "gateway", "order", "orders-db", "payment"]


def test_longest_service_name_wins():
    assert service_from_text("orders-db is slow", ["order", "orders-db"]) == "orders-db"
    assert service_from_text("why is the Order service slow?", ["order", "orders-db"]) == "order"
    assert service_from_text("is anything wrong?", ["order"]) is None


def test_question_times_are_read():
    asked = "Why did the order service's p99 latency jump yesterday around 15:05?"
    assert moment_from_question(asked, NOW) == datetime(2026, 11, 28, 15, 5, tzinfo=UTC)
    assert moment_from_question("errors started 45 minutes ago", NOW) == datetime(2026, 11, 29, 15, 15, tzinfo=UTC)
    assert moment_from_question("is checkout healthy?", NOW) is None


def test_yaml_diff_gives_dotted_key_with_old_and_new_value():
    [change] = key_changes_from_diff(DIFF)
    assert (change.key, change.old, change.new) == ("spring.datasource.hikari.maximumPoolSize", "50", "200")
    assert change.path == "services/order/application.yaml"


def test_deploy_lines_give_version_and_time():
    text = "2 deploys of order:\n2026-11-28 15:02 UTC order/v2.8.1 by li.wei: Raise Hikari pool size\n"
    [record] = deploys_from_text(text, "order", NOW)
    assert record.version == "v2.8.1"
    assert record.at == datetime(2026, 11, 28, 15, 2, tzinfo=UTC)


SPIKE = """p99_latency of catalog, 2026-11-28 17:00 → 2026-11-29 17:03 UTC (24.1h), step 5m
min 90.6 ms · median 94.0 ms · max 2,357 ms · last 93.6 ms
change: none detected
spike: 11-29 15:28 93.8 ms -> peak 2,357 ms at 11-29 15:30 (x25.1), back to ~93.8 ms by 11-29 16:10
series (mean per 3h, ms): 11-29 12:00 93.6, 11-29 15:00 498"""


def test_a_spike_line_gives_its_start_level_and_peak():
    spike = spike_from_text(SPIKE, datetime(2026, 11, 29, 17, 3, tzinfo=UTC))
    assert spike is not None and spike.spike
    assert (spike.at, spike.before, spike.after) == (datetime(2026, 11, 29, 15, 28, tzinfo=UTC), "93.8 ms", "2,357 ms")
    assert spike.factor == "x25.1" and spike.ratio == 25.1
    assert change_points_from_text(SPIKE, NOW) == []  # a spike is not a level shift


def test_spikes_are_read_in_time_order_and_the_biggest_is_the_spike():
    text = (
        "spike: 15:28 2 -> peak 9 at 15:30 (x4.5), back to ~2 by 15:40\n"
        "spike: 09:10 2 -> peak 40 at 09:12 (x20.0), back to ~2 by 09:30"
    )
    spikes = spikes_from_text(text, datetime(2026, 11, 29, 17, 3, tzinfo=UTC))
    assert [(p.at.hour, p.after) for p in spikes] == [(9, "40"), (15, "9")]
    biggest = spike_from_text(text, NOW)
    assert biggest is not None and biggest.after == "40"


def test_without_a_spike_line_there_is_no_spike_whatever_the_max():
    steady = SPIKE.replace("\nspike:", "\nnot a spike:")
    assert spike_from_text(steady, NOW) is None
