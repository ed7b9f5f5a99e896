"""The lexicon's seventh edition: a given text reshaped (shortened, translated, reworded, made calmer) or an apology
to write, an investigation called off or "nothing to investigate", a page, a rollback or a tracker ticket asked for
after a pasted alert, the bot hushed, how a thing works, an announcement made in passing; in every language."""

from __future__ import annotations

import pytest

from bot.routing.cues import SEVENTH, compiled_cues
from bot.routing.features import FeatureSpec, cue_names, features_from_text


def _cues(text: str, edition: int = 7) -> set[str]:
    return {name for name in cue_names(text, True, edition) if "+" not in name}


@pytest.mark.parametrize(
    ("text", "cue"),
    [
        ("please shorten this for the board: the ledger sync lagged 40 min after a broker filled its disk", "write"),
        ("translate the update above into Dutch for the Flemish stores", "write"),
        ("make it less panicky: 'EVERYTHING IS DOWN, nobody knows why'", "write"),
        ("give me a two-line update I can paste into #support", "write"),
        ("acórtalo para gerencia: la sincronización falló por un disco lleno", "write"),
        ("deixa essa mensagem mais curta pro canal da diretoria", "write"),
        ("raccourcis ce message pour le comité de direction", "write"),
        ("kürz das für die Geschäftsführung auf zwei Sätze", "write"),
        ("把这段压缩成两句发给老板", "write"),
        ("maintenance tonight on the substation, readings will drop. nothing to investigate", "no_dig"),
        ("mantenimiento esta noche, no hay que investigar nada", "no_dig"),
        ("manutenção amanhã das 2h às 4h, nada pra investigar", "no_dig"),
        ("coupure programmée cette nuit, rien à investiguer", "no_dig"),
        ("para tudo, cancela a investigação, já achamos o problema", "halt"),
        ("ok, call off the investigation, Lena found it", "halt"),
        ("se cala por 1h, tá poluindo o canal", "halt"),
        ("你先在这个频道里闭麦一小时", "halt"),
        ("card-auth is on fire, page the on-call from payments", "act"),
        ("bitte die Rufbereitschaft vom Energie-Team anpiepen", "act"),
        ("在 Jira 上给 DBA 组开个单", "act"),
        ("Sentry: TypeError en tienda-web, haz rollback de tienda-web a la versión anterior", "act"),
        ("¿cómo funciona un despliegue canario?", "concept"),
        ("comment marche un déploiement blue/green ?", "concept"),
        ("how is a readiness probe different from a liveness probe?", "concept"),
        ("só avisando: subindo o canário pra 25% agora", "fyi"),
        ("just letting you know we're rolling the canary to 50%", "fyi"),
    ],
)
def test_the_seventh_edition_reads_more_ways_to_ask(text: str, cue: str) -> None:
    assert cue in _cues(text) and cue not in _cues(text, edition=6)


@pytest.mark.parametrize(
    "text",
    [
        "kannst du kürzlich die Logs vom Export prüfen?",  # "recently", not "shorten"
        "nur kurz: wie hoch ist die p99 von konto-api?",
        "why did the cache failover this morning slow checkout down?",
        "is the translation-service down?",  # a service's name, not a text to translate
    ],
)
def test_words_near_the_seventh_editions_are_not_its_cues(text: str) -> None:
    assert not {"write", "halt", "no_dig"} & _cues(text)


def test_the_seventh_edition_only_appends_and_an_older_artifact_keeps_its_own() -> None:
    sixth, seventh = list(compiled_cues(6)), list(compiled_cues(7))
    assert seventh == sixth and set(SEVENTH) <= set(sixth)  # its words join cues the sixth edition has
    text = "please shorten this for the execs"
    assert features_from_text(text, FeatureSpec(lexicon=6)) != features_from_text(text, FeatureSpec(lexicon=7))
    plain = "why is order slow since 15:05?"
    assert features_from_text(plain, FeatureSpec(lexicon=6)) == features_from_text(plain, FeatureSpec(lexicon=7))
