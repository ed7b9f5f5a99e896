"""A cause is confirmed only by evidence that would look different if it were wrong; timing alone never confirms.

The observations below are in the tools' own output format (as query_deploy_records, query_deploy_diff,
query_logs and query_metrics print them); the sandbox runs in tests/slack/delivery/test_answer.py use the real tools.
"""

from __future__ import annotations

from dataclasses import replace

from bot.engine.types import Step, StopReason, Totals, Trace
from bot.playbook.confirmation import confirmation_from_trace

RECORDS = """deploys of profile, 2026-12-01 17:04 → 18:44 UTC (100m): 2 found, newest first
2026-12-01T18:00:00Z profile/v3.3.1 (from v3.3.0) by nadia.r: Quieter request logging; files: logback.xml
2026-12-01T17:53:00Z profile/v3.3.0 (from v3.2.7) by nadia.r: Fail fast on slow Redis calls; files: application.yaml"""
DIFF = """deploy profile/v3.3.0 at 2026-12-01T17:53:00Z by nadia.r: Fail fast on slow Redis calls
diff against v3.2.7, files: services/profile/application.yaml
diff --git a/services/profile/application.yaml b/services/profile/application.yaml
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
LOGS = "\n".join(
    [
        "logs of profile, 2026-12-01 17:34 → 18:34 UTC (60m), level ERROR",
        "matched 270 lines · by level: ERROR 270 · WARN 6 · INFO 52",
        "top ERROR signatures (1 of 1, all):",
        "1. 267x RedisCommandTimeoutException: Command timed out after <n> millisecond(s) (GET profile:<hex>)  "
        "first 18:02:03 last 18:31:51",
        f"   example: 18:31:51 ERROR profile profile-7xqpn c.e.p.s.ProfileStore: {SIGNATURE} trace=659ae13d",
        "newest 100 of 270 matching lines (repeats folded):",
        f"18:31:51 ERROR profile-7xqpn c.e.p.s.ProfileStore: {SIGNATURE}",
    ]
)
ANSWER = (
    "Likely cause: deploy profile v3.3.0 at 2026-12-01 17:53 UTC, which changed spring.redis.lettuce."
    "commandTimeout 2000 → 20. Runners-up: deploy profile v3.3.1 (score 3)."
)


def step(index: int, action: str, observation: str, **args: str) -> Step:
    return Step(index=index, thought="", action=action, args=args, observation=observation, status="ok")


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


def logs_run(logs: str = LOGS, diff: str = DIFF, answer: str = ANSWER, complete: bool = True) -> Trace:
    return trace(
        step(1, "query_deploy_records", RECORDS, service="profile"),
        step(2, "query_deploy_diff", diff, service="profile", version="v3.3.0"),
        step(3, "query_logs", logs, service="profile"),
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
    earlier = LOGS.replace("first 18:02:03", "first 17:40:12")
    assert confirmation_from_trace(logs_run(logs=earlier)) == ""


def test_a_window_that_starts_after_the_deploy_cannot_show_the_error_was_absent_before() -> None:
    late = LOGS.replace("2026-12-01 17:34 → 18:34", "2026-12-01 17:55 → 18:34")
    assert confirmation_from_trace(logs_run(logs=late)) == ""


def test_a_sampled_cluster_cannot_tell_when_an_error_first_appeared() -> None:
    sampled = LOGS.replace("(1 of 1, all)", "(1 of 1, from the newest 1,000 of 25,000)")
    assert confirmation_from_trace(logs_run(logs=sampled)) == ""


def test_a_signature_listed_as_new_since_the_onset_counts_as_only_after() -> None:
    new_since = LOGS.replace("2026-12-01 17:34 → 18:34", "2026-12-01 17:55 → 18:34").replace(
        "top ERROR signatures (1 of 1, all):",
        "new since 18:04, at any level, absent before it (from the 40 newest lines before it, 270 after):\n"
        "new signatures (1 of 1, all):",
    )
    assert "commandTimeout" in confirmation_from_trace(logs_run(logs=new_since))


def test_an_error_that_only_lines_up_in_time_does_not_confirm() -> None:
    # the default incident: the pool errors follow the deploy, but nothing in them names maximumPoolSize
    hikari_diff = (
        DIFF.replace("lettuce:", "hikari:")
        .replace("commandTimeout: 2000", "maximumPoolSize: 50")
        .replace("commandTimeout: 20", "maximumPoolSize: 200")
    )
    hikari_logs = LOGS.replace(
        SIGNATURE, "HikariPool-1 - Connection is not available, request timed out after 30000ms (total=200)"
    )
    assert "maximumPoolSize: 200" in hikari_diff
    assert confirmation_from_trace(logs_run(logs=hikari_logs, diff=hikari_diff)) == ""


def test_a_log_naming_the_new_version_proves_the_deploy_ran_not_that_it_broke_anything() -> None:
    tag_diff = DIFF.replace("commandTimeout: 2000", "newTag: v3.2.7").replace("commandTimeout: 20", "newTag: v3.3.0")
    tag_logs = LOGS.replace(
        "RedisCommandTimeoutException: Command timed out after 20 millisecond(s)",
        "startup of profile v3.3.0 failed a health check",
    )
    assert confirmation_from_trace(logs_run(logs=tag_logs, diff=tag_diff)) == ""


def test_an_error_naming_the_changed_dependency_address_confirms() -> None:
    diff = DIFF.replace("commandTimeout: 2000", "endpoint: http://rates:8080/v2/rates").replace(
        "commandTimeout: 20", "endpoint: http://rates:8080/v1/rates"
    )
    logs = LOGS.replace(SIGNATURE, "GET http://rates:8080/v1/rates?base=EUR -> 404 Not Found")
    assert "naming spring.redis.lettuce.endpoint = http://rates:8080/v1/rates" in confirmation_from_trace(
        logs_run(logs=logs, diff=diff)
    )


ROLLBACK = RECORDS.replace(
    "2 found, newest first\n",
    "3 found, newest first\n2026-12-01T18:20:00Z profile/v3.2.7 (from v3.3.1) by nadia.r: Roll back; files: none\n",
)
P99 = """p99_latency of profile, 2026-12-01 17:04 → 18:44 UTC (1.7h), step 1m
change: none detected
spike: 18:04 97.7 ms -> peak 757 ms at 18:10 (x7.7), back to ~98 ms by {back}"""


def rollback_run(records: str = ROLLBACK, back: str = "18:24", answer: str = ANSWER) -> Trace:
    return trace(
        step(1, "query_metrics", P99.format(back=back), service="profile", metric="p99_latency"),
        step(2, "query_deploy_records", records, service="profile"),
        answer=answer,
    )


def test_a_recovery_right_after_the_rollback_of_the_suspect_deploy_confirms() -> None:
    assert confirmation_from_trace(rollback_run()) == (
        "the rollback to v3.2.7 at 18:20 UTC: profile p99 latency back to ~98 ms by 18:24 UTC"
    )


def test_a_recovery_before_the_rollback_or_long_after_it_does_not_confirm() -> None:
    assert confirmation_from_trace(rollback_run(back="18:15")) == ""
    assert confirmation_from_trace(rollback_run(back="18:50")) == ""


def test_rolling_back_the_other_deploy_confirms_nothing_about_the_answer() -> None:
    # PM-2304: v3.3.1 was rolled back (to v3.3.0) and nothing changed; the answer names v3.3.0
    other = RECORDS.replace(
        "2 found, newest first\n",
        "3 found, newest first\n2026-12-01T18:20:00Z profile/v3.3.0 (from v3.3.1) by nadia.r: Roll back; files: none\n",
    )
    assert confirmation_from_trace(rollback_run(records=other)) == ""


def test_the_words_of_an_answer_never_confirm() -> None:
    said = replace(
        logs_run(logs=LOGS.replace("first 18:02:03", "first 17:40:12")),
        answer=f"{ANSWER}\nConfirmed by the logs: the rollback restored p99.",
    )
    assert confirmation_from_trace(said) == ""


def test_a_long_error_is_quoted_where_it_names_the_change() -> None:
    diff = DIFF.replace("commandTimeout: 2000", "readTimeout: 5000").replace("commandTimeout: 20", "readTimeout: 500")
    message = (
        "GET http://warehouse-api:8080/v1/levels/24a675f92e failed: java.net.SocketTimeoutException: Read "
        "timed out (readTimeout=500ms)"
    )
    confirmed = confirmation_from_trace(logs_run(logs=LOGS.replace(SIGNATURE, message), diff=diff))
    assert '"…' in confirmed and '(readTimeout=500ms)" naming spring.redis.lettuce.readTimeout' in confirmed
