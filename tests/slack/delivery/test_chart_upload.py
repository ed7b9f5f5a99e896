"""The symptom's chart reaches the diagnosis thread through Slack's external upload flow, or the answer keeps its
sparkline: through the FakeSlackAPI, which speaks files.getUploadURLExternal, the upload URL and
files.completeUploadExternal, with Slack's latency and 429s."""

from __future__ import annotations

from dataclasses import replace

from bot.engine.types import Question
from bot.slack.delivery.chart import ChartPoster
from bot.slack.intake.listeners import build_web_client
from bot.slack.jobs.state import Job
from tests.chart.test_chart import looked, metric_step, trace_of
from tests.fakes.slack import BOT_TOKEN, FakeSlackAPI, ScriptedResponder, event_body, mention_event, post_event
from tests.slack.conftest import SurfaceFactory, wait_until

PNG = b"\x89PNG\r\n\x1a\n"
THREAD = "1700000100.000001"


def _mention(surface, text: str = "why is order slow since 15:05?") -> None:
    post_event(surface.events_url, event_body(mention_event(text, ts=THREAD), event_id="EvChart"))


def _answers(fake: FakeSlackAPI) -> list[str]:
    """Every final answer the thread got, as text: posted, edited, or the end of a stream."""
    texts = [str(c) for m in ("chat.postMessage", "chat.update", "chat.stopStream") for c in fake.calls_to(m)]
    return [t for t in texts if "Root cause" in t or "Likely cause" in t or "📈" in t]


def test_the_chart_lands_in_the_diagnosis_thread_after_the_answer(make_surface: SurfaceFactory, fake_slack):
    failures: list[str] = []
    responder = ScriptedResponder(chart=looked().chart)
    surface = make_surface(responder, post_chart=ChartPoster(on_failure=failures.append), latency_s=0.1)
    _mention(surface)
    wait_until(lambda: bool(fake_slack.files), what="a file shared")
    shared = fake_slack.files[0]
    assert (shared["channel"], shared["thread_ts"]) == ("C1", THREAD)
    assert shared["content"].startswith(PNG) and shared["filename"] == "symptom.png"
    assert shared["title"] == "p99_latency of order (ms)"
    methods = fake_slack.methods()
    assert (
        methods.index("files.getUploadURLExternal")
        < methods.index("upload")
        < methods.index("files.completeUploadExternal")
    )
    assert any("📈 order p99_latency" in text for text in _answers(fake_slack))  # the answer went first
    assert failures == []


def test_a_missing_scope_keeps_the_sparkline_and_counts_the_failure(make_surface: SurfaceFactory, fake_slack):
    failures: list[str] = []
    fake_slack.fail("files.getUploadURLExternal", error="missing_scope", times=5)
    surface = make_surface(ScriptedResponder(chart=looked().chart), post_chart=ChartPoster(on_failure=failures.append))
    _mention(surface)
    wait_until(lambda: failures == ["missing_scope"], what="the refused upload counted")
    assert fake_slack.files == [] and "upload" not in fake_slack.methods()
    answers = _answers(fake_slack)
    assert answers and any("📈 order p99_latency" in text and "│" in text for text in answers)


def test_a_429_on_the_upload_is_retried_after_retry_after(fake_slack: FakeSlackAPI):
    fake_slack.fail("files.completeUploadExternal", error="ratelimited", status=429, retry_after=1)
    client = build_web_client(BOT_TOKEN, fake_slack.base_url)

    job = Job(Question("why is order slow?", channel="C9", thread_ts=THREAD), "C9", THREAD)
    assert ChartPoster()(client, job, trace_of(metric_step(looked())))
    assert len(fake_slack.calls_to("files.completeUploadExternal")) == 2
    assert [(f["channel"], f["thread_ts"]) for f in fake_slack.files] == [("C9", THREAD)]


def test_a_trace_without_a_series_posts_no_chart(fake_slack: FakeSlackAPI):

    client = build_web_client(BOT_TOKEN, fake_slack.base_url)
    job = Job(Question("hi", channel="C1", thread_ts=THREAD), "C1", THREAD)
    assert not ChartPoster()(client, job, replace(trace_of(), steps=()))
    assert fake_slack.methods() == []
