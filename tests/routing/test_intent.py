"""The intent gate: rules route the clear cases in English and Chinese; the cheap model only when unsure."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from bot.cli import app
from bot.routing.intent import classify
from tests.fakes.llm import ScriptedLLM, scripted_openai_llm

RULE_TABLE = [
    # (text, route) decided by the rules alone
    ("hi", "chitchat"),
    ("Hello opsbot!", "chitchat"),
    ("thanks!", "chitchat"),
    ("thank you so much", "chitchat"),
    ("你好", "chitchat"),
    ("谢谢！", "chitchat"),
    ("辛苦了", "chitchat"),
    ("hi there", "chitchat"),
    ("good morning team!", "chitchat"),
    ("thanks for the help earlier", "chitchat"),
    ("help", "help"),
    ("what can you do?", "help"),
    ("你能做什么", "help"),
    ("", "help"),
    ("what is the p99 of order now", "lookup"),
    ("what's the current error rate of payment?", "lookup"),
    ("show me the qps of checkout", "lookup"),
    ("what is the last deploy of order", "lookup"),
    ("当前 order 的 QPS 是多少", "lookup"),
    ("现在 payment 的错误率是多少", "lookup"),
    ("order的p99现在是多少", "lookup"),
    ("why is order slow since 15:05", "diagnose"),
    ("why are checkout 5xx up?", "diagnose"),
    ("order p99 spiked after the deploy, can you investigate?", "diagnose"),
    ("root cause of the payment outage?", "diagnose"),
    ("search broke right after the v6.1.0 deploy, should we roll back?", "diagnose"),
    ("cart pods keep restarting since the 14:00 release", "diagnose"),
    ("how many restarts did cart have in the last hour?", "lookup"),
    ("order 服务 P99 飙升，帮我排查一下", "diagnose"),
    ("为什么 payment 一直报错", "diagnose"),
    ("从15:05开始 order 延迟升高了", "diagnose"),
    ("hi, why is order slow since the deploy?", "diagnose"),  # a greeting does not hide a real question
    ("thanks, but why did it fail again?", "diagnose"),
]


@pytest.mark.parametrize(("text", "route"), RULE_TABLE)
def test_rules_route_clear_cases_without_a_model(text: str, route: str) -> None:
    intent = classify(text)
    assert (intent.route, intent.tier) == (route, "rules"), intent
    assert intent.confidence >= 0.75 and intent.reason


BORDERLINE = [
    "and what about payment?",  # a thread follow-up: no signal at all
    "order p99",  # a metric, but no question
    "why is the p99 of order high now",  # "why" phrased as a lookup
    "今天天气怎么样",  # off-topic Chinese
]


@pytest.mark.parametrize("text", BORDERLINE)
def test_borderline_cases_ask_the_cheap_model(text: str, scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"content": '{"route": "lookup", "confidence": 0.8, "reason": "one value"}'})
    intent = classify(text, scripted_openai_llm(scripted_llm))
    assert (intent.route, intent.tier) == ("lookup", "model")
    assert "one value" in intent.reason and "rules unsure" in intent.reason
    [request] = scripted_llm.chat_requests
    assert request.messages[-1]["content"] == text
    assert "route" in request.messages[0]["content"]


def test_clear_case_never_calls_the_model(scripted_llm: ScriptedLLM) -> None:
    intent = classify("why is order slow since 15:05", scripted_openai_llm(scripted_llm))
    assert intent.tier == "rules"
    assert scripted_llm.chat_requests == []


def test_model_reply_with_prose_around_json_is_read(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"content": 'Sure! {"route": "chitchat", "confidence": 0.9, "reason": "weather",} done'})
    assert classify("今天天气怎么样", scripted_openai_llm(scripted_llm)).route == "chitchat"


def test_unavailable_model_falls_back_to_the_default_route(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"status": 500, "repeat": 5})
    intent = classify("order p99", scripted_openai_llm(scripted_llm, max_retries=0))
    assert (intent.route, intent.tier) == ("lookup", "default")  # the rules' weak guess
    assert "model unavailable" in intent.reason


def test_unknown_route_from_model_falls_back_to_diagnose(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"content": '{"route": "delete_prod", "confidence": 1}'})
    intent = classify("and what about payment?", scripted_openai_llm(scripted_llm))
    assert (intent.route, intent.tier) == ("diagnose", "default")


def test_no_model_means_default_tier_for_unsure_text() -> None:
    intent = classify("and what about payment?")
    assert (intent.route, intent.tier) == ("diagnose", "default")
    assert "no model configured" in intent.reason


def test_classify_cli_prints_route_confidence_tier_and_reason(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.chdir(tmp_path)  # no developer .env
    monkeypatch.setenv("OPSBOT_LLM__BASE_URL", "")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    result = CliRunner().invoke(app, ["classify", "order 服务 P99 飙升，帮我排查一下"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output.strip().splitlines()[-1])
    assert printed["route"] == "diagnose" and printed["tier"] == "rules" and printed["confidence"] >= 0.75


def test_classify_cli_jsonl_answers_one_line_per_input(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPSBOT_LLM__BASE_URL", "")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    lines = "hi\nwhat is the p99 of order now\n\n当前 order 的 QPS 是多少\n"
    result = CliRunner().invoke(app, ["classify", "--jsonl"], input=lines)
    assert result.exit_code == 0, result.output
    routes = [json.loads(line)["route"] for line in result.output.strip().splitlines()]
    assert routes == ["chitchat", "lookup", "lookup"]
