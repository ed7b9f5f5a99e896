"""What a message asks for: the request beside the route, a writing request never investigated, and the cheap
model's confirmation of an investigation whose text also asks for something smaller (its cost on the trace)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from bot.engine.types import Budget, Intent, Question, trace_from_dict, trace_to_dict
from bot.routing.intent import REQUEST_ROUTES, classify, confirm_investigation, needs_confirmation
from bot.routing.replies import WRITE_ANSWER
from bot.routing.respond import Router
from tests.fakes.llm import ScriptedLLM, scripted_openai_llm
from tests.fakes.playbook import RecordingPlaybook
from tools.base import Toolbox, tool


def error_rate(service: str) -> str:
    """Current 5xx ratio of a service. Use for one current value."""
    return f"{service} 5xx ratio: 2.1 %"


TOOLS = Toolbox([tool(error_rate)])

# What the issue saw start needless investigations, and what it saw missed, in the languages it names
REQUESTS = [
    ("don't investigate, just tell me the error rate of checkout", "lookup", "lookup"),
    ("no investigues nada, solo dime la tasa de error de pagos-api ahora", "lookup", "lookup"),
    ("不用排查，只要告诉我 order 现在的错误率", "lookup", "lookup"),
    ("what was the peak error rate during last night's outage? just the number", "lookup", "lookup"),
    ("please confirm whether anything was deployed to ledger-svc last night, yes or no", "lookup", "lookup"),
    (
        "write the post-mortem for yesterday's checkout outage: the root cause was an expired TLS certificate, 52 min",
        "chitchat",
        "write",
    ),
    ("escreve o post-mortem da queda do TEF de sábado, a causa foi o certificado expirado", "chitchat", "write"),
    ("rédige une mise à jour pour la page de statut, la cause est connue : le fournisseur SMS", "chitchat", "write"),
    (
        "```\n[FIRING] SLOBurnRate order-service burn=14.4x\n```\nwhat does this alert mean? no need to dig",
        "chitchat",
        "explain",
    ),
    ("[RESOLVED] HighErrorRate pagos-api\nse recuperó solo, gracias a todos", "chitchat", "chat"),
    ("liste les alertes actives en prod", "lookup", "list"),
    (
        "o gateway de pagamento está devolvendo 502 para metade das transações desde as 14h, o que houve?",
        "diagnose",
        "investigate",
    ),
    ("die Buchungs-API liefert seit 9 Uhr bei jedem dritten Aufruf 503, was ist da los?", "diagnose", "investigate"),
    ("oh great, login is down again on a monday 🙃 go figure out what broke this time", "diagnose", "investigate"),
    ("redémarre les pods de paiement-api stp", "act", "command"),
    ("was kannst du alles?", "help", "help"),
]


@pytest.mark.parametrize(("text", "route", "asked"), REQUESTS)
def test_the_gate_reads_the_request_not_only_the_topic(text: str, route: str, asked: str) -> None:
    intent = classify(text)
    assert (intent.route, intent.request) == (route, asked), intent
    assert REQUEST_ROUTES[intent.request] == intent.route  # the route follows from the request


def test_an_investigation_that_also_asks_for_a_text_says_so() -> None:
    intent = classify("why did payments fail at 15:05? dig into it, then summarise the cause for the thread")
    assert intent.route == "diagnose" and intent.request == "investigate"
    assert intent.also == "write" and needs_confirmation(intent)
    plain = classify("why is checkout throwing 500s since 15:05?")
    assert plain.also == "" and not needs_confirmation(plain)
    assert not needs_confirmation(replace(intent, tier="rules"))  # a person's own choice is never second-guessed


def _router(llm: object, classify_as: Intent | None = None, playbook: object = None) -> Router:
    classify_with = (lambda text: classify_as) if classify_as else classify
    return Router(llm=llm, tools=TOOLS, budget=Budget(max_steps=3), classify=classify_with, playbook=playbook)  # type: ignore[arg-type]


def test_a_writing_request_without_a_model_gets_templates_never_the_playbook() -> None:
    playbook = RecordingPlaybook()
    text = "write the post-mortem for Saturday's outage: the cause was a full disk from debug logs, 80 min of impact"
    trace = _router(None, playbook=playbook)(Question(text))
    assert trace.answer == WRITE_ANSWER and trace.intent is not None and trace.intent.request == "write"
    assert playbook.questions == [] and trace.totals.tool_calls == 0


def test_a_writing_request_with_a_model_is_one_answer_without_tools(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"content": "**Post-mortem: checkout outage**\nSummary: ..."})
    text = "write the post-mortem for yesterday's checkout outage, root cause was an expired TLS cert"
    trace = _router(scripted_openai_llm(scripted_llm))(Question(text))
    assert trace.protocol == "single" and trace.answer.startswith("**Post-mortem")
    [request] = scripted_llm.chat_requests
    assert not request.body.get("tools")  # no tool offered: nothing to look up, never the loop


SUSPECT = Intent("diagnose", 0.93, "classifier", "classifier: diagnose 0.93", request="investigate", also="write")


def test_the_cheap_model_reroutes_a_suspect_investigation_and_its_cost_is_counted(scripted_llm: ScriptedLLM) -> None:
    verdict = {"request": "write", "route": "chitchat", "confidence": 0.9, "reason": "a post-mortem, cause known"}
    scripted_llm.script(
        {"content": json.dumps(verdict), "usage": {"prompt_tokens": 410, "completion_tokens": 25}},
        {"content": "Post-mortem draft ...", "usage": {"prompt_tokens": 300, "completion_tokens": 90}},
    )
    playbook = RecordingPlaybook()
    trace = _router(scripted_openai_llm(scripted_llm), SUSPECT, playbook)(
        Question("write the post-mortem, cert expired")
    )
    assert trace.intent is not None and (trace.intent.route, trace.intent.request, trace.intent.tier) == (
        "chitchat",
        "write",
        "model",
    )
    assert (trace.intent.confirm_prompt_tokens, trace.intent.confirm_completion_tokens) == (410, 25)
    assert trace.totals.prompt_tokens == 410 + 300 and trace.totals.completion_tokens == 25 + 90
    assert trace.totals.elapsed_ms >= trace.intent.confirm_ms
    assert any(n.startswith("intent confirmed by the cheap model: chitchat (435 tokens") for n in trace.notes)
    assert playbook.questions == [] and trace.answer == "Post-mortem draft ..."
    confirm = scripted_llm.chat_requests[0]
    assert "what the person asks the bot to DO" in confirm.messages[0]["content"]
    assert trace_from_dict(trace_to_dict(trace)).intent == trace.intent  # stored and read back whole


def test_a_confirmed_investigation_runs_the_loop_with_the_confirmation_counted(scripted_llm: ScriptedLLM) -> None:
    verdict = {"request": "investigate", "route": "diagnose", "confidence": 0.8, "reason": "cause unknown"}
    scripted_llm.script(
        {"content": json.dumps(verdict), "usage": {"prompt_tokens": 400, "completion_tokens": 20}},
        {"content": "", "tool_calls": [{"name": "error_rate", "arguments": {"service": "checkout"}}]},
        {"content": "checkout 5xx ratio is 2.1 %; the cause is the expired certificate."},
    )
    trace = _router(scripted_openai_llm(scripted_llm), SUSPECT)(Question("find the cause and write it up"))
    assert trace.intent is not None and trace.intent.route == "diagnose" and trace.intent.tier == "classifier"
    assert "confirmed by the cheap model" in trace.intent.reason
    assert trace.totals.tool_calls == 1 and trace.totals.prompt_tokens >= 400


def test_a_failing_confirmation_keeps_the_investigation(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"status": 500, "repeat": 5})
    kept = confirm_investigation("write it up", SUSPECT, scripted_openai_llm(scripted_llm, max_retries=0))
    assert kept.route == "diagnose" and "unconfirmed" in kept.reason and kept.confirm_prompt_tokens == 0


def test_without_a_model_nothing_is_confirmed() -> None:
    playbook = RecordingPlaybook()
    trace = _router(None, SUSPECT, playbook)(Question("find the cause and write it up"))
    assert trace.protocol == "playbook" and trace.intent == SUSPECT and len(playbook.questions) == 1
