"""The playbook reads its evidence from the tools' data, and words it as the tools' text shows it."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from bot.playbook.evidence import (
    change_points_of,
    deploys_in,
    log_lines_in,
    moment_from_question,
    new_signatures_in,
    service_from_text,
    signatures_in,
    spikes_of,
)
from bot.playbook.findings import ServiceHealth
from bot.playbook.probes import ProbeRun, Window
from tests.playbook.canned import block, change, clock, deploy, deploys, entry, logs, series, signature, spike
from tools.analysis.configdiff import key_changes_from_diff
from tools.base import Toolbox, ToolResult, tool
from tools.logs.render import render_logs
from tools.logs.summary import LogLine
from tools.metrics.series import finding_lines
from tools.timerange import TimeWindow

NOW = datetime(2026, 11, 29, 16, 0, tzinfo=UTC)

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


def test_change_points_keep_their_numbers_and_read_as_the_text_prints_them():
    shifts = [change(NOW, "16:40", 1180, 230), change(NOW, "15:05", 212, 1180)]
    latency = series(NOW, "order", "p99_latency", "ms", (190, 650, 1240, 1190), changes=shifts)
    points = change_points_of(latency)
    assert [(p.at, p.before_text, p.after_text, p.factor) for p in points] == [
        (clock(NOW, "15:05"), "212 ms", "1,180 ms", "x5.6"),
        (clock(NOW, "16:40"), "1,180 ms", "230 ms", "x0.2"),
    ]
    assert finding_lines(latency)[:2] == [
        "change: 16:40 1,180 ms -> 230 ms (x0.2)",
        "change: 15:05 212 ms -> 1,180 ms (x5.6)",
    ]  # the same words in the model's text
    assert points[0].ratio == 1180 / 212 and points[1].ratio == 230 / 1180


def test_no_change_gives_no_points():
    assert change_points_of(series(NOW, "order", "p99_latency", "ms", (1, 2, 3, 2))) == []


def test_spikes_are_read_in_time_order_with_where_they_came_back_to():
    late = spike(NOW, "15:28", 2, ("15:30", 9), ("15:40", 2))
    early = spike(NOW, "09:10", 2, ("09:12", 40), ("09:30", 2.1))
    found = spikes_of(series(NOW, "catalog", "p99_latency", "ms", (2, 2, 40, 2), spikes=[late, early]))
    assert [(p.at.hour, p.after_text, p.spike) for p, _ in found] == [(9, "40.0 ms", True), (15, "9.0 ms", True)]
    assert [(r.level, r.at) for _, r in found] == [("~2.1 ms", clock(NOW, "09:30")), ("~2.0 ms", clock(NOW, "15:40"))]
    assert change_points_of(series(NOW, "catalog", "p99_latency", "ms", (2, 2, 40, 2), spikes=[late])) == []


def test_signatures_are_read_with_their_example_at_the_level_asked():
    at = datetime(2026, 11, 29, 15, 36, 59, tzinfo=UTC)
    pool = signature("HikariPool-<n> - Connection is not available", 256, at, entry(at, "order", "HikariPool-1 - x"))
    found = ToolResult("ok", "", logs("order", TimeWindow(NOW - timedelta(hours=1), NOW), block(pool)))
    [read] = signatures_in(found)
    assert (read.count, read.text, read.quoted) == (
        256,
        "HikariPool-<n> - Connection is not available",
        "HikariPool-1 - x",
    )
    assert signatures_in(found, "WARN") == [] and new_signatures_in(found) == []


def test_new_signatures_since_an_onset_are_read_at_any_level():
    at = clock(NOW, "15:40")
    slow = signature("slow query on orders: <n> ms", 10, at, entry(at, "order", "slow query on orders: 912 ms", "WARN"))
    window = TimeWindow(NOW - timedelta(hours=1), NOW)
    found = ToolResult("ok", "", logs("order", window, None, onset=clock(NOW, "15:32"), new=block(slow)))
    assert [(s.count, s.text) for s in new_signatures_in(found)] == [(10, "slow query on orders: <n> ms")]


def test_the_newest_lines_are_quoted_as_listed_oldest_first_even_across_midnight():
    start = datetime(2026, 11, 28, 23, 55, tzinfo=UTC)
    lines = (
        LogLine(entry(start + timedelta(minutes=9), "search", "reindex job started", "INFO")),
        LogLine(entry(start + timedelta(minutes=2), "search", "cron: nightly batch starting", "INFO")),
    )
    summary = replace(logs("search", TimeWindow(start, start + timedelta(minutes=12)), None), total=2, newest=lines)
    text = render_logs(summary)
    quoted = log_lines_in(ToolResult("ok", text, summary))
    assert quoted == [
        "11-28 23:57:00 INFO search-7xqpn c.e.p.s.Store: cron: nightly batch starting",
        "11-29 00:04:00 INFO search-7xqpn c.e.p.s.Store: reindex job started",
    ]
    assert all(line in text for line in quoted)  # exactly as the text lists them


def test_deploys_are_the_records_of_the_service_asked_about_never_a_version_named_in_a_summary():
    window = TimeWindow(NOW - timedelta(hours=2), NOW)
    ours = deploy("order", "v2.8.1", clock(NOW, "15:02"), "v2.8.0")
    theirs = deploy("web", "v9.1", clock(NOW, "15:10"), summary="Call payment/v2 through the new client")
    found = ToolResult("ok", "", deploys(None, window, ours, theirs))
    assert deploys_in(found, "order") == [ours]
    assert deploys_in(found, "payment") == []  # "payment/v2" in web's summary is no deploy of payment
    assert deploys_in(ToolResult("ok", "text only"), "order") == []


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
    [key] = key_changes_from_diff(DIFF)
    assert (key.key, key.old, key.new) == ("spring.datasource.hikari.maximumPoolSize", "50", "200")
    assert key.path == "services/order/application.yaml"


def test_a_metric_tool_that_answers_text_only_is_not_read_and_says_so():
    """A text-only tool (an MCP server's) carries no data: its text is the model's, the playbook does not parse it."""

    def query_metrics(service: str, metric: str, range: str = "6h") -> str:
        """A text-only metrics tool (tests only)."""
        return "change: 15:05 212 ms -> 1,180 ms (x5.6)"

    run = ProbeRun(Toolbox([tool(query_metrics)]), None, Window("6h", "the last 6 hours", NOW))
    health = ServiceHealth("order")
    assert run.read_metric("order's latency", health, "p99_latency") is None
    assert run.steps[-1].status == "ok" and health.readings == {"p99_latency": None}  # could not be read, not steady
