from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from slack_sdk import WebClient

from bot.engine.types import Question, Step, StepObserver, Trace
from bot.safety.access import AccessPolicy
from tests.fakes.slack import BOT_TOKEN, FakeSlackAPI
from tests.http.conftest import ApiServer, canned_responder
from tests.http.payloads import alert_group


def slack_poster(fake_slack: FakeSlackAPI) -> Callable[[str, Question, Trace], None]:
    """Posts like the Slack runner does at its simplest: the question, then the answer in its thread."""
    client = WebClient(token=BOT_TOKEN, base_url=fake_slack.base_url)

    def post(channel: str, question: Question, trace: Trace) -> None:
        parent = client.chat_postMessage(channel=channel, text=question.text)
        client.chat_postMessage(channel=channel, thread_ts=parent["ts"], text=trace.answer)

    return post


def wait_for_trace(api: ApiServer, trace_id: str, timeout_s: float = 20.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        resp = api.get(f"/api/traces/{trace_id}")
        if resp.status_code != 202:
            assert resp.status_code == 200, resp.text
            return resp.json()
        time.sleep(0.05)
    raise AssertionError(f"trace {trace_id} did not finish")


def metric(api: ApiServer, name: str, **labels: str) -> float:
    """Sum of the samples named `name` whose labels include `labels`, read from the served /metrics."""
    text = api.get("/metrics", token=None).text
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name and labels.items() <= s.labels.items()
    )


def test_diagnose_returns_the_stored_trace_synchronously(serve_api: Callable[..., ApiServer]) -> None:
    api = serve_api()
    resp = api.post("/api/diagnose", {"question": "why is order slow?", "channel": "C1"})
    assert resp.status_code == 200
    body = resp.json()
    assert body["answer"] == "order v2.8.1 raised maximumPoolSize"
    assert body["question"] == "why is order slow?"
    stored = api.store.get(body["trace_id"])
    assert stored is not None and stored.answer == body["answer"]


def test_async_diagnose_answers_202_then_the_trace(serve_api: Callable[..., ApiServer]) -> None:
    api = serve_api()
    resp = api.post("/api/diagnose", {"question": "why is order slow?", "async": True})
    assert resp.status_code == 202
    trace_id = resp.json()["trace_id"]
    assert wait_for_trace(api, trace_id)["trace_id"] == trace_id


def test_api_requires_the_bearer_token(serve_api: Callable[..., ApiServer]) -> None:
    api = serve_api()
    assert api.post("/api/diagnose", {"question": "q"}, token=None).status_code == 401
    assert api.post("/api/diagnose", {"question": "q"}, token="wrong").status_code == 401
    assert api.get("/api/traces/abc", token=None).status_code == 401
    assert api.post("/api/alertmanager", alert_group(), token="wrong").status_code == 401
    assert api.store.list() == []


def test_api_is_off_without_a_configured_token(serve_api: Callable[..., ApiServer]) -> None:
    api = serve_api(token="")
    resp = api.post("/api/diagnose", {"question": "q"}, token="")
    assert resp.status_code == 404
    assert "OPSBOT_SERVER__API_TOKEN" in resp.json()["error"]
    assert api.get("/metrics", token=None).status_code == 200


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        (b"{not json", 400, "not valid JSON"),
        (b"[1, 2]", 400, "JSON object"),
        (b'{"channel": "C1"}', 400, "question"),
        (b'{"question": 42}', 400, "question"),
        (b'{"question": "' + b"x" * 5_000 + b'"}', 400, "limit"),
    ],
)
def test_bad_bodies_get_a_clear_400(serve_api: Callable[..., ApiServer], body: bytes, status: int, says: str) -> None:
    api = serve_api()
    resp = api.post("/api/diagnose", None, data=body)
    assert resp.status_code == status
    assert says in resp.json()["error"]


def test_wrong_method_and_unknown_ids_are_explained(serve_api: Callable[..., ApiServer]) -> None:
    api = serve_api()
    assert api.get("/api/diagnose").status_code == 405
    missing = api.get("/api/traces/nope")
    assert missing.status_code == 404 and "nope" in missing.json()["error"]
    assert api.get("/api/whatever").status_code == 404
    bad_alert = api.post("/api/alertmanager", {"alerts": []})
    assert bad_alert.status_code == 400 and "groupKey" in bad_alert.json()["error"]


def test_rate_limit_and_allowlist_apply_to_the_api(serve_api: Callable[..., ApiServer]) -> None:
    api = serve_api(policy=AccessPolicy(["C-OPS"], rate_limit_per_minute=1))
    assert api.post("/api/diagnose", {"question": "q", "channel": "C-OTHER"}).status_code == 403
    assert api.post("/api/diagnose", {"question": "q", "channel": "C-OPS"}).status_code == 200
    limited = api.post("/api/diagnose", {"question": "q", "channel": "C-OPS"})
    assert limited.status_code == 429
    assert limited.headers["Retry-After"] == "60"
    assert "rate limit" in limited.json()["error"]


def test_alert_group_runs_once_and_posts_in_the_alert_channel(
    serve_api: Callable[..., ApiServer], fake_slack: FakeSlackAPI
) -> None:
    api = serve_api(post=slack_poster(fake_slack), channel="C-ALERTS")
    first = api.post("/api/alertmanager", alert_group())
    assert first.status_code == 202
    trace = wait_for_trace(api, first.json()["trace_id"])
    again = api.post("/api/alertmanager", alert_group())
    assert again.json()["status"] == "duplicate"
    posts = fake_slack.wait_for("chat.postMessage", 2)
    assert {p["channel"] for p in posts} == {"C-ALERTS"}
    assert posts[1]["thread_ts"] == "1700000000.000001"
    question = trace["question"]
    for fact in ("OrderLatencyHigh", "order", "order p99 above 1 s", "2026-11-28T15:07:00Z"):
        assert fact in question
    assert len(api.store.list()) == 1
    assert metric(api, "opsbot_alerts_total", outcome="duplicate") == 1


def test_new_alert_in_a_group_starts_a_new_run(serve_api: Callable[..., ApiServer]) -> None:
    api = serve_api()
    first = api.post("/api/alertmanager", alert_group(fingerprints=("fp1",)))
    second = api.post("/api/alertmanager", alert_group(fingerprints=("fp1", "fp2")))
    assert second.json()["status"] == "started"
    wait_for_trace(api, first.json()["trace_id"])
    wait_for_trace(api, second.json()["trace_id"])
    assert len(api.store.list()) == 2


def test_resolved_notification_starts_no_run(serve_api: Callable[..., ApiServer]) -> None:
    api = serve_api()
    resp = api.post("/api/alertmanager", alert_group(status="resolved"))
    assert resp.status_code == 200 and resp.json()["status"] == "ignored"
    assert api.store.list() == []


def test_trace_is_stored_when_slack_is_down(serve_api: Callable[..., ApiServer], fake_slack: FakeSlackAPI) -> None:
    fake_slack.fail("chat.postMessage", error="service_unavailable", status=503, times=10)
    api = serve_api(post=slack_poster(fake_slack))
    resp = api.post("/api/alertmanager", alert_group())
    trace = wait_for_trace(api, resp.json()["trace_id"])
    fake_slack.wait_for("chat.postMessage", 1)
    assert "OrderLatencyHigh" in trace["question"]
    assert api.store.get(resp.json()["trace_id"]) is not None


def test_metrics_move_while_a_diagnosis_runs(serve_api: Callable[..., ApiServer]) -> None:
    first_step_seen, release = threading.Event(), threading.Event()
    canned = canned_responder()

    def slow_responder(question: Question, on_step: StepObserver | None) -> Trace:
        def observe(step: Step) -> None:
            if on_step:
                on_step(step)
            first_step_seen.set()
            assert release.wait(20)

        return canned(question, observe)

    api = serve_api(slow_responder)
    trace_id = api.post("/api/diagnose", {"question": "why?", "async": True}).json()["trace_id"]
    assert first_step_seen.wait(20)
    assert metric(api, "opsbot_tool_calls_total", tool="query_metrics") == 1
    assert metric(api, "opsbot_diagnoses_in_progress") == 1
    assert metric(api, "opsbot_diagnoses_total") == 0
    release.set()
    wait_for_trace(api, trace_id)
    assert metric(api, "opsbot_diagnoses_in_progress") == 0
    assert metric(api, "opsbot_diagnoses_total", intent="unknown", stop_reason="finish", source="api") == 1
    assert metric(api, "opsbot_llm_tokens_total", kind="prompt") == 150


def test_metrics_come_from_opsbots_own_registry(serve_api: Callable[..., ApiServer]) -> None:
    resp = serve_api().get("/metrics", token=None)
    assert resp.headers["Content-Type"].startswith("text/plain")
    assert "opsbot_diagnosis_duration_seconds_bucket" in resp.text
    assert "python_gc_objects_collected_total" not in resp.text  # not the process-global registry


def test_full_queue_answers_503(serve_api: Callable[..., ApiServer]) -> None:
    release = threading.Event()
    canned = canned_responder()

    def blocked(question: Question, on_step: StepObserver | None) -> Trace:
        assert release.wait(20)
        return canned(question, on_step)

    api = serve_api(blocked)
    codes = [api.post("/api/diagnose", {"question": f"q{i}", "async": True}).status_code for i in range(7)]
    release.set()
    assert codes[:6] == [202] * 6  # 2 running + 4 queued
    assert codes[6] == 503


def test_the_chart_of_a_stored_diagnosis_comes_back_as_a_png(serve_api: Callable[..., ApiServer]) -> None:
    from tests.chart.test_chart import looked
    from tests.fakes.slack import ScriptedResponder

    api = serve_api(ScriptedResponder(chart=looked().chart))
    trace_id = api.post("/api/diagnose", {"question": "why is order slow?"}).json()["trace_id"]
    resp = api.get(f"/api/traces/{trace_id}/chart.png")  # drawn from the stored steps: their series came back whole
    assert resp.status_code == 200 and resp.headers["Content-Type"] == "image/png"
    assert resp.content.startswith(b"\x89PNG\r\n\x1a\n") and len(resp.content) > 10_000
    assert api.get(f"/api/traces/{trace_id}/chart.png", token="wrong").status_code == 401


def test_a_chart_that_cannot_be_drawn_is_explained(serve_api: Callable[..., ApiServer]) -> None:
    api = serve_api()  # its steps hold no series
    trace_id = api.post("/api/diagnose", {"question": "why is order slow?"}).json()["trace_id"]
    resp = api.get(f"/api/traces/{trace_id}/chart.png")
    assert resp.status_code == 404 and "no series to chart" in resp.json()["error"]
    assert "no finished trace" in api.get(f"/api/traces/{'0' * 32}/chart.png").json()["error"]
