"""The final message reads at 3 a.m.: the kind of answer, a few findings with human times, what to check next."""

from __future__ import annotations

import json
import re
from typing import Any

from bot import wiring
from bot.engine.types import Intent, Question, Step, StopReason, Totals, Trace
from bot.slack.delivery.answer import is_guess, trace_to_blocks, trace_to_stream_end, trace_to_text
from bot.slack.delivery.findings import deploy_time, finding_from_step, key_changes_text
from bot.slack.delivery.render import limit_violations, step_to_task_chunk
from tests import toolresults
from tests.eval.harness import sandbox_settings
from tests.toolresults import deploys, diff_report, log_summary, record, series


def visible_chars(blocks: list[dict[str, Any]]) -> int:
    """What a reader sees: section/markdown/context text and button labels."""
    texts = []
    for block in blocks:
        if block["type"] in ("section", "markdown"):
            texts.append(block["text"]["text"] if block["type"] == "section" else block["text"])
        texts += [
            e["text"] if "type" in e and e["type"] == "mrkdwn" else e.get("text", {}).get("text", "")
            for e in block.get("elements", ())
        ]
    return sum(len(t) for t in texts)


def step(index: int, action: str, observation: str, status: str = "ok", **args: str) -> Step:
    return Step(index=index, thought="", action=action, args=args, observation=observation, status=status)  # type: ignore[arg-type]


DIFF = diff_report(
    """diff --git a/services/order/application.yaml b/services/order/application.yaml
--- a/services/order/application.yaml
+++ b/services/order/application.yaml
@@ -4,7 +4,7 @@ spring:
   datasource:
     hikari:
-      maximumPoolSize: 50
+      maximumPoolSize: 200
       minimumIdle: 10
diff --git a/services/order/kustomization.yaml b/services/order/kustomization.yaml
--- a/services/order/kustomization.yaml
+++ b/services/order/kustomization.yaml
@@ -2,4 +2,4 @@ resources:
 images:
   - name: registry.example.internal/order
-    newTag: v2.8.0
+    newTag: v2.8.1"""
)
ENV_DIFF = diff_report(
    """diff --git a/services/payments/deployment.yaml b/services/payments/deployment.yaml
--- a/services/payments/deployment.yaml
+++ b/services/payments/deployment.yaml
@@ -20,6 +20,6 @@ spec:
           env:
             - name: ENABLE_ASYNC_CAPTURE
-              value: "false"
+              value: "true"
"""
)


def test_findings_are_what_a_step_found_with_times_read_against_the_deploy() -> None:
    assert key_changes_text(DIFF) == ["hikari.maximumPoolSize 50 → 200", "images.newTag v2.8.0 → v2.8.1"]
    diff = finding_from_step(toolresults.step(4, "query_deploy_diff", DIFF, version="order/v2.8.1"))
    assert (diff.text, diff.version, diff.subject) == (
        "diff: hikari.maximumPoolSize 50 → 200; images.newTag v2.8.0 → v2.8.1",
        "v2.8.1",
        "hikari.maximumPoolSize",
    )
    logs = finding_from_step(toolresults.step(3, "query_logs", log_summary(), service="order", level="ERROR"), "15:02")
    assert logs.text == (
        "order logs: 256× HikariPool-1 - Connection is not available, from 15:05 (3 min after the deploy)"
    )
    metric = toolresults.step(1, "query_metrics", series(changes=[("15:07", 202.0, 1_234.0)]), service="order")
    found = finding_from_step(metric, "15:02").text
    assert found == "order p99 latency 202 ms → 1,234 ms (x6.1) at 15:07 (5 min after the deploy)"
    steady = toolresults.step(2, "query_metrics", series(metric="qps", unit="req/s", changes=[]), service="order")
    assert finding_from_step(steady).text == "order qps: steady"
    deploy = finding_from_step(toolresults.step(5, "query_deploy_records", deploys(record(author="li.wei"))))
    assert deploy.text == "deploy: order v2.8.1 (from v2.8.0) at 15:02 by li.wei: Raise Hikari pool size"
    assert deploy.subject == "order v2.8.1 to v2.8.0"


def test_a_drop_is_a_change_with_the_factor_as_the_text_prints_it() -> None:
    drop = toolresults.step(1, "query_metrics", series(changes=[("15:07", 212.0, 138.4)]), service="order")
    assert finding_from_step(drop).text == "order p99 latency 212 ms → 138 ms (x0.7) at 15:07"


def test_an_env_var_change_names_the_variable() -> None:
    found = finding_from_step(toolresults.step(1, "query_deploy_diff", ENV_DIFF, version="v6.4.0"))
    assert found.text == "diff: env ENABLE_ASYNC_CAPTURE false → true" and found.subject == "env ENABLE_ASYNC_CAPTURE"


def test_the_deploy_the_answer_names_sets_the_time_findings_are_read_against() -> None:
    listed = deploys(record("v2.8.2", "16:10"), record(author="li.wei"))
    steps = [toolresults.step(1, "query_deploy_records", listed)]
    assert (deploy_time(steps), deploy_time(steps, "v2.8.1"), deploy_time([])) == ("16:10", "15:02", "")
    assert finding_from_step(steps[0], version="v2.8.1").text.startswith("deploy: order v2.8.1 (from v2.8.0) at 15:02")


def test_a_step_without_data_keeps_its_first_line() -> None:
    # A text-only tool's result, or a trace stored before results carried data: quoted, never read.
    text = "p99_latency of order, 14:05 → 16:05 UTC\nchange: 15:07 202 ms -> 1,234 ms (x6.1)"
    found = finding_from_step(step(1, "query_metrics", text, service="order"))
    assert (found.text, found.kind) == ("p99_latency of order, 14:05 → 16:05 UTC", "other")


def test_a_check_that_failed_is_not_checked_never_nothing_found() -> None:
    failed = step(1, "query_logs", "timeout after 20 s", status="error", service="order")
    assert finding_from_step(failed).text == "not checked (error): timeout after 20 s"
    assert step_to_task_chunk(failed)["status"] == "error"


def test_the_default_incident_reads_as_a_likely_cause_with_findings_under_1500_chars(sandbox, tmp_path) -> None:
    router = wiring.build_responder(sandbox_settings(sandbox, tmp_path))
    trace = router(Question(sandbox.scenario.question, source="slack"))
    blocks = trace_to_blocks(trace)
    text = json.dumps(blocks, ensure_ascii=False)
    headline = blocks[0]["text"]["text"]
    assert headline.startswith("🔎 *Likely cause*") and "✅" not in text  # a playbook guess is never ticked
    bullets = [line for line in blocks[1]["text"]["text"].splitlines() if line.startswith("• ")]
    assert 3 <= len(bullets) <= 5
    assert any("diff: hikari.maximumPoolSize 50 → 200" in b for b in bullets)
    # the count depends on where the sandbox's window falls against the clock: any count, then the signature
    assert any(
        re.search(r"\d+× HikariPool-1 - Connection is not available", b) and "after the deploy" in b for b in bullets
    )
    assert "*Next:*" in text and "rolling back order v2.8.1" in text
    assert text.count("playbook") == 1 and "promql" not in text and "range=" not in text  # findings, not queries
    assert visible_chars(blocks) < 1_500 and limit_violations(blocks) == []
    fallback = trace_to_text(trace)
    assert fallback.startswith("Likely cause") and "v2.8.1" in fallback and len(fallback) < 600
    # streamed, the same answer is the stream's markdown (stopStream has no `text`), footer and buttons below it
    markdown, tail = trace_to_stream_end(trace)
    assert markdown.startswith("🔎 **Likely cause**") and "- diff: hikari.maximumPoolSize 50 → 200" in markdown
    assert "**Next:** check whether rolling back order v2.8.1" in markdown and "promql" not in markdown
    assert [b["type"] for b in tail] == ["context", "actions"] and len(markdown) + visible_chars(tail) < 1_500


def test_an_answer_that_says_confirmed_is_still_a_likely_cause_without_confirming_evidence() -> None:
    trace = Trace(
        trace_id="t1",
        question="why?",
        protocol="native",
        steps=(step(1, "query_metrics", "x"),),
        answer="Root cause: the pool change.\nConfirmed by the rollback at 15:40 restoring p99.",
        complete=True,
        stop_reason=StopReason.FINISH,
        totals=Totals(steps=1),
    )
    blocks = trace_to_blocks(trace)
    assert blocks[0]["text"]["text"].startswith("🔎 *Likely cause*") and "✅" not in json.dumps(blocks)
    assert is_guess(trace) and trace_to_text(trace).startswith("Likely cause")


def test_a_cause_is_confirmed_when_the_trace_carries_the_tools_confirmation() -> None:
    trace = Trace(
        trace_id="t1",
        question="why?",
        protocol="native",
        steps=(step(1, "query_metrics", "x"),),
        answer="Root cause: deploy order v2.8.1.",
        complete=True,
        stop_reason=StopReason.FINISH,
        totals=Totals(steps=1),
        confirmed_by="the rollback to v2.8.0 at 15:40 UTC: order p99 latency back to ~210 ms by 15:44 UTC",
    )
    assert trace_to_blocks(trace)[0]["text"]["text"].startswith(
        "✅ *Cause confirmed by* the rollback to v2.8.0 at 15:40 UTC: order p99 latency back to ~210 ms"
    )
    assert not is_guess(trace) and trace_to_text(trace).startswith("Cause confirmed: deploy order v2.8.1")


def test_a_release_whose_error_names_the_changed_key_is_confirmed_by_the_real_tools(make_sandbox, tmp_path) -> None:
    box = make_sandbox("two-deploys-earlier")
    trace = wiring.build_responder(sandbox_settings(box, tmp_path))(Question(box.scenario.question, source="slack"))
    assert "commandTimeout" in trace.confirmed_by and "error log" in trace.confirmed_by
    headline = trace_to_blocks(trace)[0]["text"]["text"]
    assert headline.startswith("✅ *Cause confirmed by* profile's error log") and "v3.3.0" in trace_to_text(trace)
    # the evidence and the next step are about the deploy the answer names, not the later one listed first
    body = trace_to_blocks(trace)[1]["text"]["text"]
    assert "• deploy: profile v3.3.0 (from v3.2.7)" in body and "commandTimeout 2000 → 20" in body
    assert "rolling back profile v3.3.0" in body and "v3.3.1" not in body


def test_chit_chat_is_plain_text_without_buttons_or_footer() -> None:
    trace = Trace(
        trace_id="t2",
        question="thanks!",
        protocol="single",
        steps=(),
        answer="You're welcome!",
        complete=True,
        stop_reason=StopReason.FINISH,
        totals=Totals(),
        intent=Intent("chitchat", 0.95, "rules", "thanks"),
    )
    assert trace_to_blocks(trace) == [{"type": "markdown", "text": "You're welcome!"}]
    assert trace_to_text(trace) == "You're welcome!"


def test_the_read_only_answer_to_a_request_to_act_is_plain_text() -> None:
    trace = Trace(
        trace_id="t3",
        question="rollback payment",
        protocol="single",
        steps=(),
        answer="I'm read-only.",
        complete=True,
        stop_reason=StopReason.FINISH,
        totals=Totals(),
        intent=Intent("act", 0.97, "classifier", "classifier: act 0.97"),
    )
    assert trace_to_blocks(trace) == [{"type": "markdown", "text": "I'm read-only."}]
