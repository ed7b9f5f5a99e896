"""The playbook reads tool observations through these readers; they must survive the tools' real text."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.agent.diffs import deploys_from_text, key_changes_from_diff
from bot.agent.evidence import (
    change_points_from_text,
    known_services_from_text,
    moment_from_question,
    service_from_text,
    spike_from_text,
)

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


def test_unknown_service_observation_lists_the_known_ones():
    text = "unknown service '?'; known: catalog, gateway, order, orders-db, payment. Did you mean 'order'?"
    assert known_services_from_text(text) == ["catalog", "gateway", "order", "orders-db", "payment"]


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


SPIKE = """p99_latency of catalog, 2026-11-29 12:53 → 16:23 UTC (3.5h), step 1m
min 90.3 ms · median 94.2 ms · max 2,475 ms · last 94.8 ms
change: none detected
series (mean per 20m, ms): 12:53 93.5, 13:00 92.8, 14:20 93.8, 14:40 1,383, 15:00 1,242, 15:20 165"""


def test_a_spike_that_recovered_is_read_from_stats_and_dated_by_the_summary():
    spike = spike_from_text(SPIKE, datetime(2026, 11, 29, 16, 23, tzinfo=UTC))
    assert spike is not None and spike.spike
    assert (spike.at, spike.before, spike.after) == (datetime(2026, 11, 29, 14, 40, tzinfo=UTC), "94.2 ms", "2,475 ms")
    assert spike.factor == ""  # no factor is invented: the tool printed none


def test_steady_series_is_no_spike():
    steady = SPIKE.replace("max 2,475 ms", "max 120 ms")
    assert spike_from_text(steady, NOW) is None
