"""The lexicon's fifth edition: the bot's own run stopped or hushed, a value asked for a text the writer is writing, a
text asked for in a style or for an audience, an incident the writer has under control, a metric back to normal; and
the scope of a negation: a text or a single value declined reads as such, so what is left is the larger request."""

from __future__ import annotations

import pytest

from bot.routing.cues import FIFTH, compiled_cues
from bot.routing.features import FeatureSpec, cue_names, features_from_text
from bot.routing.intent import also_asked
from bot.routing.lexicon import ASKED_CUES


def _cues(text: str, edition: int = 5) -> set[str]:
    return {name for name in cue_names(text, True, edition) if "+" not in name}


@pytest.mark.parametrize(
    ("text", "cue"),
    [
        ("@opsbot cancel that, it was the staging cluster", "halt"),
        ("@opsbot shut up until the maintenance is over", "halt"),
        ("para, ya lo encontré", "halt"),
        ("pare de analisar, achamos o culpado", "halt"),
        ("arrête de chercher, c'est réglé", "halt"),
        ("hör auf zu suchen, wir haben es", "halt"),
        ("停止那个分析，查错服务了", "halt"),
        ("for the post-mortem: how long was checkout down?", "for_text"),
        ("para el informe, ¿a qué hora empezó?", "for_text"),
        ("c'est pour le rapport : combien de commandes perdues ?", "for_text"),
        ("für den Bericht: wie viele Fehler gab es?", "for_text"),
        ("写复盘报告要用：第一次报警是几点", "for_text"),
        ("draft something for the franchise owners about the outage, keep it non-technical", "write"),
        ("summarise what we know so far, three sentences max", "write"),
        ("explica a caída para los clientes, sin tecnicismos", "write"),
        ("the queue backlog is under control, no action needed", "taken"),
        ("tranquilos, lo tengo controlado", "taken"),
        ("latência normalizou, encerrando", "resolved"),
        ("oh good, the DB fell over during the board demo 👏", "vent"),
        ("o disco encheu de novo, quem tá escrevendo tanto log?", "writes"),
    ],
)
def test_the_fifth_edition_reads_what_the_fourth_missed(text: str, cue: str) -> None:
    assert cue in _cues(text)
    assert cue not in _cues(text, 4)  # the fourth edition did not have these words


@pytest.mark.parametrize(
    ("text", "negated"),
    [
        ("don't just give me a graph, find out why search is slow", "only"),
        ("not just the number please, I need to know what broke", "only"),
        ("no hace falta que escribas nada, averigua por qué cayó el login", "write"),
        ("keine Zusammenfassung bitte, warum ist der Export abgebrochen?", "write"),
        ("pas de résumé, dis-moi pourquoi ça plante", "write"),
        ("不用写报告，查一下支付为什么挂了", "write"),
    ],
)
def test_a_declined_text_or_value_reads_as_declined(text: str, negated: str) -> None:
    cues = _cues(text)
    assert f"not_{negated}" in cues and negated not in cues
    assert negated in _cues(text, 4)  # before the fifth edition the declined word read as asked


@pytest.mark.parametrize(
    ("text", "cue"),
    [
        ("don't investigate, just tell me the error rate", "only"),  # the negation is in another clause
        ("no need to dig: write the status update", "write"),
        ("write the post-mortem, not the timeline", "write"),
    ],
)
def test_a_negation_in_another_clause_leaves_the_request(text: str, cue: str) -> None:
    assert cue in _cues(text) and f"not_{cue}" not in _cues(text)


@pytest.mark.parametrize(
    "text",
    [
        "why is ticketing-api throwing 500s since 14:00?",
        "para el comité de mañana: ¿qué es un circuit breaker?",  # "para" opening a purpose, not "stop"
        "¿por qué se para el consumidor cada hora?",
        "the job stopped after the deploy, why?",
        "对账服务为什么从早上开始报错",
    ],
)
def test_a_plain_request_has_none_of_the_fifth_editions_cues(text: str) -> None:
    assert not _cues(text) & {"halt", "for_text", "taken", "not_write", "not_only"}


def test_the_fifth_edition_only_appends_and_an_older_artifact_keeps_its_own() -> None:
    fourth, fifth = list(compiled_cues(4)), list(compiled_cues(5))
    assert fifth[: len(fourth)] == fourth and fifth[len(fourth) :] == ["halt", "for_text"]
    assert {"halt", "for_text", "not_write", "not_only"} <= ASKED_CUES and set(FIFTH) - {"halt", "for_text"} <= set(
        fourth
    )
    text = "@opsbot stop, wrong cluster"
    assert features_from_text(text, FeatureSpec(lexicon=4)) != features_from_text(text, FeatureSpec(lexicon=5))
    plain = "why is order slow since 15:05?"
    assert features_from_text(plain, FeatureSpec(lexicon=4)) == features_from_text(plain, FeatureSpec(lexicon=5))


@pytest.mark.parametrize(
    ("text", "also"),
    [
        ("para de investigar, opsbot, ya lo encontramos", "command"),
        ("for the post-mortem: what was the error rate at 10:05 when checkout broke?", "lookup"),
        ("keine Zusammenfassung bitte, warum ist der Export abgebrochen?", ""),  # the text declined: nothing smaller
    ],
)
def test_a_message_routed_to_diagnose_with_a_smaller_request_asks_the_cheap_model_first(text: str, also: str) -> None:
    assert also_asked(frozenset(_cues(text))) == also
