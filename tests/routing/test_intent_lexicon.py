"""The lexicon's second edition: what a message states beside its request (the cause known or still unknown, one
value of a past window, venting) and wider request words, in every language; an older artifact keeps its edition."""

from __future__ import annotations

import pytest

from bot.routing.cues import LEXICON, compiled_cues, cues_in
from bot.routing.features import FeatureSpec, cue_names, features_from_text, normalised
from bot.routing.lexicon import STATED, WIDER


def _cues(text: str, edition: int = 2) -> set[str]:
    return {name for name in cue_names(text, True, edition) if "+" not in name}


@pytest.mark.parametrize(
    ("text", "cue"),
    [
        ("write the post-mortem for Tuesday's outage, root cause was the expired LB cert", "known"),
        ("draft the status update: cause: microwave backhaul down, vendor restored it 16:20", "known"),
        ("HL7 backlog cleared, caused by the interface engine disk filling up. write a short update", "known"),
        ("escribe el after-action de lo de anoche, ya sabemos que fue el cron de backups", "known"),
        ("faz o relatório do incidente de ontem, já sabemos que foi o disco cheio", "known"),
        ("rédige le REX de l'incident, cause connue : mauvaise police d'imprimante", "known"),
        ("Management-Summary zum OTA-Vorfall bitte. Ursache ist bekannt", "known"),
        ("原因已查明是行情源主备切换，帮我写封致歉信", "known"),
        ("the overnight downtime on pharmacy-verify, cause still unknown. can you do an RCA?", "unknown"),
        ("la caída de anoche en bag-tracking sigue sin causa conocida. ¿haces un RCA?", "unknown"),
        ("o incidente de sábado ficou sem causa raiz. consegues analisar?", "unknown"),
        ("l'incident du 4 avril n'a toujours pas de cause. Tu peux faire la RCA ?", "unknown"),
        ("der Paywall-Ausfall Sonntagnacht ist immer noch ungeklärt", "unknown"),
        ("凌晨那个 INC-4471 已经恢复了，但原因还不知道，帮我做一下 RCA", "unknown"),
        ("what was the peak error rate on claims-intake during last night's outage?", "past_value"),
        ("¿cuál fue el pico de errores en pedidos-api durante la caída del domingo?", "past_value"),
        ("quanto tempo durou a indisponibilidade do checkout na terça?", "past_value"),
        ("c'était quoi le pic d'erreurs sur auth-joueurs pendant la panne d'hier soir?", "past_value"),
        ("wie lange ging die Paywall-Störung insgesamt?", "past_value"),
        ("昨晚订单中心故障期间错误率峰值是多少？", "past_value"),
        ("ugh, 4th page tonight. I need a vacation", "vent"),
        ("tercera noche seguida de guardia, no puedo más 😵", "vent"),
        ("encore une nuit blanche à cause du leaderboard, j'en peux pu 😩", "vent"),
        ("dritter Pager-Alarm heute Nacht. ich brauch Urlaub", "vent"),
        ("唉，今晚第五次被叫醒，想辞职", "vent"),
    ],
)
def test_what_a_message_states_beside_its_request_is_a_cue_in_every_language(text: str, cue: str) -> None:
    assert cue in _cues(text)
    assert cue not in _cues(text, edition=1)  # the first edition's artifacts never saw it


@pytest.mark.parametrize(
    "text",
    [
        "is the redis failover at 02:13 the cause of the duplicate refunds?",
        "did the kafka broker restart cause the lag on scans-colis? take a look",
        "¿el último deploy de drm-license es la causa de los errores de licencia?",
        "est-ce que le déploiement d'hier est la cause des étiquettes mal imprimées ?",
        "kafka consumer lag 一直在涨，现在150万了，什么原因",
    ],
)
def test_a_cause_asked_about_is_not_a_cause_known(text: str) -> None:
    assert "known" not in _cues(text)


@pytest.mark.parametrize(
    ("text", "cue"),
    [
        ("turn my notes into a proper post-mortem", "write"),
        ("make this sound professional: 'sms is broken, we're on it'", "write"),
        ("handover note for night shift pls - porting jobs stuck", "write"),
        ("把这段改正式一点：'证照服务炸了，正在修'", "write"),
        ("was there a deploy to patch-cdn this morning? yes/no is fine", "only"),
        ("what changed in the card-auth 7.3.1 deploy? diff summary is enough", "only"),
        ("don't bother looking, we found it — it was the cron", "no_dig"),
        ("kannst du ignorieren, die Disconnects kamen vom geplanten Broker-Restart", "no_dig"),
        ("which telemetry dashboards can you see?", "list"),
        ("你能看哪些政务云 dashboard？", "list"),
        ("any open incidents right now?", "list"),
        ('"error budget burn rate 14.4x" 这个是啥意思', "concept"),
    ],
)
def test_the_second_edition_reads_more_ways_to_ask(text: str, cue: str) -> None:
    assert cue in _cues(text) and cue not in _cues(text, edition=1)


def test_each_edition_only_appends_so_older_cues_keep_their_names_and_order() -> None:
    first, second = list(compiled_cues(1)), list(compiled_cues(2))
    assert second[: len(first)] == first and second[len(first) :] == list(STATED)
    assert set(WIDER) <= set(first)  # wider words join cues the first edition has
    norm = normalised("write the post-mortem, root cause was an expired cert")
    assert cues_in(norm, lexicon=1) == [c for c in cues_in(norm, lexicon=1) if "known" not in c]


def test_an_artifact_of_the_first_edition_is_served_with_it() -> None:
    first = FeatureSpec.from_dict({**FeatureSpec().to_dict(), "lexicon": True})  # how such an artifact says so
    assert first.lexicon == 1 and FeatureSpec().lexicon == LEXICON
    text = "root cause confirmed: expired TLS cert on the PayNow gateway. write the post-mortem draft pls"
    assert features_from_text(text, first) != features_from_text(text)
    plain = "why is order slow since 15:05?"
    assert features_from_text(plain, first) == features_from_text(plain)  # nothing of the second edition in it
