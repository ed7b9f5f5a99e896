"""What an older step keeps when it is re-sent: the evidence lines its data cites, never a reading of its text."""

from __future__ import annotations

from dataclasses import replace

from bot.engine.context import Answer, ContextLimits, Exchange, render_messages, step_to_line, truncate_observation
from bot.engine.history.digest import Reading, evidence_lines, indexed_evidence, observation_digest, observation_gist
from bot.engine.history.evidence import reading_of
from bot.engine.types import Question, Step
from tests import toolresults
from tests.toolresults import at, deploys, diff_report, log_summary, record, rendered, series
from tools.analysis.changepoints import Spike
from tools.analysis.ranking import ChangeRanking, Onset, Reason, Suspect
from tools.base import ToolData
from tools.logs.summary import OnsetContrast

METRICS = series(changes=[("15:07", 202.0, 1_216.0)])
LOGS = log_summary(count=480)
DIFF = diff_report(
    """diff --git a/services/order/CHANGELOG.md b/services/order/CHANGELOG.md
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
)
DEPLOYS = deploys(record(author="li.wei"), record("v2.8.0", "09:40", author="ana", summary="Fix pagination"))


def read(data: ToolData) -> Reading:
    return reading_of(rendered(data), data)


def test_metric_digest_keeps_the_statistics_and_change_points_not_the_series() -> None:
    text = rendered(METRICS)
    digest = observation_digest(read(METRICS)) or ""
    assert digest.splitlines()[:3] == [text.splitlines()[0], text.splitlines()[2], text.splitlines()[3]]
    assert "promql" not in digest and "series (mean" not in digest
    assert digest.endswith("[digest of a result you have read: 2 other lines left out]")


def test_metric_digest_keeps_a_spike_that_came_and_went_and_the_gist_leads_with_it() -> None:
    spike = Spike(at("15:28"), 93.8, at("15:30"), 2_357.0, at("16:10"), 93.8)
    came_and_went = series("catalog", changes=[], spikes=[spike])
    line = "spike: 15:28 93.8 ms -> peak 2,357 ms at 15:30 (x25.1), back to ~93.8 ms by 16:10"
    assert line in rendered(came_and_went).splitlines() and line in evidence_lines(read(came_and_went))
    assert "series (mean" not in (observation_digest(read(came_and_went)) or "")
    assert observation_gist(read(came_and_went), 200).startswith(line)


def test_log_digest_keeps_counts_signatures_and_one_example_not_stack_frames() -> None:
    digest = observation_digest(read(LOGS)) or ""
    assert "matched 480 lines · by level, before the level filter: ERROR 480 · INFO 40" in digest
    assert "1. 480x HikariPool-<n>" in digest and "first 15:05:00 last 15:35:00" in digest
    assert "example: 15:35:00 ERROR order order-1 c.z.h.p.HikariPool" in digest and "(total=200" in digest
    assert "SQLTransientConnectionException" in rendered(LOGS) and "SQLTransientConnectionException" not in digest


def test_a_line_of_the_text_the_data_does_not_cite_is_not_evidence() -> None:
    # A stack frame that reads like a status line ("Error: ...") is part of an example, not a finding.
    summary = log_summary()
    assert summary.signatures is not None
    sig = replace(summary.signatures.top[0], stack=("Error: no healthy upstream", "at proxy.go:12"))
    odd = replace(summary, signatures=replace(summary.signatures, top=(sig,)))
    assert "Error: no healthy upstream" in rendered(odd)
    assert all("no healthy upstream" not in line for line in evidence_lines(read(odd)))


def test_diff_digest_keeps_the_changed_settings_per_file_and_drops_the_changelog() -> None:
    assert evidence_lines(read(DIFF)) == [
        "services/order/application.yaml:",
        "- maximumPoolSize: 50",
        "+ maximumPoolSize: 200",
    ]
    digest = observation_digest(read(DIFF)) or ""
    assert digest.startswith("deploy order/v2.8.1 at 2026-11-28T15:02:00Z by alice")
    assert "minimumIdle" not in digest and "CHANGELOG" not in digest.split("\n", 1)[1]


def test_deploy_records_are_all_evidence_so_they_are_kept_whole() -> None:
    assert observation_digest(read(DEPLOYS)) == rendered(DEPLOYS)


def test_a_text_only_result_is_never_read_for_evidence() -> None:
    # An MCP tool's text in a built-in tool's words: without data, nothing in it is taken for a finding.
    text = "12 of 40 lines\nchange: 15:07 202 ms -> 1,216 ms (x6.0)\n1. 12x pool timeout"
    assert evidence_lines(reading_of(text, None)) == []
    assert observation_digest(reading_of(text, None)) is None
    assert observation_gist(reading_of(text, None), 200) == "12 of 40 lines"


def test_gist_names_the_finding_first() -> None:
    assert observation_gist(read(METRICS), 200).startswith("change: 15:07 202 ms -> 1,216 ms (x6.0) | min 202 ms")
    assert observation_gist(read(DIFF), 200) == "maximumPoolSize: 50 -> 200"
    assert observation_gist(read(DEPLOYS), 200).startswith(
        "2026-11-28T15:02:00Z order/v2.8.1 (from v2.8.0) by li.wei: Raise Hikari pool size | 2026-11-28T09:40"
    )
    assert observation_gist(read(LOGS), 120).startswith("480x HikariPool-<n> - Connection is not available")


def test_the_gist_leads_with_the_best_suspect_whatever_its_score() -> None:
    onset = Onset("p99_latency", at("15:05"), 5.6)
    ruled_out = Suspect("deploy", "deploy fraud/v2.2.1 at 13:08", (Reason(-2, "well before the onset"),), "fraud", None)
    best = Suspect("deploy", "deploy order/v2.8.1 at 15:02", (Reason(6, "just before the onset"),), "order", None)
    ranking = ChangeRanking("order", toolresults.WINDOW, onset, suspects=(best, ruled_out))
    assert evidence_lines(read(ranking)) == [
        "1. deploy order/v2.8.1 at 15:02 (score 6): just before the onset",
        "2. deploy fraud/v2.2.1 at 13:08 (score -2): well before the onset",
    ]
    assert observation_gist(read(ranking), 200).startswith("deploy order/v2.8.1 at 15:02 (score 6): just before")


def test_compressed_step_line_carries_the_key_finding() -> None:
    step = toolresults.step(5, "query_deploy_diff", DIFF, version="v2.8.1", service="order")
    assert step_to_line(step) == "#5 query_deploy_diff(version=v2.8.1, service=order) -> ok: maximumPoolSize: 50 -> 200"


def _exchange(index: int, data: ToolData) -> Exchange:
    step = toolresults.step(index, "t", data)
    answer = Answer("tool", observation=step.observation, tool_call_id=f"c{index}", data=data)
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
    long = diff_report(DIFF.diff.replace("     hikari:\n", f"{context}\n     hikari:\n") + "\n" + context)
    reading = read(long)
    cut = truncate_observation(reading.text, 1_200, indexed_evidence(reading))

    assert "lines) cut; narrow the query to see them; its evidence lines follow ...]" in cut
    assert "services/order/application.yaml:\n- maximumPoolSize: 50\n+ maximumPoolSize: 200" in cut
    assert "[... end of the cut part ...]" in cut and len(cut) < 1_400
    assert "its evidence lines follow" not in truncate_observation(reading.text, 1_200)  # told none: a plain cut


def test_cutting_a_long_log_search_keeps_every_signature_new_since_the_onset() -> None:
    # render_logs prints the new-since-onset block first; the cut must keep it over the older top errors
    old = log_summary(count=900, message="push to device 7f3a failed: APNs BadDeviceToken", first="14:00")
    assert old.signatures is not None
    new = tuple(
        replace(
            old.signatures.top[0],
            template=f"{what} since the reconnect wave <n>",
            count=40 + n,
            first_at=at(f"15:{10 + n:02d}"),
            example=replace(old.signatures.top[0].example, message=f"{what} since the reconnect wave {n}"),
        )
        for n, what in enumerate(("client connected", "listener reached max_conn_rate", "flushed buffered readings"))
    )
    block = replace(old.signatures, top=new, total=sum(s.count for s in new), sampled=len(new), distinct=len(new))
    contrast = OnsetContrast(at("15:08"), 2, 5, block, since=at("15:07"), baseline_start=at("14:07"))
    reading = read(replace(old, onset=contrast))
    cut = truncate_observation(reading.text, 900, indexed_evidence(reading))

    assert "its evidence lines follow" in cut
    for what in ("client connected", "listener reached max_conn_rate", "flushed buffered readings"):
        assert f"{what} since the reconnect wave" in cut, cut


def test_raw_lines_in_no_known_form_are_folded_with_a_count_and_the_last_one() -> None:
    raw = "\n".join(
        ["12 of 1,843 lines (ERROR, 1h)"]
        + [f"2026-11-28T15:05:{i:02d}Z ERROR order trace={i:08x} pool timed out (waiting={i})" for i in range(12)]
        + ["a one-off line", "another one-off line"]
    )
    digest = observation_digest(Reading(raw)) or ""
    assert digest.splitlines()[:2] == ["12 of 1,843 lines (ERROR, 1h)", raw.splitlines()[1]]
    assert "… 11 more like this, the last: 2026-11-28T15:05:11Z ERROR order trace=0000000b" in digest
    assert "waiting=11" in digest and "a one-off line\nanother one-off line" in digest
    assert digest.endswith("[lines alike but for numbers and ids folded into the first, a count and the last]")
    assert observation_digest(Reading("header\nplain\ntext")) is None


ENV_DIFF = """diff --git a/services/payments/deployment.yaml b/services/payments/deployment.yaml
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
    report = diff_report(ENV_DIFF, record("v6.4.0", "10:32", service="payments", summary="Flags: async capture"))
    assert evidence_lines(read(report)) == [
        "services/payments/deployment.yaml:",
        "  name: ENABLE_ASYNC_CAPTURE",
        '- value: "false"',
        '+ value: "true"',
    ]


def test_a_step_stored_without_data_is_shown_by_its_first_line() -> None:
    # A trace stored before results carried data: its text is quoted, never read back.
    old = Step(2, "", "query_metrics", {"service": "order"}, rendered(METRICS), "ok")
    assert step_to_line(old) == f"#2 query_metrics(service=order) -> ok: {rendered(METRICS).splitlines()[0]}"
    assert observation_digest(reading_of(old.observation, None)) is None


def test_a_cited_line_the_text_does_not_show_is_still_re_sent_but_never_placed_in_a_cut() -> None:
    shifted = reading_of("other text\nmore", METRICS)  # a text that is not this data's rendering
    assert all(index == -1 for index, _ in indexed_evidence(shifted))
    assert evidence_lines(shifted)[0].startswith("min 202 ms")
