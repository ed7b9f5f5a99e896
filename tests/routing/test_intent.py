"""The intent gate: trivial rules, the learned classifier, the cheap model only when the classifier is unsure."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from bot.cli import app
from bot.routing.features import FeatureSpec
from bot.routing.intent import classify
from bot.routing.model import IntentModel
from bot.routing.scorecard import ROUTES
from tests.fakes.llm import ScriptedLLM, scripted_openai_llm

# A model with no weights gives every route the same probability: always unsure, whatever the text.
UNSURE_MODEL = IntentModel(ROUTES, FeatureSpec(), [0.0] * len(ROUTES), {})

TRIVIAL = [
    ("", "help"),
    ("   ", "help"),
    ("<@U07QX2B1Z>", "help"),
    ("?", "help"),
    ("👍", "chitchat"),
    ("🎉🎉 !!", "chitchat"),
]


@pytest.mark.parametrize(("text", "route"), TRIVIAL)
def test_rules_take_only_empty_and_wordless_messages(text: str, route: str) -> None:
    intent = classify(text, model=UNSURE_MODEL)
    assert (intent.route, intent.tier, intent.confidence) == (route, "rules", 1.0)


CLEAR = [
    ("hi", "chitchat"),
    ("thanks!", "chitchat"),
    ("谢谢！", "chitchat"),
    ("tell me a joke", "chitchat"),
    ("help", "help"),
    ("你能做什么", "help"),
    ("what is the p99 of order now", "lookup"),
    ("当前 order 的 QPS 是多少", "lookup"),
    ("why is order slow since 15:05", "diagnose"),
    ("order 服务 P99 飙升，帮我排查一下", "diagnose"),
    ("checkout is throwing 500s", "diagnose"),
    ("rollback payment to v1.8.2", "act"),
    ("重启 cart 的 pod", "act"),
]


@pytest.mark.parametrize(("text", "route"), CLEAR)
def test_classifier_routes_clear_messages_without_a_model(text: str, route: str) -> None:
    intent = classify(text)
    assert (intent.route, intent.tier) == (route, "classifier"), intent
    assert intent.confidence >= 0.75 and not intent.unsure
    assert intent.reason.startswith(f"classifier: {route}")


SLACK_MARKUP = [
    ("<@U07QX2B1Z> why is order slow since 15:05", "why is order slow since 15:05"),
    (
        "<@U07QX2B1Z> checkout is throwing 500s, see <https://grafana.example.com/d/abc?a=1&amp;b=2|dashboard>",
        "checkout is throwing 500s, see dashboard",
    ),
    ("p99 on search &gt; 2s since the rollout, why?", "p99 on search > 2s since the rollout, why?"),
]


@pytest.mark.parametrize(("raw", "plain"), SLACK_MARKUP)
def test_slack_markup_routes_like_the_plain_text(raw: str, plain: str) -> None:
    assert classify(raw).route == classify(plain).route == "diagnose"


@pytest.mark.parametrize("text", ["and what about payment?", "今天天气怎么样"])
def test_unsure_classifier_asks_the_cheap_model(text: str, scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"content": '{"route": "lookup", "confidence": 0.8, "reason": "one value"}'})
    intent = classify(text, scripted_openai_llm(scripted_llm), model=UNSURE_MODEL)
    assert (intent.route, intent.tier) == ("lookup", "model")
    assert "one value" in intent.reason and "classifier:" in intent.reason
    [request] = scripted_llm.chat_requests
    assert request.messages[-1]["content"] == text
    assert "route" in request.messages[0]["content"] and "act" in request.messages[0]["content"]


def test_sure_classifier_never_calls_the_model(scripted_llm: ScriptedLLM) -> None:
    intent = classify("why is order slow since 15:05", scripted_openai_llm(scripted_llm))
    assert intent.tier == "classifier"
    assert scripted_llm.chat_requests == []


def test_model_reply_with_prose_around_json_is_read(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"content": 'Sure! {"route": "chitchat", "confidence": 0.9, "reason": "weather",} done'})
    assert classify("今天天气怎么样", scripted_openai_llm(scripted_llm), model=UNSURE_MODEL).route == "chitchat"


def test_unavailable_model_falls_back_to_the_classifiers_guess(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"status": 500, "repeat": 5})
    intent = classify("order p99", scripted_openai_llm(scripted_llm, max_retries=0), unsure_below=1.01)
    assert intent.tier == "default" and intent.unsure
    assert intent.route == classify("order p99").route  # the classifier's best guess, not a blind default
    assert "model unavailable" in intent.reason


def test_unknown_route_from_model_falls_back_to_the_default_tier(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"content": '{"route": "delete_prod", "confidence": 1}'})
    intent = classify("and what about payment?", scripted_openai_llm(scripted_llm), model=UNSURE_MODEL)
    assert intent.tier == "default" and intent.route in ROUTES


def test_no_model_and_an_unsure_classifier_say_so() -> None:
    intent = classify("and what about payment?", model=UNSURE_MODEL)
    assert intent.tier == "default" and intent.unsure
    assert intent.confidence == pytest.approx(1 / len(ROUTES))
    assert "no model configured" in intent.reason and "classifier unsure" in intent.reason


def test_every_classified_intent_carries_the_classifiers_diagnose_probability(scripted_llm: ScriptedLLM) -> None:
    sure = classify("checkout p99 doubled since the 14:10 deploy, why?")
    assert sure.tier == "classifier" and sure.route == "diagnose"
    assert sure.diagnose_probability == pytest.approx(sure.confidence)
    unsure = classify("and what about payment?", model=UNSURE_MODEL)
    assert unsure.diagnose_probability == pytest.approx(1 / len(ROUTES))  # the default tier keeps it too
    scripted_llm.script({"content": json.dumps({"route": "chitchat", "confidence": 0.9, "reason": "small talk"})})
    asked = classify("and what about payment?", scripted_openai_llm(scripted_llm), model=UNSURE_MODEL)
    assert asked.tier == "model" and asked.diagnose_probability == pytest.approx(1 / len(ROUTES))
    assert classify("👍").diagnose_probability == 0.0  # the rules' trivial cases: no classifier scored it


@pytest.fixture
def no_llm_env(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.chdir(tmp_path)  # no developer .env
    monkeypatch.setenv("OPSBOT_LLM__BASE_URL", "")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.mark.usefixtures("no_llm_env")
def test_classify_cli_prints_route_probability_and_tier() -> None:
    result = CliRunner().invoke(app, ["classify", "order 服务 P99 飙升，帮我排查一下"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output.strip().splitlines()[-1])
    assert printed["route"] == "diagnose" and printed["tier"] == "classifier" and printed["confidence"] >= 0.75


@pytest.mark.usefixtures("no_llm_env")
def test_classify_cli_jsonl_reads_each_line_as_a_json_string() -> None:
    messages = [
        "hi",
        "what is the p99 of order now",
        "当前 order 的 QPS 是多少",
        "checkout is failing since 15:00\n```HikariPool-1 - Connection is not available```\nwhy?",
    ]
    lines = "\n".join(json.dumps(m, ensure_ascii=False) for m in messages) + "\n\nnot json\n"
    result = CliRunner().invoke(app, ["classify", "--jsonl"], input=lines)
    assert result.exit_code == 0, result.output
    printed = [json.loads(line) for line in result.output.strip().splitlines()]
    assert [p.get("route") for p in printed] == ["chitchat", "lookup", "lookup", "diagnose", None]
    assert printed[-1] == {"error": "input line 6 is not a JSON string"}
