"""LLM calls inside the budget and on the record: one test per defect, each failed before its fix.

The time budget covers every LLM call; the forced conclusion is budgeted; bad bodies are counted and named; a
huge reply neither becomes the answer nor breaks the token budget; opsbot's own numbers are not "unverified".
"""

from __future__ import annotations

import pytest

from bot.cli.terminal import step_to_text
from bot.config import Settings
from bot.engine.llm import LLMUnavailable
from bot.engine.loop import run_agent
from bot.engine.types import Budget, Question, Step, StopReason, Totals, Trace
from bot.http.telemetry import Telemetry
from bot.routing.intent import classify
from bot.safety.grounding import mark_unverified, unverified_claims
from bot.wiring.sandbox import eval_prometheus_port
from tests.engine.engine_tools import engine_toolbox
from tests.fakes.llm import MODEL, ScriptedLLM, scripted_openai_llm

QUESTION = Question("Why is order p99 latency high since 15:05?")
TOOLS = engine_toolbox()


def test_an_llm_call_gets_only_the_time_left_in_the_budget(strict_llm: ScriptedLLM) -> None:
    strict_llm.script({"content": "Final Answer: late but fine.", "delay_s": 3.0, "repeat": 3})
    llm = scripted_openai_llm(strict_llm, max_retries=2, timeout_s=30.0)
    trace = run_agent(QUESTION, llm, TOOLS, Budget(time_budget_s=1.0))
    # the 30 s timeout (x3 attempts) would have waited for the reply; the 1 s left did not
    assert trace.stop_reason is StopReason.LLM_UNAVAILABLE and not trace.complete
    assert len(strict_llm.chat_requests) == 1  # no retry fits in the time left
    assert "Timeout" in trace.answer


def test_the_forced_conclusion_asks_for_no_more_tokens_than_are_left(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {
            "content": "Symptom.",
            "tool_calls": [{"name": "query_metrics", "arguments": {"service": "order", "metric": "p99_latency"}}],
        },
        {"content": "Established: p99 rose at 15:05."},
    )
    trace = run_agent(QUESTION, scripted_openai_llm(scripted_llm), TOOLS, Budget(token_budget=300))
    assert trace.stop_reason is StopReason.TOKEN_BUDGET
    conclusion = scripted_llm.chat_requests[-1].body
    assert "tools" not in conclusion and conclusion["max_tokens"] == 256  # not the default 1,024: budget is spent


@pytest.mark.parametrize("body", ["<html>502 Bad Gateway</html>", '{"id": "x", "choices": [{"index": 0, "mess'])
def test_a_garbage_or_truncated_body_is_counted_and_names_model_and_endpoint(
    scripted_llm: ScriptedLLM, body: str
) -> None:
    telemetry = Telemetry()
    scripted_llm.script({"raw_body": body})
    llm = scripted_openai_llm(scripted_llm, max_retries=0, on_error=telemetry.observe_llm_error)
    with pytest.raises(LLMUnavailable) as caught:
        llm.complete([{"role": "user", "content": "hi"}])
    assert MODEL in str(caught.value) and scripted_llm.base_url in str(caught.value)
    assert "unreadable response body" in str(caught.value)
    assert telemetry.registry.get_sample_value("opsbot_llm_errors_total", {"kind": "bad_reply"}) == 1.0


def test_a_huge_reply_is_cut_never_the_answer_and_keeps_the_token_budget(scripted_llm: ScriptedLLM) -> None:
    huge = "Final Answer: " + "the order service latency increased because of many reasons. " * 1_700  # ~100k
    scripted_llm.script({"content": huge, "usage": None}, {"content": "Final Answer: pool exhausted.", "usage": None})
    trace = run_agent(QUESTION, scripted_openai_llm(scripted_llm), TOOLS, Budget(token_budget=8_000))
    assert len(huge) > 100_000
    assert trace.answer == "pool exhausted." and trace.steps[0].status == "format_error"
    assert trace.totals.tokens < 8_000  # the 100k characters were cut to what max_tokens allows


def test_opsbots_own_label_numbers_are_not_unverified() -> None:
    answer = (
        "Partial answer: the investigation stopped because the token budget ran out "
        "(33,120 tokens used of 32,000). This is not a confirmed root cause.\n\n"
        "_The LLM was unavailable: scripted-model at http://127.0.0.1:4242/v1: HTTP 503._\n\n"
        "_The model gemma-3-270m-q4_k_m at http://127.0.0.1:44835/v1 produced nothing usable._\n\n"
        "order p99 rose to 1,180 ms."
    )
    step = Step(1, "", "query_metrics", {}, "p99 1180 ms", "ok")
    trace = Trace("t", "why?", "native", (step,), answer, False, StopReason.TOKEN_BUDGET, Totals())
    assert mark_unverified(trace).notes == ()


def test_an_html_entity_is_not_a_number() -> None:
    assert unverified_claims("order&#39;s p99 is 1,180 ms", ["p99 1180 ms"]) == []


def test_a_format_error_reply_does_not_back_its_own_numbers() -> None:
    bad = Step(1, "", "", {}, "Format error: ...\n\nThe reply was:\np99 is 42 ms", "format_error")
    trace = Trace("t", "why?", "text", (bad,), "p99 is 42 ms.", True, StopReason.FINISH, Totals())
    assert mark_unverified(trace).notes == ("unverified: 42 ms",)


def test_classify_says_the_model_answered_when_its_reply_is_not_json(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"content": "I think this is about payment."})
    intent = classify("and what about payment?", scripted_openai_llm(scripted_llm))
    assert intent.tier == "default"
    assert "model answered, but not in JSON" in intent.reason and "unavailable" not in intent.reason


def test_the_terminal_prints_an_unreadable_step_without_empty_parentheses() -> None:
    line = step_to_text(Step(1, "", "", {}, "Format error: the reply is empty.", "format_error")).splitlines()[0]
    assert line.startswith("[1] (unreadable reply)  format_error") and "()" not in line


def test_eval_honours_the_sandbox_prometheus_port(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPSBOT_SANDBOX__PROMETHEUS_PORT", "19555")
    assert eval_prometheus_port(Settings(_env_file=None)) == 19555  # type: ignore[call-arg]
    monkeypatch.delenv("OPSBOT_SANDBOX__PROMETHEUS_PORT")
    assert eval_prometheus_port(Settings(_env_file=None)) != 19555  # type: ignore[call-arg]
