"""Raw backend JSON handed over by a tool reaches the model as compact lines: real Prometheus and osmem bodies."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from bot.engine.context import Answer, ContextLimits, Exchange, render_messages, step_to_line
from bot.engine.digest import evidence_lines
from bot.engine.payloads import text_from_payload
from bot.engine.types import Question, Step
from tests.bench.rawtools import elasticsearch_hits, prometheus_range
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
        year=sandbox.incident_at.year, month=sandbox.incident_at.month, day=sandbox.incident_at.day,
        tzinfo=sandbox.incident_at.tzinfo)
    assert abs(onset - sandbox.incident_at) <= timedelta(minutes=10), change
    assert float(change.split()[2]) * 3 < float(change.split()[4])  # the jump, low -> high
    assert lines[-1].startswith("points: ") and 8 <= lines[-1].count(",") + 1 <= 16


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
    assert "trace_id=(" in text  # an id that differs per hit is counted, not listed


def test_an_error_body_is_one_line_and_other_json_is_left_alone() -> None:
    assert text_from_payload('{"status":"error","errorType":"bad_data","error":"parse error at char 5"}') == (
        "prometheus error (bad_data): parse error at char 5")
    assert text_from_payload('{"status": "ok", "items": [1, 2]}') is None
    assert text_from_payload("[1, 2, 3]") is None
    assert text_from_payload("{not json") is None
    assert text_from_payload("min 1 ms · median 2 ms") is None


def test_the_model_is_sent_the_compact_lines_and_the_trace_keeps_the_body(sandbox: RunningSandbox) -> None:
    body = _p99_body(sandbox)
    step = Step(index=1, thought="Symptom first.", action="query_metrics", args={"service": "order"},
                observation=body, status="ok")
    exchange = Exchange((step,), {"role": "assistant", "content": "Symptom first."},
                        (Answer("user", "Observation:\n", body),))
    limits = ContextLimits()

    newest = render_messages("system", Question("why?"), [exchange], limits, "")[-1]["content"]
    older = render_messages("system", Question("why?"), [exchange, exchange], limits, "")[3]["content"]

    assert "prometheus matrix" in newest and '"resultType"' not in newest and "points: " in newest
    assert "change: " in older and "points: " not in older  # an older step keeps its evidence lines only
    assert step_to_line(step).split(" -> ok: ")[1].startswith("change: ")
    assert step.observation == body
    assert evidence_lines(text_from_payload(body) or "")
