"""The lexicon's third edition: chat that sounds like trouble and asks for nothing (venting and sarcasm in every
language, laughter, a status note to the channel, the bot waved off) has cues of its own, and an artifact trained on
the second edition is served without them."""

from __future__ import annotations

import pytest

from bot.routing.cues import compiled_cues
from bot.routing.features import FeatureSpec, cue_names, features_from_text
from bot.routing.intent import also_asked
from bot.routing.lexicon import ASKED_CUES, THIRD


def _cues(text: str, edition: int = 3) -> set[str]:
    return {name for name in cue_names(text, True, edition) if "+" not in name}


@pytest.mark.parametrize(
    ("text", "cue"),
    [
        ("ugh, ticketing-api again. living the dream", "vent"),
        ("qué maravilla, la pasarela otra vez, siempre me toca a mí", "vent"),
        ("aff, mais uma vez o estoque, que vida", "vent"),
        ("pff, encore la synchro, merci la vie", "vent"),
        ("boah, ausgerechnet heute fällt der Export aus, herrlich", "vent"),
        ("唉，对账又挂了，我真的会谢", "vent"),
        ("lol the queue graph looks like a mountain range", "laugh"),
        ("jajaja el tablero entero en rojo", "laugh"),
        ("kkkkk o painel virou pisca-pisca", "laugh"),
        ("mdr la page de statut est verte", "laugh"),
        ("哈哈 监控又红了", "laugh"),
        ("quick status: mitigation holding, errors flat for 20 min", "fyi"),
        ("Zwischenstand: Replikation holt auf, melde mich wieder", "fyi"),
        ("point d'étape : la synchro rattrape son retard", "fyi"),
        ("acked, I'm on it with the network team, no need for the bot", "no_dig"),
        ("je gère avec le réseau, pas besoin du bot", "no_dig"),
        ("ich bin dran, Bot nicht nötig", "no_dig"),
    ],
)
def test_the_third_edition_reads_chat_that_sounds_like_trouble(text: str, cue: str) -> None:
    assert cue in _cues(text)
    assert cue not in _cues(text, 2)  # the second edition did not have these words


@pytest.mark.parametrize(
    "text",
    [
        "why is ticketing-api throwing 500s since 14:00?",
        "¿por qué la pasarela devuelve errores desde las 10?",
        "porque é que o estoque parou de sincronizar?",
        "pourquoi la synchro est bloquée depuis ce matin ?",
        "warum schlägt der Export seit heute früh fehl?",
        "对账服务为什么从早上开始报错",
    ],
)
def test_a_plain_request_has_none_of_the_third_editions_cues(text: str) -> None:
    assert not _cues(text) & {"vent", "laugh", "no_dig"}


def test_the_third_edition_only_appends_and_an_older_artifact_keeps_its_own() -> None:
    second, third = list(compiled_cues(2)), list(compiled_cues(3))
    assert third[: len(second)] == second and third[len(second) :] == ["laugh"]
    assert "laugh" in ASKED_CUES and set(THIRD) - {"laugh"} <= set(second)
    text = "lol billing is down again, no need for the bot"
    assert features_from_text(text, FeatureSpec(lexicon=2)) != features_from_text(text, FeatureSpec(lexicon=3))
    plain = "why is order slow since 15:05?"
    assert features_from_text(plain, FeatureSpec(lexicon=2)) == features_from_text(plain, FeatureSpec(lexicon=3))


def test_laughter_beside_an_investigation_asks_the_cheap_model_first() -> None:
    assert also_asked(frozenset(_cues("lmao checkout is down again, great"))) == "chat"
    assert also_asked(frozenset(_cues("checkout is down since 14:00, why?"))) == ""
