"""Weak models and strict servers, through the strict ScriptedLLM (it behaves like llama.cpp's server).

One test per defect seen against llama.cpp serving Gemma 3 270M: each failed before its fix.
"""

from __future__ import annotations

import logging

import pytest

from bot.engine.context import ContextLimits
from bot.engine.llm import LLM
from bot.engine.loop import answer_once, run_agent
from bot.engine.types import Budget, Intent, Question, Step, StopReason
from bot.http.telemetry import Telemetry
from bot.routing.respond import GREETING_ANSWER, Playbook, Router
from tests.engine.engine_tools import engine_toolbox
from tests.fakes.llm import MODEL, ScriptedLLM, scripted_openai_llm
from tests.fakes.playbook import RecordingPlaybook

QUESTION = Question("Why is order p99 latency high since 15:05?")
SYSTEM_ECHO = "You are opsbot, the on-call SRE's investigation partner: you diagnose production incidents"
TOOLS = engine_toolbox()
DIAGNOSE = Intent("diagnose", 0.9, "rules", "test")


def call(name: str, **args: object) -> dict[str, object]:
    return {"name": name, "arguments": args}


def diagnose_router(llm: LLM, *, playbook: Playbook | None = None) -> Router:
    return Router(llm=llm, tools=TOOLS, budget=Budget(max_steps=4), classify=lambda text: DIAGNOSE, playbook=playbook)


# --- the wire: what strict servers need ------------------------------------------------------------------


def test_tools_are_offered_with_tool_choice_so_a_strict_server_renders_them(strict_llm: ScriptedLLM) -> None:
    strict_llm.script(
        {"content": "Symptom first.", "tool_calls": [call("query_metrics", service="order", metric="p99_latency")]},
        {"content": "Final Answer: order v2.8.1 raised the pool size."},
    )
    trace = run_agent(QUESTION, scripted_openai_llm(strict_llm), TOOLS, Budget())
    assert strict_llm.tools_rendered == [True, True]
    assert all(r.body["tool_choice"] == "auto" for r in strict_llm.chat_requests)
    assert [s.action for s in trace.steps] == ["query_metrics", "finish"] and trace.complete


def test_a_replayed_tool_call_without_text_is_sent_with_empty_content_not_null(strict_llm: ScriptedLLM) -> None:
    strict_llm.script(
        {"tool_calls": [call("query_metrics", service="order", metric="p99_latency")]},  # content: null
        {"content": "Final Answer: the pool is exhausted."},
    )
    exchanges = ContextLimits(keep_recent_steps=1)  # the call re-sent as an assistant tool-call message
    trace = run_agent(QUESTION, scripted_openai_llm(strict_llm, max_retries=0), TOOLS, Budget(), limits=exchanges)
    assert trace.complete and trace.stop_reason is StopReason.FINISH  # no HTTP 500 from the strict server
    replayed = [m for m in strict_llm.chat_requests[1].messages if m.get("tool_calls")]
    assert replayed and replayed[0]["content"] == ""


def test_a_server_that_ignores_tools_switches_the_run_and_the_model_to_text(strict_llm: ScriptedLLM) -> None:
    strict_llm.script(
        {"content": "The order service is probably slow because of load."},  # prose at step 1: tools ignored
        {
            "content": 'Thought: symptom first.\nAction: query_metrics\nAction Input: {"service": "order", '
            '"metric": "p99_latency"}'
        },
        {"content": "Thought: 15:05 jump.\nFinal Answer: order p99 jumped at 15:05."},
        {"content": "Thought: again.\nFinal Answer: order p99 jumped at 15:05."},
    )
    router = diagnose_router(scripted_openai_llm(strict_llm))
    trace = router(QUESTION)
    assert trace.protocol == "text" and trace.complete
    assert any("ignored the tools" in n and MODEL in n for n in trace.notes)
    assert trace.steps[0].status == "format_error" and "probably slow" in trace.steps[0].observation
    assert "probably slow" not in trace.answer
    second = strict_llm.chat_requests[1].body
    assert "tools" not in second and second["stop"]
    again = router(QUESTION)  # the next run of that model starts in text
    assert again.protocol == "text" and any("earlier run found" in n for n in again.notes)
    assert "tools" not in strict_llm.chat_requests[-1].body


# --- weak models: what is never an answer -----------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["native", "text"])
def test_a_reply_cut_off_at_max_tokens_is_a_format_error_with_a_hint(strict_llm: ScriptedLLM, protocol: str) -> None:
    long_answer = "Final Answer: Root cause " + "because the pool was exhausted and " * 40
    strict_llm.script({"content": long_answer}, {"content": "Final Answer: pool exhausted."})
    llm = scripted_openai_llm(strict_llm, max_reply_tokens=40)
    trace = run_agent(QUESTION, llm, TOOLS, Budget(), protocol=protocol)  # type: ignore[arg-type]
    assert strict_llm.chat_requests[0].body["max_tokens"] == 40
    assert trace.steps[0].status == "format_error" and "cut off" in trace.steps[0].observation
    assert trace.answer == "pool exhausted."  # the two words "Root cause" were never the answer
    assert "keep the Thought to a few sentences" in str(strict_llm.chat_requests[1].messages)


@pytest.mark.parametrize("protocol", ["native", "text"])
def test_an_echoed_system_prompt_is_a_format_error_and_never_the_answer(strict_llm: ScriptedLLM, protocol: str) -> None:
    strict_llm.script({"content": f"Final Answer: {SYSTEM_ECHO}"}, {"content": "Final Answer: pool exhausted."})
    trace = run_agent(QUESTION, scripted_openai_llm(strict_llm), TOOLS, Budget(), protocol=protocol)  # type: ignore[arg-type]
    assert trace.steps[0].status == "format_error" and "repeats the instructions" in trace.steps[0].observation
    assert trace.answer == "pool exhausted."


@pytest.mark.parametrize(
    ("echo", "copied"),
    [
        ("You are opsbot, an SRE incident-diagnosis assistant. An investigation was stopped", "You are opsbot"),
        # seen against llama.cpp + Gemma 3 270M once the one-message context let it call tools: its conclusion was
        # the user message copied back ("Question: … What the investigation observed:"), shown as the answer
        (
            "Question: Why is order p99 latency high since 15:05?\n\nWhat the investigation observed:\n",
            "What the investigation observed",
        ),
    ],
)
def test_an_echoed_prompt_or_scaffold_in_the_forced_conclusion_is_not_shown(
    strict_llm: ScriptedLLM, echo: str, copied: str
) -> None:
    strict_llm.script(
        {"content": "Symptom.", "tool_calls": [call("query_metrics", service="order", metric="p99_latency")]},
        {"content": echo},
    )
    trace = run_agent(QUESTION, scripted_openai_llm(strict_llm), TOOLS, Budget(max_steps=1))
    assert not trace.complete and copied not in trace.answer
    assert "not interpreted by a model" in trace.answer and "repeated its instructions" in trace.answer


@pytest.mark.parametrize(
    "reply",
    [
        {"content": "You are opsbot, a chat-ops assistant for an SRE team. Answer the message below"},
        {"content": "Hello! I am happy to help you with " * 30},  # cut off at max_tokens
    ],
)
def test_a_one_shot_echo_or_cut_off_reply_is_never_the_answer(strict_llm: ScriptedLLM, reply: dict[str, str]) -> None:
    strict_llm.script(reply)
    trace = answer_once(Question("hi there"), scripted_openai_llm(strict_llm, max_reply_tokens=40), TOOLS)
    assert trace.stop_reason is StopReason.FORMAT_ERRORS and not trace.complete
    assert "You are opsbot" not in trace.answer and "happy to help" not in trace.answer


def test_a_chitchat_reply_that_is_unusable_gets_the_canned_answer_and_keeps_its_cost(
    strict_llm: ScriptedLLM,
) -> None:
    strict_llm.script({"content": "You are opsbot, a chat-ops assistant for an SRE team. Answer the message"})
    router = Router(
        llm=scripted_openai_llm(strict_llm),
        tools=TOOLS,
        budget=Budget(),
        classify=lambda text: Intent("chitchat", 0.9, "rules", "test"),
    )
    trace = router(Question("hi"))
    assert trace.answer == GREETING_ANSWER and trace.totals.tokens > 0


def test_a_placeholder_tool_name_is_a_format_error_listing_the_valid_tools(strict_llm: ScriptedLLM) -> None:
    strict_llm.script(
        {"content": 'Thought: check.\nAction: <one tool name>\nAction Input: {"service": "shipping"}'},
        {"content": "Thought: done.\nFinal Answer: pool exhausted."},
    )
    trace = run_agent(QUESTION, scripted_openai_llm(strict_llm), TOOLS, Budget(), protocol="text")
    first = trace.steps[0]
    assert first.status == "format_error" and first.action == ""
    assert "placeholder" in first.observation and "query_metrics" in first.observation
    assert trace.totals.tool_calls == 0


def test_stop_sequences_cut_an_output_that_opens_with_a_made_up_observation(strict_llm: ScriptedLLM) -> None:
    strict_llm.script(
        {"content": "Observation: order p99 is 42 ms\nThought: fine.\nFinal Answer: order p99 is 42 ms."},
        {"content": "Thought: checked.\nFinal Answer: pool exhausted."},
    )
    trace = run_agent(QUESTION, scripted_openai_llm(strict_llm), TOOLS, Budget(), protocol="text")
    assert "42 ms" not in trace.answer  # the invented observation never became the answer
    assert trace.steps[0].status == "format_error" and trace.answer == "pool exhausted."


def test_a_model_that_produces_nothing_usable_falls_back_to_the_playbook_naming_model_and_endpoint(
    strict_llm: ScriptedLLM,
) -> None:
    strict_llm.script({"content": "Thought: <your reasoning>\nAction: <one tool name>", "repeat": 3})
    llm = scripted_openai_llm(strict_llm)
    trace = diagnose_router(llm, playbook=RecordingPlaybook())(QUESTION)
    assert trace.protocol == "playbook"
    [line] = [n for n in trace.notes if "produced nothing usable" in n]
    assert MODEL in line and strict_llm.base_url in line and "\n" not in line
    assert trace.totals.tokens > 0  # the three unreadable replies' tokens are on record


# --- an honest record -------------------------------------------------------------------------------------


def test_time_and_tokens_of_a_failed_attempt_stay_in_the_totals_after_a_fallback(
    strict_llm: ScriptedLLM,
    caplog: pytest.LogCaptureFixture,
) -> None:
    strict_llm.script({"content": "not a step at all"}, {"status": 500, "delay_s": 0.3, "repeat": 3})
    llm = scripted_openai_llm(strict_llm, max_retries=0)
    with caplog.at_level(logging.WARNING):
        trace = diagnose_router(llm, playbook=RecordingPlaybook())(QUESTION)
    assert trace.protocol == "playbook"
    assert trace.totals.elapsed_ms >= 300 and trace.totals.tokens > 0  # was the playbook's own 0 tokens, 0 s
    assert any(n.startswith("model attempt before the playbook") for n in trace.notes)
    assert "LLM unavailable at call 2" in caplog.text  # the second call failed, not "the first call"


def test_a_format_error_step_keeps_the_raw_reply_capped(strict_llm: ScriptedLLM) -> None:
    strict_llm.script({"content": "gibberish " * 400}, {"content": "Thought: ok.\nFinal Answer: done."})
    trace = run_agent(QUESTION, scripted_openai_llm(strict_llm), TOOLS, Budget(), protocol="text")
    observation = trace.steps[0].observation
    assert "The reply was:\ngibberish gibberish" in observation
    assert "more characters]" in observation and len(observation) < 2_500


def test_metrics_count_a_failed_attempts_tokens_once_and_the_trace_keeps_its_steps(strict_llm: ScriptedLLM) -> None:
    telemetry = Telemetry()
    strict_llm.script({"content": "Thought: <your reasoning>\nAction: <one tool name>", "repeat": 3})
    seen: list[int] = []

    def observe(step: Step) -> None:
        seen.append(step.index)
        telemetry.on_step(step)

    trace = diagnose_router(scripted_openai_llm(strict_llm), playbook=RecordingPlaybook())(QUESTION, observe)
    telemetry.observe_trace(trace)
    counted = sum(
        telemetry.registry.get_sample_value("opsbot_llm_tokens_total", {"kind": kind}) or 0.0
        for kind in ("prompt", "completion")
    )
    assert counted == trace.totals.tokens > 0  # not lost with the fallback, not counted twice
    assert [s.status for s in trace.steps] == ["format_error"] * 3 + ["ok"]
    assert [s.index for s in trace.steps] == seen == [1, 2, 3, 4]  # the playbook's step numbered after them
