"""Raw backend JSON handed over by a tool reaches the model as compact lines: real Prometheus and osmem bodies."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta

from bot.engine.context import Answer, ContextLimits, Exchange, render_messages, step_to_line
from bot.engine.history.digest import evidence_lines
from bot.engine.history.payloads import payload_reading, text_from_payload
from bot.engine.types import Question, Step
from tests.bench.rawtools import elasticsearch_hits, git_output, prometheus_range
from tests.fakes.backends import RunningSandbox


def _window(sandbox: RunningSandbox, before: timedelta, after: timedelta) -> dict[str, str]:
    iso = lambda at: at.strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
    return {"start": iso(sandbox.incident_at - before), "end": iso(sandbox.incident_at + after)}


def _p99_body(sandbox: RunningSandbox) -> str:
    window = _window(sandbox, timedelta(hours=1), timedelta(hours=1))
    return prometheus_range(sandbox.prometheus_url, {"service": "order", "metric": "p99_latency", **window})


def test_a_prometheus_range_becomes_statistics_the_level_shift_and_a_few_points(sandbox: RunningSandbox) -> None:
    body = _p99_body(sandbox)

    text = text_from_payload(body)

    assert text is not None and len(text) * 5 < len(body)
    lines = text.splitlines()
    assert lines[0].startswith("prometheus matrix: 1 series")
    assert any(line.startswith("min ") and " · median " in line for line in lines)
    change = next(line for line in lines if line.startswith("change: "))
    onset = datetime.strptime(change.split()[1], "%H:%M").replace(
        year=sandbox.incident_at.year,
        month=sandbox.incident_at.month,
        day=sandbox.incident_at.day,
        tzinfo=sandbox.incident_at.tzinfo,
    )
    assert abs(onset - sandbox.incident_at) <= timedelta(minutes=10), change
    assert float(change.split()[2]) * 3 < float(change.split()[4])  # the jump, low -> high
    assert re.match(r"points every \d+[smhd] from \d\d:\d\d: ", lines[-1]), lines[-1]  # the times said once
    assert 8 <= len(lines[-1].split(": ", 1)[1].split()) <= 16


def test_a_flat_series_reports_no_change(sandbox: RunningSandbox) -> None:
    window = _window(sandbox, timedelta(hours=1), timedelta(hours=1))
    body = prometheus_range(sandbox.prometheus_url, {"service": "payment", "metric": "p99_latency", **window})

    text = text_from_payload(body) or ""

    assert "min " in text and "change:" not in text


def test_elasticsearch_hits_are_grouped_by_message_biggest_group_first(
    sandbox: RunningSandbox, es_sandbox: str
) -> None:
    window = _window(sandbox, timedelta(minutes=10), timedelta(minutes=30))
    body = elasticsearch_hits(es_sandbox, {"service": "orders-db", **window}, 50)
    shown = len(json.loads(body)["hits"]["hits"])

    text = text_from_payload(body)

    assert text is not None and len(text) * 5 < len(body)
    head, *groups = [line for line in text.splitlines() if not line.startswith("   example: ")]
    assert head.startswith("elasticsearch: ") and f"{shown} shown" in head
    counts = [int(line.split(". ", 1)[1].split("x ", 1)[0]) for line in groups]
    assert sum(counts) == shown and counts == sorted(counts, reverse=True)
    assert "remaining connection slots are reserved" in text
    assert "host=(" in text  # a field with a few values is counted
    assert "trace_id" not in text  # an id that differs per hit says nothing about the group: left out


def test_an_error_body_is_one_line_and_other_json_is_left_alone() -> None:
    assert text_from_payload('{"status":"error","errorType":"bad_data","error":"parse error at char 5"}') == (
        "prometheus error (bad_data): parse error at char 5"
    )
    assert text_from_payload('{"status": "ok", "items": [1, 2]}') is None
    assert text_from_payload("[1, 2, 3]") is None
    assert text_from_payload("{not json") is None
    assert text_from_payload("min 1 ms · median 2 ms") is None


def test_the_model_is_sent_the_compact_lines_and_the_trace_keeps_the_body(sandbox: RunningSandbox) -> None:
    body = _p99_body(sandbox)
    step = Step(
        index=1,
        thought="Symptom first.",
        action="query_metrics",
        args={"service": "order"},
        observation=body,
        status="ok",
    )
    exchange = Exchange(
        (step,), {"role": "assistant", "content": "Symptom first."}, (Answer("user", "Observation:\n", body),)
    )
    limits = ContextLimits(keep_recent_steps=2)  # the older of two re-sent exchanges is a digest

    newest = render_messages("system", Question("why?"), [exchange], limits, "")[-1]["content"]
    older = render_messages("system", Question("why?"), [exchange, exchange], limits, "")[3]["content"]
    default = render_messages("system", Question("why?"), [exchange, exchange], ContextLimits(), "")[1]["content"]

    assert "prometheus matrix" in newest and '"resultType"' not in newest and "points every " in newest
    assert "change: " in older and "points" not in older  # an older step keeps its evidence lines only
    assert "#1 Symptom first. => query_metrics(order) -> change: " in default and default.count("points every") == 1
    assert step_to_line(step).split(" -> ok: ")[1].startswith("change: ")
    assert step.observation == body
    reading = payload_reading(body)
    assert reading is not None and evidence_lines(reading)  # the rewrite marks its statistics and change lines


def _iso(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_git_log_stat_becomes_one_line_per_commit_and_its_gist_names_the_version(sandbox: RunningSandbox) -> None:
    since, until = _iso(sandbox.incident_at - timedelta(hours=6)), _iso(sandbox.incident_at + timedelta(hours=1))
    raw = git_output(sandbox.git_repo, "log", "--stat", f"--since={since}", f"--until={until}", "--", "services/order")

    text = text_from_payload(raw)

    assert text is not None and len(text) * 3 < len(raw) * 2
    commits = [line for line in raw.splitlines() if line.startswith("commit ")]
    head, *lines = text.splitlines()
    assert head == f"git log: {len(commits)} commit{'s' if len(commits) > 1 else ''}, newest first"
    assert len(lines) == len(commits) and all(line.startswith("commit ") for line in lines)
    assert "v2.8.1" in lines[0] and "; files: services/order/{" in lines[0] and "@example.com" not in text
    step = Step(
        index=4, thought="", action="query_deploy_records", args={"service": "order"}, observation=raw, status="ok"
    )
    assert "v2.8.1" in step_to_line(step) and "files" not in step_to_line(step)


def test_git_show_of_a_tag_keeps_the_changed_lines_and_drops_what_repeats(sandbox: RunningSandbox) -> None:
    raw = git_output(sandbox.git_repo, "show", "order/v2.8.1")

    text = text_from_payload(raw) or ""

    assert text.startswith("tag order/v2.8.1 ") and "\ncommit " in text
    assert "-      maximumPoolSize: 50\n+      maximumPoolSize: 200" in text  # with its context lines
    assert "\nindex " not in text and "\n--- a/" not in text and "\n+++ b/" not in text
    assert "CHANGELOG.md (+" in text and "## v2.8.1" not in text  # a changelog repeats the message
    assert len(text) * 3 < len(raw) * 2


def test_other_text_starting_like_git_is_left_alone() -> None:
    assert text_from_payload("commit the change first, then deploy") is None
    assert text_from_payload("tag order/v2.8.1 was pushed") is None


def test_a_series_with_gaps_keeps_a_time_on_every_point() -> None:
    values = [[1_700_000_000 + 60 * i, "1"] for i in (0, 1, 2, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17)]
    body = {"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {}, "values": values}]}}
    text = text_from_payload(json.dumps(body))
    assert text is not None
    sample = text.splitlines()[-1]
    assert sample.startswith("points: ") and sample.count(":") == 1 + sample.count(",") + 1  # each point timed
