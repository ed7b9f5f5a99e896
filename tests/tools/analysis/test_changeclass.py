"""Changes judged by what they touch: the symptoms each class explains, and how long its effect can wait."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tools.analysis import changeclass as cc
from tools.analysis import ranking
from tools.analysis.configdiff import ABSENT, KeyChange

ONSET = datetime(2026, 11, 28, 15, 0, tzinfo=UTC)


def test_each_setting_is_classed_by_what_it_touches():
    cases = {
        KeyChange("spec.maxReplicas", "30", "13", "hpa.yaml"): cc.CAPACITY,
        KeyChange("parameters.max_connections", "400", "200", "config/parameter-group.yaml"): cc.POOL,
        KeyChange("consumer.concurrency", ABSENT, "2", "application.yaml"): cc.POOL,
        KeyChange("payments.retries", "1", "5", "config/clients.yaml"): cc.TIMEOUT,
        KeyChange("logging.level.root", "INFO", "DEBUG", "application.yaml"): cc.LOGGING,
        KeyChange("descriptors.value", "gold", "gold_v2", "config/ratelimit.yaml"): cc.RATE_LIMIT,
        KeyChange("canary.enabled", "false", "true", "config/rollout.yaml"): cc.FLAG,
        KeyChange("images[registry/order].newTag", "v1.2.0", "v1.3.0", "kustomization.yaml"): cc.IMAGE,
        KeyChange("footer.text", "Hi", "Hello", "ui.yaml"): cc.COSMETIC,
        KeyChange("JAVA_OPTS", "-Xmx4g", "-Xmx4g -XX:+UseZGC", "jvm.env"): cc.RUNTIME,
    }
    assert {c.key: cc.class_of(c) for c in cases} == {c.key: cls for c, cls in cases.items()}


def test_runtime_flags_are_split_out_of_an_option_string():
    change = KeyChange(
        "JAVA_TOOL_OPTIONS", "-Xms4g -Xmx4g -XX:+UseG1GC", "-XX:MaxRAMPercentage=25 -XX:+UseG1GC", "a.env"
    )
    flags = {c.key: (c.old, c.new) for c in cc.expanded([change])}
    assert flags == {
        "JAVA_TOOL_OPTIONS MaxRAMPercentage": (ABSENT, "25"),
        "JAVA_TOOL_OPTIONS Xms": ("4g", ABSENT),
        "JAVA_TOOL_OPTIONS Xmx": ("4g", ABSENT),
    }
    diff = "--- a/jvm.options\n+++ b/jvm.options\n@@ -1 +1,3 @@\n -Xlog:gc\n+-XX:ParallelGCThreads=1\n"
    diff += "+-XX:-UseBiasedLocking\n"
    assert {c.key: c.new for c in cc.option_changes_from_diff(diff)} == {
        "ParallelGCThreads": "1",
        "UseBiasedLocking": "off",
    }


def test_a_class_explains_only_the_symptoms_it_can():
    assert cc.can_explain(cc.LOGGING, {cc.DISK}) and not cc.can_explain(cc.LOGGING, {cc.ERRORS, cc.LATENCY})
    assert cc.can_explain(cc.RATE_LIMIT, {cc.THROTTLING}) and not cc.can_explain(cc.RATE_LIMIT, {cc.MEMORY})
    assert not cc.can_explain(cc.COSMETIC, cc.ALL_SYMPTOMS) and cc.can_explain(cc.IMAGE, {cc.GC})


def test_a_logging_change_counts_for_a_full_disk_but_not_for_errors():
    verbose = [KeyChange("logging.level.root", "INFO", "DEBUG", "application.yaml")]
    for_errors = ranking.diff_reasons(verbose, [], [])
    for_disk = ranking.diff_reasons(verbose, [], [], symptoms={cc.DISK})
    assert ranking.score_of(for_errors) < 0 < ranking.score_of(for_disk)


def test_an_image_bump_is_code_of_unknown_content_not_trivial():
    bump = [KeyChange("images[registry/order].newTag", "v1.2.0", "v1.3.0", "kustomization.yaml")]
    wording = [KeyChange("footer.text", "Hi", "Hello", "ui.yaml")]
    image = ranking.diff_reasons(bump, [], [])
    assert ranking.score_of(image) == 1 and "unknown content" in image[0].text
    assert ranking.score_of(ranking.diff_reasons(wording, [], [])) < 0


def test_a_gc_flag_inside_an_option_string_is_named_by_a_gc_warning():
    opts = [KeyChange("JVM_OPTS", "-Xmx2g", "-Xmx2g -XX:ParallelGCThreads=1", "jvm.env")]
    signature = ("GC pause exceeded budget, ParallelGCThreads=<n>", "GC pause exceeded budget, ParallelGCThreads=1")
    reasons = ranking.diff_reasons(opts, [], [signature])
    assert any("ParallelGCThreads" in r.text and "log signature" in r.text for r in reasons)


def test_only_a_change_that_can_wait_counts_from_hours_before():
    cap = [KeyChange("spec.maxReplicas", "30", "13", "hpa.yaml")]
    flag = [KeyChange("checkout.enabled", "false", "true", "flags.yaml")]
    landed = ONSET - timedelta(hours=5)
    reason = ranking.delayed_reason(cap, landed, ONSET)
    assert reason is not None and reason.points > 0 and "load meets it" in reason.text
    assert ranking.delayed_reason(flag, landed, ONSET) is None


def test_a_drivers_connection_cap_is_a_pool_that_waits_for_the_daily_load():
    cap = KeyChange("database.max_open_conns", "24", "8", "config/db.yaml")
    assert cc.class_of(cap) == cc.POOL
    reason = ranking.delayed_reason([cap], ONSET - timedelta(hours=3), ONSET)
    assert reason is not None and "pool" in reason.text


def test_lines_of_callers_waiting_for_a_pooled_connection_report_connections():
    for line in (
        "db pool saturated: waited 2210ms for a connection (max_open=8 in_use=8)",
        "start session failed: acquire db conn: context deadline exceeded after 3s",
        "timed out after 30000ms waiting for a database connection",
    ):
        assert cc.CONNECTIONS in cc.symptoms_in_text(line), line
    assert cc.CONNECTIONS not in cc.symptoms_in_text("connection accepted from 10.0.0.4")


def test_a_reader_that_cannot_unmarshal_a_field_reports_decode():
    line = "json: cannot unmarshal string into Go struct field Order.due of type int64; retrying in 5s"
    assert cc.DECODE in cc.symptoms_in_text(line)
