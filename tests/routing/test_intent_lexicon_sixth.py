"""The lexicon's sixth edition: a German question in a subordinate clause, texting and European Portuguese, a trend or
a leak outside English, a symptom since a change and "what changed", panic, the writer's own escalation, a report
relayed from someone else, an either-or state, sarcasm in more emoji, a text for a report in a contraction; and a
Portuguese negation's scope ("não quero resumo")."""

from __future__ import annotations

import pytest

from bot.routing.cues import SIXTH, compiled_cues
from bot.routing.features import FeatureSpec, cue_names, features_from_text


def _cues(text: str, edition: int = 6) -> set[str]:
    return {name for name in cue_names(text, True, edition) if "+" not in name}


@pytest.mark.parametrize(
    ("text", "cue"),
    [
        ("kannst du mal nachsehen, was da los ist? der Export hängt", "why"),
        ("ich verstehe nicht, woran es liegt", "why"),
        ("o login tá lento, vê o q se passa", "why"),
        ("a fila das lojas está em baixo desde as 9h", "symptom"),
        ("os clientes não conseguem entrar na conta", "symptom"),
        ("los clientes no pueden pagar con tarjeta", "symptom"),
        ("la mémoire du worker grimpe toute la nuit", "symptom"),
        ("timeouts on checkout since yesterday's deploy", "since_change"),
        ("Fehler auf /api/konto seit dem Deploy heute früh", "since_change"),
        ("latência alta desde o deploy das 10h", "since_change"),
        ("o que é que mudou no gateway?", "what_changed"),
        ("was hat sich am Cluster geändert?", "what_changed"),
        ("HELP!! nothing loads on the ward tablets", "panic"),
        ("no sé por dónde empezar, se cayó todo", "panic"),
        ("checkout down again. calling Priya now", "taken"),
        ("me escribe un cliente que no le llega el SMS", "writes"),
        ("@opsbot ack INC-4471", "act"),
        ("is the kill switch on or off in prod?", "value"),
        ("viernes a las 6pm, ¿qué podría salir mal? 🙃", "vent"),
        ("pro relatório: quanto tempo o PIX ficou fora?", "for_text"),
    ],
)
def test_the_sixth_edition_reads_what_the_fifth_missed(text: str, cue: str) -> None:
    assert cue in _cues(text)
    assert cue not in _cues(text, 5)  # the fifth edition did not have these words


def test_a_portuguese_negation_declines_the_text_it_scopes() -> None:
    text = "não quero resumo, quero saber porquê o serviço de faturação está a falhar"
    assert "not_write" in _cues(text) and "write" in _cues(text, 5)
    assert "write" in _cues("faz um resumo do incidente, não quero detalhes técnicos")  # negation after the text


@pytest.mark.parametrize(
    "text",
    [
        "what's the p99 of search right now?",
        "write the status update for the outage, cause known",
        "为什么订单服务这么慢",
        "¿cuál fue el pico de errores anoche?",
    ],
)
def test_a_plain_request_has_none_of_the_sixth_editions_new_cues(text: str) -> None:
    assert not _cues(text) & {"since_change", "what_changed", "panic"}


@pytest.mark.parametrize(
    "text",
    [
        "getting deadline exceeded from eligibility-svc when called from portal-bff",
        "3 hospitals calling saying the reminder SMS is not going out",
    ],
)
def test_a_call_in_a_report_is_not_the_writer_taking_the_incident(text: str) -> None:
    assert "taken" not in _cues(text)


def test_the_sixth_edition_only_appends_and_an_older_artifact_keeps_its_own() -> None:
    fifth, sixth = list(compiled_cues(5)), list(compiled_cues(6))
    assert sixth[: len(fifth)] == fifth and sixth[len(fifth) :] == ["since_change", "what_changed", "panic"]
    assert set(SIXTH) - {"since_change", "what_changed", "panic"} <= set(fifth)
    text = "HELP!! nothing loads since the deploy"
    assert features_from_text(text, FeatureSpec(lexicon=5)) != features_from_text(text, FeatureSpec(lexicon=6))
    plain = "why is order slow since 15:05?"
    assert features_from_text(plain, FeatureSpec(lexicon=5)) == features_from_text(plain, FeatureSpec(lexicon=6))
