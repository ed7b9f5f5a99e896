"""The API over the real agent loop and the ScriptedLLM: /metrics moves mid-run; API and webhook store traces."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Annotated, Any

from bot.engine.loop import run_agent
from bot.engine.types import Budget, Question, StepObserver, Trace
from bot.safety.redact import redact
from tests.fakes.llm import ScriptedLLM, scripted_openai_llm, tool_results
from tests.http.conftest import ApiServer
from tests.http.payloads import alert_group
from tests.http.test_api import metric, wait_for_trace
from tools.base import Toolbox, tool


def query_metrics(service: Annotated[str, "service"], metric: Annotated[str, "p99_latency"]) -> str:
    """p99 latency of a service."""
    return f"{service} {metric}: 212 ms -> 1,180 ms at 15:05"


def agent_responder(scripted: ScriptedLLM) -> Callable[[Question, StepObserver | None], Trace]:
    llm, toolbox = scripted_openai_llm(scripted), Toolbox([tool(query_metrics)], redact=redact)

    def respond(question: Question, on_step: StepObserver | None) -> Trace:
        return run_agent(question, llm, toolbox, Budget(max_steps=4), on_step=on_step)

    return respond


def model(release: threading.Event | None = None) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """First turn: one tool call. Second turn: a reply held back until `release` is set (a slow model)."""

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        if not tool_results(body["messages"]):
            call = {"name": "query_metrics", "arguments": {"service": "order", "metric": "p99_latency"}}
            return {"content": "Check latency.", "tool_calls": [call]}
        if release is not None:
            assert release.wait(20)
        return {"content": "Final Answer: order p99 rose to 1,180 ms at 15:05."}

    return reply


def test_metrics_change_while_a_scripted_diagnosis_runs(
    serve_api: Callable[..., ApiServer], scripted_llm: ScriptedLLM
) -> None:
    release = threading.Event()
    scripted_llm.responder = model(release)
    api = serve_api(agent_responder(scripted_llm))
    try:
        trace_id = api.post("/api/diagnose", {"question": "why is order slow?", "async": True}).json()["trace_id"]
        for _ in range(400):  # the first step lands within moments; the model's second reply is held back
            if metric(api, "opsbot_tool_calls_total", tool="query_metrics") == 1:
                break
            threading.Event().wait(0.05)
        assert metric(api, "opsbot_tool_calls_total", tool="query_metrics") == 1
        assert metric(api, "opsbot_diagnoses_in_progress") == 1
        assert metric(api, "opsbot_diagnoses_total") == 0
        assert metric(api, "opsbot_llm_tokens_total", kind="prompt") > 0
    finally:
        release.set()
    trace = wait_for_trace(api, trace_id)
    assert trace["answer"].endswith("1,180 ms at 15:05.")
    assert metric(api, "opsbot_diagnoses_in_progress") == 0
    assert metric(api, "opsbot_diagnoses_total", stop_reason="finish", source="api") == 1
    assert metric(api, "opsbot_diagnosis_steps_count") == 1


def test_api_and_webhook_each_store_a_trace(serve_api: Callable[..., ApiServer], scripted_llm: ScriptedLLM) -> None:
    scripted_llm.responder = model()
    posted: list[tuple[str, str]] = []
    done = threading.Event()

    def post(channel: str, question: Question, trace: Trace) -> None:
        posted.append((channel, trace.answer))
        done.set()

    api = serve_api(agent_responder(scripted_llm), post=post)
    sync = api.post("/api/diagnose", {"question": "why is order slow?"}).json()
    alert = api.post("/api/alertmanager", alert_group()).json()
    from_alert = wait_for_trace(api, alert["trace_id"])
    assert {t.trace_id for t in api.store.list()} == {sync["trace_id"], alert["trace_id"]}
    assert from_alert["steps"][0]["action"] == "query_metrics"
    assert done.wait(20)
    assert posted == [("C-ALERTS", from_alert["answer"])]
