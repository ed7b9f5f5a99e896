"""What an older step keeps when it is re-sent: the evidence lines the tools print, in their stable forms."""

from __future__ import annotations

from bot.engine.context import Answer, ContextLimits, Exchange, render_messages, step_to_line, truncate_observation
from bot.engine.history.digest import evidence_lines, observation_digest, observation_gist
from bot.engine.types import Question, Step

# Observations as tools/metrics/query.py, logs.py and deploys.py print them (from the hikari-pool sandbox).
METRICS = """p99_latency of order, 2026-11-28 14:05 → 16:05 UTC (2h), step 30s
promql: histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{service="order"}[5m])))
min 194 ms · median 366 ms · max 1,265 ms · last 1,222 ms
change: 15:07 202 ms -> 1,216 ms (x6.0)
series (mean per 15m, ms): 14:05 200, 14:15 200, 14:30 199, 14:45 206, 15:00 765, 15:15 1,220, 15:30 1,225"""

LOGS = """logs of order, 2026-11-28 14:35 → 16:05 UTC (90m), level ERROR
matched 480 lines · by level: ERROR 480 · WARN 182 · INFO 88
top ERROR signatures (1 of 1, all):
1. 480x HikariPool-<n> - Connection is not available, request timed out after <n>ms [java.sql.SQLTransientConnectionException]  first 15:05:04 last 16:04:57
   example: 16:04:57 ERROR order order-rn44 c.z.h.p.HikariPool: HikariPool-1 - Connection is not available, request timed out after 30000ms (total=200, active=200, idle=0, waiting=222)
     java.sql.SQLTransientConnectionException: HikariPool-1 - Connection is not available.
     at com.zaxxer.hikari.pool.HikariPool.createTimeoutException(HikariPool.java:696)
     … 3 more lines
newest 100 of 480 matching lines (repeats folded):
16:04:57 ERROR order-rn44 c.z.h.p.HikariPool: HikariPool-1 - Connection is not available, request timed out
  … 99 more like this, back to 15:52:37"""  # noqa: E501

DIFF = """deploy order/v2.8.1 at 2026-11-28T15:02:00Z by li.wei: Raise Hikari pool size for the checkout peak
diff against v2.8.0, files: services/order/CHANGELOG.md, services/order/application.yaml
diff --git a/services/order/CHANGELOG.md b/services/order/CHANGELOG.md
--- a/services/order/CHANGELOG.md
+++ b/services/order/CHANGELOG.md
@@ -8,3 +8,6 @@
 ## v2.8.0
+## v2.8.1
+- Raise Hikari pool size for the checkout peak
diff --git a/services/order/application.yaml b/services/order/application.yaml
--- a/services/order/application.yaml
+++ b/services/order/application.yaml
@@ -4,7 +4,7 @@ spring:
   datasource:
     hikari:
-      maximumPoolSize: 50
+      maximumPoolSize: 200
       minimumIdle: 10"""

DEPLOYS = """deploys of order, 2026-11-28 09:05 → 16:05 UTC (7h): 2 found, newest first
2026-11-28T15:02:00Z order/v2.8.1 (from v2.8.0) by li.wei: Raise Hikari pool size; files: services/order/application.yaml; commit 19653a9543
2026-11-28T09:40:00Z order/v2.8.0 (from v2.7.9) by ana: Fix pagination; files: services/order/api.py; commit 0a1b2c3d4e"""  # noqa: E501


def test_metric_digest_keeps_the_statistics_and_change_points_not_the_series() -> None:
    digest = observation_digest(METRICS) or ""
    assert digest.splitlines()[:3] == [METRICS.splitlines()[0], METRICS.splitlines()[2], METRICS.splitlines()[3]]
    assert "promql" not in digest and "series" not in digest
    assert digest.endswith("[digest of a result you have read: 2 other lines left out]")


SPIKE_METRICS = """p99_latency of catalog, 2026-11-28 17:00 → 2026-11-29 17:03 UTC (24.1h), step 5m
promql: histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{service="catalog"}[5m])))
min 90.6 ms · median 94.0 ms · max 2,357 ms · last 93.6 ms
change: none detected
spike: 11-29 15:28 93.8 ms -> peak 2,357 ms at 11-29 15:30 (x25.1), back to ~93.8 ms by 11-29 16:10
series (mean per 3h, ms): 11-29 12:00 93.6, 11-29 15:00 498"""


def test_metric_digest_keeps_a_spike_that_came_and_went_and_the_gist_leads_with_it() -> None:
    spike = SPIKE_METRICS.splitlines()[4]
    assert spike in evidence_lines(SPIKE_METRICS)
    assert "series" not in (observation_digest(SPIKE_METRICS) or "")
    assert observation_gist(SPIKE_METRICS, 200).startswith(spike)


def test_log_digest_keeps_counts_signatures_and_one_example_not_stack_frames_or_raw_lines() -> None:
    digest = observation_digest(LOGS) or ""
    assert "matched 480 lines · by level: ERROR 480 · WARN 182 · INFO 88" in digest
    assert "1. 480x HikariPool-<n>" in digest and "first 15:05:04 last 16:04:57" in digest
    assert "example: 16:04:57 ERROR order" in digest and "(total=200, active=200, idle=0" in digest
    assert "at com.zaxxer" not in digest and "newest 100" not in digest and "99 more like this" not in digest


def test_diff_digest_keeps_the_changed_settings_per_file_and_drops_the_changelog() -> None:
    assert evidence_lines(DIFF) == [
        "services/order/application.yaml:",
        "- maximumPoolSize: 50",
        "+ maximumPoolSize: 200",
    ]
    digest = observation_digest(DIFF) or ""
    assert digest.startswith("deploy order/v2.8.1 at 2026-11-28T15:02:00Z by li.wei")
    assert "minimumIdle" not in digest and "CHANGELOG" not in digest.split("\n", 1)[1]


def test_deploy_records_are_all_evidence_so_they_are_kept_whole() -> None:
    assert observation_digest(DEPLOYS) == DEPLOYS


def test_output_in_no_known_form_has_no_digest() -> None:
    assert observation_digest("free text\nwith nothing the tools print\n") is None


def test_gist_names_the_finding_first() -> None:
    assert observation_gist(METRICS, 200).startswith("change: 15:07 202 ms -> 1,216 ms (x6.0) | min 194 ms")
    assert observation_gist(DIFF, 200) == "maximumPoolSize: 50 -> 200"
    assert observation_gist(DEPLOYS, 200).startswith(
        "2026-11-28T15:02:00Z order/v2.8.1 (from v2.8.0) by li.wei: Raise Hikari pool size | 2026-11-28T09:40"
    )
    assert observation_gist(LOGS, 120).startswith("480x HikariPool-<n> - Connection is not available")


def test_compressed_step_line_carries_the_key_finding() -> None:
    step = Step(5, "", "query_deploy_diff", {"version": "v2.8.1", "service": "order"}, DIFF, "ok")
    assert step_to_line(step) == (
        "#5 query_deploy_diff(version=v2.8.1, service=order) -> ok: maximumPoolSize: 50 -> 200"
    )


def _exchange(index: int, observation: str) -> Exchange:
    step = Step(index, "", "t", {}, observation, "ok")
    answer = Answer("tool", observation=observation, tool_call_id=f"c{index}")
    return Exchange((step,), {"role": "assistant", "content": f"step {index}"}, (answer,))


def test_older_kept_observations_are_digested_and_the_newest_is_sent_whole() -> None:
    exchanges = [_exchange(1, METRICS), _exchange(2, LOGS), _exchange(3, DIFF)]
    messages = render_messages("sys", Question("why?"), exchanges, ContextLimits(keep_recent_steps=3), "[note]")
    metrics, logs, diff = (m["content"] for m in messages if m["role"] == "tool")
    assert "change: 15:07" in metrics and "promql" not in metrics
    assert "1. 480x HikariPool" in logs and "at com.zaxxer" not in logs
    assert "minimumIdle: 10" in diff and "## v2.8.1" in diff  # the newest: verbatim

    limits = ContextLimits(keep_recent_steps=3, digest_read_observations=False)
    whole = render_messages("sys", Question("why?"), exchanges, limits, "")
    assert "promql" in whole[3]["content"] and "at com.zaxxer" in whole[5]["content"]


def test_cutting_a_long_diff_keeps_the_changed_setting_from_its_middle() -> None:
    context = "\n".join(f"       setting{i}: {i}" for i in range(60))
    diff = DIFF.replace("     hikari:\n", f"{context}\n     hikari:\n") + "\n" + context
    cut = truncate_observation(diff, 1_200)

    assert "lines) cut; narrow the query to see them; its evidence lines follow ...]" in cut
    assert "services/order/application.yaml:\n- maximumPoolSize: 50\n+ maximumPoolSize: 200" in cut
    assert "[... end of the cut part ...]" in cut and len(cut) < 1_400


def test_raw_lines_in_no_known_form_are_folded_with_a_count_and_the_last_one() -> None:
    raw = "\n".join(
        ["12 of 1,843 lines (ERROR, 1h)"]
        + [f"2026-11-28T15:05:{i:02d}Z ERROR order trace={i:08x} pool timed out (waiting={i})" for i in range(12)]
        + ["a one-off line", "another one-off line"]
    )
    digest = observation_digest(raw) or ""
    assert digest.splitlines()[:2] == ["12 of 1,843 lines (ERROR, 1h)", raw.splitlines()[1]]
    assert "… 11 more like this, the last: 2026-11-28T15:05:11Z ERROR order trace=0000000b" in digest
    assert "waiting=11" in digest and "a one-off line\nanother one-off line" in digest
    assert digest.endswith("[lines alike but for numbers and ids folded into the first, a count and the last]")
    assert observation_digest("header\nplain\ntext") is None


ENV_DIFF = """deploy payments/v6.4.0 at 2026-11-30T10:32:00Z by tom.b: Flags: async capture for EU
diff --git a/services/payments/deployment.yaml b/services/payments/deployment.yaml
@@ -20,8 +20,8 @@ spec:
           env:
             - name: LOG_LEVEL
               value: info
             - name: ENABLE_ASYNC_CAPTURE
-              value: "false"
+              value: "true"
             - name: REGION
               value: eu-west-1
"""


def test_diff_digest_keeps_the_name_of_an_env_var_whose_value_changed() -> None:
    assert evidence_lines(ENV_DIFF) == [
        "services/payments/deployment.yaml:",
        "  name: ENABLE_ASYNC_CAPTURE",
        '- value: "false"',
        '+ value: "true"',
    ]
