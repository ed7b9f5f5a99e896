"""The lexicon's fourth edition: an alert the person has taken themselves, the bot waved off or stopped, changes asked
for in the other languages, who is on call, how to use the bot, more list and document words, other alerting tools'
pages, and a pasted log line in inline code read as code; an artifact trained on an older edition is served without
them."""

from __future__ import annotations

import pytest

from bot.routing.cues import compiled_cues
from bot.routing.features import FeatureSpec, cue_names, features_from_text, normalised
from bot.routing.intent import also_asked
from bot.routing.lexicon import ASKED_CUES, FOURTH


def _cues(text: str, edition: int = 4) -> set[str]:
    return {name for name in cue_names(text, True, edition) if "+" not in name}


@pytest.mark.parametrize(
    ("text", "cue"),
    [
        ("acked, I'm on it. checking the LB myself", "taken"),
        ("lo cojo yo, ya estoy en ello", "taken"),
        ("reconhecido, já estou a tratar", "taken"),
        ("c'est pris, je m'en occupe", "taken"),
        ("bin dran, melde mich gleich", "taken"),
        ("已认领，我在处理", "taken"),
        ("pas d'enquête, dis-moi juste la version en prod", "no_dig"),
        ("não é preciso o bot, obrigado", "no_dig"),
        ("已经在处理了，不用 bot", "no_dig"),
        ("stop, that is the wrong cluster", "act"),
        ("préviens l'astreinte base de données", "act"),
        ("alarmiere die Datenbank-Rufbereitschaft", "act"),
        ("schalte die Disk-Alarme für eine Stunde stumm", "request_change"),
        ("who's on call for payments this week?", "value"),
        ("quién está de guardia en redes hoy?", "value"),
        ("谁值班？", "value"),
        ("¿qué podés hacer vos?", "help"),
        ("comment on t'utilise ?", "help"),
        ("wie benutze ich dich?", "help"),
        ("把 prod 里所有 namespace 列给我", "list"),
        ("post mortem for the login outage, cause known", "document"),
        ("oh sure, ship it on Friday evening, what could go wrong 🙄", "vent"),
        ("die Platte läuft voll, was schreibt da?", "symptom"),
    ],
)
def test_the_fourth_edition_reads_what_the_third_missed(text: str, cue: str) -> None:
    assert cue in _cues(text)
    assert cue not in _cues(text, 3)  # the third edition did not have these words


@pytest.mark.parametrize(
    "text",
    [
        "why is ticketing-api throwing 500s since 14:00?",
        "¿por qué la pasarela devuelve errores desde las 10?",
        "pourquoi la synchro est bloquée depuis ce matin ?",
        "warum schlägt der Export seit heute früh fehl?",
        "对账服务为什么从早上开始报错",
        "I got this error from checkout since 10:00, why?",  # "I got this" takes an alert only where it ends a clause
        "ich sehe 500er im Checkout seit heute früh, warum?",
    ],
)
def test_a_plain_request_has_none_of_the_fourth_editions_cues(text: str) -> None:
    assert not _cues(text) & {"taken", "no_dig", "act", "vent"}


def test_other_alerting_tools_pages_read_as_a_pasted_alert_from_the_fourth_edition() -> None:
    page = "[PagerDuty] TRIGGERED #5521\napi-socios latency p99 > 2s\nUrgency: high\n\nlo cojo yo"
    assert "alert" in _cues(page) and "alert" not in _cues(page, 3)


def test_a_pasted_log_line_in_inline_code_reads_as_code_from_the_fourth_edition() -> None:
    text = "explain this line: `WARN pool-1 Connection is not available, request timed out`"
    assert normalised(text, True, 4) == "explain this line: code"
    assert "timed out" in normalised(text, True, 3)
    assert normalised("why is `order-svc` slow", True, 4) == "why is `order-svc` slow"  # a short name stays


def test_the_fourth_edition_only_appends_and_an_older_artifact_keeps_its_own() -> None:
    third, fourth = list(compiled_cues(3)), list(compiled_cues(4))
    assert fourth[: len(third)] == third and fourth[len(third) :] == ["taken", "writes"]
    assert {"taken", "writes"} <= ASKED_CUES and set(FOURTH) - {"taken", "writes"} <= set(third)
    text = "acked, I'm on it, no need for the bot"
    assert features_from_text(text, FeatureSpec(lexicon=3)) != features_from_text(text, FeatureSpec(lexicon=4))
    plain = "why is order slow since 15:05?"
    assert features_from_text(plain, FeatureSpec(lexicon=3)) == features_from_text(plain, FeatureSpec(lexicon=4))


def test_an_alert_the_writer_has_taken_beside_an_investigation_asks_the_cheap_model_first() -> None:
    page = "[FIRING:1] HighErrorRate draw-engine (prod)\nsummary: 5xx ratio > 5% for 10m\n\nacked, I'm on it"
    assert also_asked(frozenset(_cues(page))) == "chat"
    assert also_asked(frozenset(_cues("[FIRING:1] HighErrorRate draw-engine, why is it firing?"))) == ""
