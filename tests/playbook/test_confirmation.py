"""A cause is confirmed only by evidence that would look different if it were wrong; timing alone never confirms.

The steps below carry the tools' own data (their observations rendered from it as the tools render them); the
sandbox runs in tests/slack/delivery/test_answer.py use the real tools.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from bot.engine.types import Step, StopReason, Totals, Trace
from bot.playbook.confirmation import confirmation_from_trace
from tests.playbook.canned import block, clock, deploy, deploys, diff, entry, logs, series, signature, spike, step
from tools.deploys.records import DeployRecord
from tools.logs.render import render_logs
from tools.logs.summary import LogSummary
from tools.metrics.series import MetricSeries, render_series
from tools.timerange import TimeWindow

NOW = datetime(2026, 12, 1, 18, 44, tzinfo=UTC)
SUSPECT = deploy("profile", "v3.3.0", clock(NOW, "17:53"), "v3.2.7", "Fail fast on slow Redis calls")
LATER = deploy("profile", "v3.3.1", clock(NOW, "18:00"), "v3.3.0", "Quieter request logging")
RECORDS = deploys("profile", TimeWindow(clock(NOW, "17:04"), NOW), SUSPECT, LATER)
DIFF = """diff --git a/services/profile/application.yaml b/services/profile/application.yaml
--- a/services/profile/application.yaml
+++ b/services/profile/application.yaml
@@ -4,5 +4,5 @@ spring:
   redis:
     host: profile-redis
     lettuce:
-      commandTimeout: 2000
+      commandTimeout: 20
       shutdownTimeout: 100"""
SIGNATURE = "RedisCommandTimeoutException: Command timed out after 20 millisecond(s) (GET profile:7fb9b077af)"
TEMPLATE = "RedisCommandTimeoutException: Command timed out after <n> millisecond(s) (GET profile:<hex>)"
WINDOW = TimeWindow(clock(NOW, "17:34"), clock(NOW, "18:34"))
FIRST = datetime(2026, 12, 1, 18, 2, 3, tzinfo=UTC)
ANSWER = (
    "Likely cause: deploy profile v3.3.0 at 2026-12-01 17:53 UTC, which changed spring.redis.lettuce."
    "commandTimeout 2000 → 20. Runners-up: deploy profile v3.3.1 (score 3)."
)


def error_logs(
    message: str = SIGNATURE, first: datetime = FIRST, window: TimeWindow = WINDOW, sampled: int = 0
) -> LogSummary:
    """profile's ERROR signatures: one, first seen at `first`, its example `message`."""
    example = entry(datetime(2026, 12, 1, 18, 31, 51, tzinfo=UTC), "profile", message)
    errors = block(signature(TEMPLATE, 267, first, example), sampled=sampled, total=25_000 if sampled else 0)
    return logs("profile", window, errors)


def trace(*steps: Step, answer: str = ANSWER, complete: bool = True) -> Trace:
    return Trace(
        trace_id="t",
        question="which release?",
        protocol="native",
        steps=steps,
        answer=answer,
        complete=complete,
        stop_reason=StopReason.FINISH,
        totals=Totals(steps=len(steps)),
    )


def logs_run(
    found: LogSummary | None = None, diff_text: str = DIFF, answer: str = ANSWER, complete: bool = True
) -> Trace:
    return trace(
        step(1, "query_deploy_records", RECORDS, service="profile"),
        step(2, "query_deploy_diff", diff(SUSPECT, diff_text), service="profile", version="v3.3.0"),
        step(3, "query_logs", found or error_logs(), service="profile"),
        answer=answer,
        complete=complete,
    )


def test_an_error_that_appears_only_after_the_deploy_and_names_the_changed_key_confirms() -> None:
    confirmed = confirmation_from_trace(logs_run())
    assert confirmed.startswith("profile's error log \"RedisCommandTimeoutException: Command timed out after 20")
    assert "naming spring.redis.lettuce.commandTimeout (first at 18:02 UTC, 9 min after the deploy)" in confirmed


def test_the_same_evidence_does_not_confirm_a_different_cause_named_by_the_answer() -> None:
    other = "Likely cause: deploy profile v3.3.1 at 18:00 changed the log level; v3.3.0 is a runner-up."
    assert confirmation_from_trace(logs_run(answer=other)) == ""


def test_a_partial_answer_is_never_confirmed() -> None:
    assert confirmation_from_trace(logs_run(complete=False)) == ""


def test_an_error_seen_before_the_deploy_does_not_confirm() -> None:
    earlier = error_logs(first=clock(NOW, "17:40"))
    assert confirmation_from_trace(logs_run(earlier)) == ""


def test_a_window_that_starts_after_the_deploy_cannot_show_the_error_was_absent_before() -> None:
    late = error_logs(window=TimeWindow(clock(NOW, "17:55"), WINDOW.end))
    assert confirmation_from_trace(logs_run(late)) == ""


def test_a_sampled_cluster_cannot_tell_when_an_error_first_appeared() -> None:
    sampled = error_logs(sampled=1_000)
    assert "from the newest 1,000 of 25,000" in render_logs(sampled)  # what the model reads
    assert confirmation_from_trace(logs_run(sampled)) == ""


def test_a_signature_listed_as_new_since_the_onset_counts_as_only_after() -> None:
    late = TimeWindow(clock(NOW, "17:55"), WINDOW.end)
    new = error_logs(window=late).signatures
    new_since = logs("profile", late, None, onset=clock(NOW, "18:04"), new=new)
    assert "new signatures (1 of 1, all 267 lines):" in render_logs(new_since)
    assert "commandTimeout" in confirmation_from_trace(logs_run(new_since))


def test_an_error_that_only_lines_up_in_time_does_not_confirm() -> None:
    # the default incident: the pool errors follow the deploy, but nothing in them names maximumPoolSize
    hikari_diff = (
        DIFF.replace("lettuce:", "hikari:")
        .replace("commandTimeout: 2000", "maximumPoolSize: 50")
        .replace("commandTimeout: 20", "maximumPoolSize: 200")
    )
    hikari_logs = error_logs("HikariPool-1 - Connection is not available, request timed out after 30000ms (total=200)")
    assert [c.key for c in diff(SUSPECT, hikari_diff).key_changes] == ["spring.redis.hikari.maximumPoolSize"]
    assert confirmation_from_trace(logs_run(hikari_logs, hikari_diff)) == ""


def test_a_log_naming_the_new_version_proves_the_deploy_ran_not_that_it_broke_anything() -> None:
    tag_diff = DIFF.replace("commandTimeout: 2000", "newTag: v3.2.7").replace("commandTimeout: 20", "newTag: v3.3.0")
    tag_logs = error_logs("startup of profile v3.3.0 failed a health check (GET profile:7fb9b077af)")
    assert confirmation_from_trace(logs_run(tag_logs, tag_diff)) == ""


def test_an_error_naming_the_changed_dependency_address_confirms() -> None:
    moved = DIFF.replace("commandTimeout: 2000", "endpoint: http://rates:8080/v2/rates").replace(
        "commandTimeout: 20", "endpoint: http://rates:8080/v1/rates"
    )
    not_found = error_logs("GET http://rates:8080/v1/rates?base=EUR -> 404 Not Found")
    assert "naming spring.redis.lettuce.endpoint = http://rates:8080/v1/rates" in confirmation_from_trace(
        logs_run(not_found, moved)
    )


ROLLBACK = deploy("profile", "v3.2.7", clock(NOW, "18:20"), "v3.3.1", "Roll back")


def p99(back: str) -> MetricSeries:
    """profile's p99: a spike from 18:04 that came back by `back`."""
    came_back = spike(NOW, "18:04", 97.7, ("18:10", 757), (back, 98))
    return series(NOW, "profile", "p99_latency", "ms", (95, 98, 757, 98), spikes=[came_back])


def rollback_run(rollback: DeployRecord = ROLLBACK, back: str = "18:24", answer: str = ANSWER) -> Trace:
    records = deploys("profile", RECORDS.window, SUSPECT, LATER, rollback)
    return trace(
        step(1, "query_metrics", p99(back), service="profile", metric="p99_latency"),
        step(2, "query_deploy_records", records, service="profile"),
        answer=answer,
    )


def test_a_recovery_right_after_the_rollback_of_the_suspect_deploy_confirms() -> None:
    assert "back to ~98.0 ms by 18:24" in render_series(p99("18:24"))  # what the model reads
    assert confirmation_from_trace(rollback_run()) == (
        "the rollback to v3.2.7 at 18:20 UTC: profile p99 latency back to ~98.0 ms by 18:24 UTC"
    )


def test_a_recovery_before_the_rollback_or_long_after_it_does_not_confirm() -> None:
    assert confirmation_from_trace(rollback_run(back="18:15")) == ""
    assert confirmation_from_trace(rollback_run(back="18:50")) == ""


def test_rolling_back_the_other_deploy_confirms_nothing_about_the_answer() -> None:
    # v3.3.1 was rolled back (to v3.3.0) and nothing changed; the answer names v3.3.0
    other = deploy("profile", "v3.3.0", clock(NOW, "18:20"), "v3.3.1", "Roll back")
    assert confirmation_from_trace(rollback_run(other)) == ""


def test_the_words_of_an_answer_never_confirm() -> None:
    said = replace(
        logs_run(error_logs(first=clock(NOW, "17:40"))),
        answer=f"{ANSWER}\nConfirmed by the logs: the rollback restored p99.",
    )
    assert confirmation_from_trace(said) == ""


def test_a_long_error_is_quoted_where_it_names_the_change() -> None:
    read_timeout = DIFF.replace("commandTimeout: 2000", "readTimeout: 5000").replace(
        "commandTimeout: 20", "readTimeout: 500"
    )
    message = (
        "GET http://warehouse-api:8080/v1/levels/24a675f92e failed: java.net.SocketTimeoutException: Read "
        "timed out (readTimeout=500ms)"
    )
    confirmed = confirmation_from_trace(logs_run(error_logs(message), read_timeout))
    assert '"…' in confirmed and '(readTimeout=500ms)" naming spring.redis.lettuce.readTimeout' in confirmed


def test_a_step_without_data_confirms_nothing() -> None:
    """A text-only (MCP) tool's result carries no data: the playbook does not read its text."""
    text_only = [replace(s, data=None) for s in logs_run().steps]
    assert confirmation_from_trace(replace(logs_run(), steps=tuple(text_only))) == ""
