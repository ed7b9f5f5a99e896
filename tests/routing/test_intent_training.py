"""The learned classifier: its features, its artifact, `opsbot intent train | export`, and the held-out targets."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.cli import app
from bot.engine.types import Intent
from bot.routing.features import FeatureSpec, features_from_text, plain_from_slack
from bot.routing.intent import REQUEST_ROUTES, classify
from bot.routing.model import SHIPPED, IntentModel, load_model, save_model, shipped_model
from bot.routing.scorecard import ROUTES, Example, load_corpus, score
from bot.store.sqlite import SqliteTraceStore
from tests.store.known_traces import make_trace


@pytest.mark.parametrize(
    ("raw", "plain"),
    [
        ("<@U07QX2B1Z> hi", "hi"),
        ("see <https://grafana.example.com/d/x|the dash> and <#C024BE91L|incidents>", "see the dash and incidents"),
        ("<https://example.com/a?b=1&amp;c=2>", "link"),
        ("errors: ```Traceback (most recent call last):\n  File x``` why", "errors: code why"),
        ("p99 &gt; 2s &amp; rising &lt;now&gt;", "p99 > 2s & rising <now>"),
        ("<!here> payment is down", "payment is down"),
        ("> quoted alert line\nwhat is the root cause?", "quoted alert line what is the root cause?"),
    ],
)
def test_slack_markup_becomes_plain_words(raw: str, plain: str) -> None:
    assert plain_from_slack(raw) == plain


def test_features_are_stable_hashed_and_normalised() -> None:
    spec = FeatureSpec(cue_weight=0.0)
    first = features_from_text("Order P99 飙升 since 15:05", spec)
    assert first == features_from_text("order p99 飙升 since 14:20", spec)  # case and digits do not matter
    assert sum(v * v for v in first.values()) == pytest.approx(1.0)
    assert all(0 <= bucket < spec.buckets for bucket in first)
    assert features_from_text("", spec) == {}


def test_corpus_is_large_multilingual_and_split_before_training() -> None:
    corpus = load_corpus()
    assert len(corpus) >= 800
    assert {e.lang for e in corpus} == {"en", "zh", "es", "pt", "fr", "de"} and {e.route for e in corpus} == set(ROUTES)
    for lang in ("es", "pt", "fr", "de"):  # two writers who labelled what each message asks for, in each language
        assert sum(e.lang == lang and e.kind in ("extra-t1", "extra-t2") for e in corpus) >= 100, lang
    heldout = [e for e in corpus if e.split == "heldout"]
    for route in ROUTES:
        for lang in ("en", "zh"):
            assert any(e.route == route and e.lang == lang for e in heldout), (route, lang)
    texts = [e.text.strip().lower() for e in corpus]
    assert len(texts) == len(set(texts))  # no message is both trained on and held out
    for example in corpus:  # a request, where known, always fits the route
        assert not example.request or REQUEST_ROUTES[example.request] == example.route, example
    assert {e.request for e in corpus if e.kind == "extra-t1"} == set(REQUEST_ROUTES)
    for writer in (f"extra-o{n}" for n in range(1, 21)):  # outside writers
        lines = [e for e in corpus if e.kind == writer]
        assert len(lines) >= 280 and {e.request for e in lines} == set(REQUEST_ROUTES), writer
        assert {e.split for e in lines} == {"train"} and len({e.lang for e in lines}) == 6, writer


def test_shipped_classifier_holds_its_held_out_score_without_a_model() -> None:
    """The bar on the held-out split is >= 95 % overall, <= 3 % needless investigations, <= 3 % missed
    diagnoses. Measured when the artifact was trained (no LLM, options chosen by leave-one-writer-out over extra-w1..w9
    on the train split, 573 lines from two more writers, w8 and w9, added to it, the measured, baseline, entity and
    anchor cues and shift -0.2): 240/246 (97.6 %), 3/148 needless (2.0 %) and 1/98 missed; the models before it had
    239/246, 3/148 and 1/98, then 240/246, 3/148 and 0/98, then 238/246, 4/148 and 2/98, and 235/246, 5/148 and
    1/98. With the new languages, the request cues and shift 0.2 (chosen over 11 writer groups): 236/246 (95.9 %),
    4/148 needless (2.7 %), 1/98 missed; with the request kinds as the classes, the lexicon's second edition and
    shift 0.1 (chosen over 13 writer groups), the same 236/246, 4/148 and 1/98; with four outside writers' lines,
    the fourth edition and a request-cue weight of 0.4 (chosen over 17 writer groups), 237/246 (96.3 %), 4/148
    needless and 1/98 missed; with two more outside writers, the fifth edition and shift 0.0 (chosen over 19 groups),
    238/246 (96.7 %), 3/148 needless and 1/98 missed; with twelve more outside writers, the sixth and seventh editions
    (chosen over their leave-out), 236/246 (95.9 %), 3/148 needless and 3/98 missed; with shift 0.8 (chosen over
    eleven writer groups, training.py), 235/246 (95.5 %), 5/148 needless (3.4 %, one over the bar) and 2/98 missed;
    with four more outside writers, the eighth edition and shift -0.2 (chosen over fifteen writer groups),
    236/246 (95.9 %), 3/148 needless and 3/98 missed (3.1 %, one over the bar). The floor leaves a message or two
    of margin and only catches a regression; tests/bench/bench_intent.py and `opsbot intent train` print the full
    tables, `opsbot intent cv` the cross-validated ones."""
    card = score(lambda text: classify(text).route, [e for e in load_corpus() if e.split == "heldout"])
    assert card.accuracy() >= (234, 246)
    assert card.needless_investigations() <= (5, 148) and card.missed_diagnoses() <= (3, 98)


def test_shipped_classifier_holds_its_score_on_the_unseen_split() -> None:
    """The third held-out split. Its errors are never read and nothing is tuned on it; scored once per retrained
    artifact (161/177, 5/114 needless, 5/63 missed; then 168/177, 4/114, 2/63; then 167/177, 4/114, 1/63; now, with
    the three new writers' lines, 171/177, 3/114 needless and 0/63 missed; with two more writers, Traditional Chinese
    read as Simplified and lighter cues, 174/177, 0/114 needless and 1/63 missed; with w6 and w7 and the done and
    ask_act cues, the same 174/177, 0/114 and 1/63; with w8 and w9, the measured, baseline, entity and anchor cues and
    shift -0.2, 173/177, 0/114 needless and 2/63 missed; with the new languages, the request cues and shift 0.2,
    173/177, 1/114 needless and 1/63 missed; with the request kinds as the classes, 174/177, 0/114 and 1/63; with
    the outside writers, the fourth edition and a request-cue weight of 0.4, 173/177, 0/114 and 2/63; with two more
    outside writers, the fifth edition and shift 0.0, 172/177, 0/114 and 3/63; with twelve more outside writers and
    the seventh edition, 172/177, 0/114 and 2/63; with shift 0.8, 173/177, 0/114 and 1/63). A little margin; only
    catches a regression."""
    card = score(lambda text: classify(text).route, [e for e in load_corpus() if e.split == "unseen"])
    assert card.accuracy() >= (171, 177)
    assert card.missed_diagnoses() <= (3, 63) and card.needless_investigations() <= (2, 114)


def test_the_fresh_split_was_folded_into_training() -> None:
    """`fresh` (110 messages) had its errors read while an earlier model was tuned, so it no longer measured
    anything: its lines are train data now (kind "fresh"), and only heldout, unseen and blind are held out."""
    corpus = load_corpus()
    assert {e.split for e in corpus} == {"train", "heldout", "unseen", "blind"}
    assert sum(e.kind == "fresh" and e.split == "train" for e in corpus) == 110


def test_shipped_classifier_holds_its_score_on_the_blind_split() -> None:
    """`blind` (321 messages, EN 160 / ZH 161) was written by a writer who never saw the corpus, the code or the
    other splits, and it was kept outside the repository while the gate was tuned: no tuner saw it. Scored by the
    lead three times, numbers only: 296/338 before this round (the 17 texts already in the corpus since removed),
    301/338 after the first retrain, 311/338 = 295/321 after the second (needless 12/185, missed 8/136); scored once
    after the third (two more writers, options chosen by leave-one-writer-out): 304/321 (94.7 %), needless 7/185
    (3.8 %), missed 7/136 (5.1 %); scored once after the fourth (w6 and w7, shift -0.1, the done and ask_act cues):
    305/321 (95.0 %), needless 4/185 (2.2 %), missed 8/136 (5.9 %); scored once after the fifth (w8 and w9, the
    measured, baseline, entity and anchor cues, the fyi cue split from a resolved one, shift -0.2): 309/321 (96.3 %),
    needless 3/185 (1.6 %), missed 7/136 (5.1 %); after the sixth (the new languages, the request cues, shift 0.2),
    309/321 (96.3 %), needless 4/185 (2.2 %), missed 6/136 (4.4 %); the artifact over the request kinds scored
    306/321, 4/185 and 8/136, and after the seventh (four outside writers' lines, the fourth edition, a request-cue
    weight of 0.4) 307/321 (95.6 %), needless 4/185 (2.2 %), missed 8/136 (5.9 %); after the eighth (two more outside
    writers, the fifth edition, shift 0.0) 307/321, needless 3/185 (1.6 %), missed 8/136; after twelve more outside
    writers and the seventh edition 306/321, needless 4/185, missed 8/136; with shift 0.8 308/321 (96.0 %), needless
    4/185, missed 6/136 (4.4 %). This is the honest measure
    of a new writer, and missed diagnoses are still over the bar. The floor only catches a regression."""
    card = score(lambda text: classify(text).route, [e for e in load_corpus() if e.split == "blind"])
    assert card.accuracy() >= (305, 321)
    assert card.needless_investigations() <= (6, 185) and card.missed_diagnoses() <= (9, 136)


SMALL = [
    Example("why is order slow", "diagnose"),
    Example("checkout throws 500s", "diagnose"),
    Example("order p99 now?", "lookup"),
    Example("what is the qps of cart", "lookup"),
    Example("hi", "chitchat"),
    Example("thanks!", "chitchat"),
    Example("help", "help"),
    Example("what can you do", "help"),
    Example("restart order", "act"),
    Example("roll back cart", "act"),
    Example("payment is down", "diagnose", split="heldout"),
    Example("hello", "chitchat", split="heldout"),
]


def _write_corpus(path: Path, examples: list[Example]) -> Path:
    lines = [json.dumps({"text": e.text, "route": e.route, "lang": e.lang, "split": e.split}) for e in examples]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_intent_train_is_reproducible_and_prints_held_out_scores(tmp_path: Path) -> None:
    corpus = _write_corpus(tmp_path / "corpus.jsonl", SMALL)
    outputs = []
    for name in ("a.bin", "b.bin"):
        result = CliRunner().invoke(app, ["intent", "train", "--corpus", str(corpus), "--out", str(tmp_path / name)])
        assert result.exit_code == 0, result.output
        outputs.append(result.output)
    assert (tmp_path / "a.bin").read_bytes() == (tmp_path / "b.bin").read_bytes()
    assert "10 to train, held out: heldout 2" in outputs[0] and "overall" in outputs[0] and "confusion" in outputs[0]
    model = load_model(tmp_path / "a.bin")
    assert model.routes == ROUTES and model.meta["trained_on"] == 10 + 6  # + a renamed copy of the 6 naming a service
    assert model.scores("why is payment slow").route == "diagnose"


def test_intent_train_takes_reviewed_exports_and_skips_unlabelled_lines(tmp_path: Path) -> None:
    corpus = _write_corpus(tmp_path / "corpus.jsonl", SMALL)
    extra = tmp_path / "reviewed.jsonl"
    extra.write_text(
        json.dumps({"text": "page the on-call", "route": "act", "split": "heldout"})
        + "\n"
        + json.dumps({"text": "who knows", "route": ""})
        + "\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(
        app, ["intent", "train", "--corpus", str(corpus), "--extra", str(extra), "--out", str(tmp_path / "m.bin")]
    )
    assert result.exit_code == 0, result.output
    assert "11 to train, held out: heldout 2" in result.output  # a reviewed line always trains, never held out


def test_cross_validation_predicts_every_train_message_from_a_model_that_did_not_learn_it() -> None:
    from bot.routing.training import TrainOptions, cross_validate

    train = [e for e in SMALL if e.split == "train"]
    card = cross_validate(train, TrainOptions(), folds=2)
    assert card.examples == tuple(train) and all(p in ROUTES for p in card.predicted)
    assert card.accuracy()[1] == len(train)
    assert card == cross_validate(train, TrainOptions(), folds=2)  # same corpus, same folds, same predictions


def test_diagnose_shift_moves_only_the_diagnose_bias_and_is_recorded() -> None:
    from bot.routing.training import TrainOptions, train_model

    train = [e for e in SMALL if e.split == "train"]
    plain = train_model(train, TrainOptions(diagnose_shift=0.0, by_request=False))  # a model over the routes
    shifted = train_model(train, TrainOptions(diagnose_shift=0.5, by_request=False))
    moved = [b - a for a, b in zip(plain.bias, shifted.bias, strict=True)]
    assert moved == pytest.approx([0.5 if route == "diagnose" else 0.0 for route in ROUTES])
    assert shifted.meta["diagnose_shift"] == 0.5
    text = "is it slow"
    assert dict(shifted.scores(text).ranked)["diagnose"] > dict(plain.scores(text).ranked)["diagnose"]


def test_intent_cv_prints_a_cross_validated_scorecard_of_the_train_split_only(tmp_path: Path) -> None:
    corpus = _write_corpus(tmp_path / "corpus.jsonl", SMALL)
    result = CliRunner().invoke(app, ["intent", "cv", "--corpus", str(corpus), "--folds", "2"])
    assert result.exit_code == 0, result.output
    assert "2-fold cross-validation on 10 train messages" in result.output
    assert "missed diagnoses" in result.output and "confusion" in result.output


def test_intent_cv_scores_a_left_out_kind_by_a_model_that_never_read_it(tmp_path: Path) -> None:
    from bot.routing.training import TrainOptions, leave_kind_out

    train = [
        replace(e, kind="w9") if e.text in ("roll back cart", "why is order slow") else e
        for e in SMALL
        if e.split == "train"
    ]
    card = leave_kind_out(train, "w9", TrainOptions())
    assert [e.text for e in card.examples] == ["why is order slow", "roll back cart"]
    assert all(p in ROUTES for p in card.predicted)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"text": e.text, "route": e.route, "kind": e.kind}) + "\n" for e in train), encoding="utf-8"
    )
    result = CliRunner().invoke(app, ["intent", "cv", "--corpus", str(corpus), "--folds", "2", "--leave-out", "w9"])
    assert result.exit_code == 0, result.output
    assert "kind 'w9' (2 lines) by a model trained on the other 8" in result.output


def test_intent_cv_sums_up_several_left_out_kinds_as_the_mean_and_the_pooled_rates(tmp_path: Path) -> None:
    from bot.routing.scorecard import leave_out_summary
    from bot.routing.training import TrainOptions, leave_kind_out

    writers = {"why is order slow": "w8", "hi": "w8", "order p99 now?": "w9", "restart order": "w9"}
    train = [replace(e, kind=writers.get(e.text, "")) for e in SMALL if e.split == "train"]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"text": e.text, "route": e.route, "kind": e.kind}) + "\n" for e in train), encoding="utf-8"
    )
    result = CliRunner().invoke(
        app, ["intent", "cv", "--corpus", str(corpus), "--folds", "2", "--leave-out", "w8", "--leave-out", "w9"]
    )
    assert result.exit_code == 0, result.output
    cards = [leave_kind_out(train, kind, TrainOptions()) for kind in ("w8", "w9")]
    summary = leave_out_summary(cards)
    assert summary.startswith("left out 2 kinds: mean accuracy ")
    assert "needless " in summary and "/3 (" in summary and "/1 (" in summary  # 3 other messages, 1 diagnosis
    assert summary in result.output.splitlines()
    both = leave_kind_out(train, "w8,w9", TrainOptions())  # two writers who shared skeletons, left out together
    assert {e.text for e in both.examples} == set(writers)


def test_leave_out_summary_weighs_each_kind_once_and_pools_each_message_once() -> None:
    from bot.routing.scorecard import Scorecard, leave_out_summary

    one = Scorecard((Example("x", "diagnose"), Example("y", "lookup")), ("lookup", "lookup"))
    two = Scorecard(
        tuple(Example(t, r) for t, r in [("a", "diagnose"), ("b", "lookup"), ("c", "act"), ("d", "act")]),
        ("diagnose", "diagnose", "act", "act"),
    )
    assert leave_out_summary([one, two]) == (
        "left out 2 kinds: mean accuracy 62.50%, pooled needless 1/4 (25.00%), pooled missed 1/2 (50.00%)"
    )


def test_leave_out_by_language_pools_every_left_out_message_of_a_language() -> None:
    from bot.routing.scorecard import Scorecard, leave_out_by_language

    one = Scorecard((Example("x", "diagnose", "es"), Example("y", "lookup", "zh")), ("lookup", "diagnose"))
    two = Scorecard((Example("a", "diagnose", "es"), Example("b", "act", "es")), ("diagnose", "act"))
    assert leave_out_by_language([one, two]).splitlines() == [
        "left out, es: 66.67% (2/3), needless 0/1, missed 1/2",
        "left out, zh: 0.00% (0/1), needless 1/1, missed 0/0",
    ]


def test_artifact_round_trips_and_refuses_another_version(tmp_path: Path) -> None:
    model = IntentModel(
        ROUTES, FeatureSpec(), [0.1, 0.2, 0.0, -0.1, 0.0], {9: [0.5, 0.0, 0.0, 0.0, 0.0], 7: [1.0, 0.0, 0.0, 0.0, -1.0]}
    )
    save_model(model, tmp_path / "m.bin")
    again = load_model(tmp_path / "m.bin")
    assert again.to_bytes() == model.to_bytes() and again.feature_count == 2
    assert again.scores("why is order slow") == model.scores("why is order slow")
    (tmp_path / "m.bin.gz").write_bytes(gzip.compress((tmp_path / "m.bin").read_bytes()))
    assert load_model(tmp_path / "m.bin.gz").to_bytes() == model.to_bytes()  # compressed by someone: still loads
    line, _, body = model.to_bytes().partition(b"\n")
    with pytest.raises(ValueError, match="version 99"):
        IntentModel.from_bytes(line.replace(b'"version":3', b'"version":99') + b"\n" + body)


def test_a_version_1_artifact_still_loads_and_scores_alike(tmp_path: Path) -> None:
    """A model retrained before the binary format (gzipped JSON, base64 blobs) still serves from OPSBOT_INTENT__
    MODEL_PATH."""
    import base64
    from array import array

    model = shipped_model()
    line, _, body = model.to_bytes().partition(b"\n")
    header = json.loads(line)
    count = header.pop("buckets") * 4
    v1 = {
        **header,
        "version": 1,
        "buckets": base64.b64encode(body[:count]).decode("ascii"),
        "weights": base64.b64encode(body[count:]).decode("ascii"),
    }
    (tmp_path / "old.json.gz").write_bytes(gzip.compress(json.dumps(v1).encode("utf-8")))
    old = load_model(tmp_path / "old.json.gz")
    assert old.to_bytes() == model.to_bytes() and len(array("I", body[:count])) == old.feature_count
    for text in ("why is order slow since 15:05?", "thanks!", "订单服务为什么这么慢", "restart cart"):
        assert old.scores(text) == model.scores(text)


def test_shipped_artifact_is_small_and_loads() -> None:
    model = shipped_model()
    assert model.routes == ROUTES and model.meta["trained_on"] >= 800 and model.meta["renamed_copies"] == 1
    assert model.meta["diagnose_shift"] == -0.2 and model.meta["c"] == 80.0  # the options cross-validation chose
    assert model.spec.cue_weight == 0.1 and model.spec.ask_weight == 0.4  # chosen by leave-one-writer-out
    assert model.spec.simplified and model.spec.lexicon == 8 and model.meta["by_request"] is True
    assert model.requests == tuple(REQUEST_ROUTES) and model.request_routes == tuple(REQUEST_ROUTES.values())
    # ~57k buckets of float32 weights, one per request kind (eight), stored uncompressed so they load without
    # unzipping; it grows with the corpus and the classes (1.04 MB at 5,233 training lines, 1.21 MB at 6,279 over
    # the five routes, 2.05 MB at 7,138 over the eight request kinds, 2.13 MB at 8,401 with the outside writers,
    # 2.19 MB at 9,020 with two more, 2.24 MB at 9,638 with two more again, 2.45 MB at 10,835 with four more, 2.80 MB
    # at 13,197 with eight more, 2.98 MB at 14,353 with four more; it loads in ~60 ms, within the 0.3 s start-up)
    assert SHIPPED.stat().st_size < 3_000_000


def test_intent_export_writes_thumbs_down_messages_to_label(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "traces.db"
    store = SqliteTraceStore(path)
    store.save(
        make_trace(
            "t1",
            "2026-11-28T08:00:00Z",
            [],
            question="rollback payment to v1.8.2",
            intent=Intent("diagnose", 0.41, "default", "classifier unsure"),
        )
    )
    store.save(make_trace("t2", "2026-11-28T09:00:00Z", [], question="why is order slow"))
    store.record_feedback("t1", "alice", -1)
    store.record_feedback("t2", "bob", 1)
    store.close()
    monkeypatch.chdir(tmp_path)
    env = {"OPSBOT_STORE__BACKEND": "sqlite", "OPSBOT_STORE__SQLITE_PATH": str(path)}
    result = CliRunner().invoke(app, ["intent", "export", "--out", str(tmp_path / "review.jsonl")], env=env)
    assert result.exit_code == 0, result.output
    [line] = (tmp_path / "review.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(line) == {
        "text": "rollback payment to v1.8.2",
        "route": "",
        "lang": "en",
        "kind": "feedback",
        "split": "train",
        "routed_as": "diagnose",
        "tier": "default",
        "probability": 0.41,
        "suggested_route": "act",
        "trace_id": "t1",
    }


def test_renamed_copies_replace_service_names_also_next_to_chinese_and_vary_them() -> None:
    from bot.routing.augmentation import CORPUS_SERVICES, renamed_copies

    copies = renamed_copies(
        [Example("payment的p99 和 order 都慢", "diagnose", lang="zh"), Example("hello", "chitchat")], copies=20, seed=3
    )
    assert len(copies) == 20 and all(c.route == "diagnose" and c.kind == "+renamed" for c in copies)
    names = {c.text.split("的")[0] for c in copies}
    assert not names & set(CORPUS_SERVICES) and len(names) >= 10  # no corpus name survives; many different names
    assert renamed_copies([Example("payment的p99", "diagnose")], 2, seed=3) == renamed_copies(
        [Example("payment的p99", "diagnose")], 2, seed=3
    )  # seeded: the same copies every time


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("seckill-svc 扩容到 50 个 pod", True),
        ("把 goods-detail 的降级开关打开", True),
        ("promote the canary to 100%", True),
        ("merchant-portal 打开巨慢", False),
        ("why is checkout slow", False),
        ("將 sanctions-filter 嘅告警靜音兩個鐘", True),
        ("通知值班 DBA 加入 bridge call", True),
        ("部署 fx-rates v2.4.1 到生產環境", True),
        ("关掉 activity-page 的秒杀入口开关", True),
        ("fail session-store redis over to replica-1", True),
        ("clip-encoder 队列一直堆积", False),
        ("回滚 lobby 能解决吗", False),
    ],
)
def test_a_change_asked_for_mid_message_is_a_cue_of_its_own(text: str, found: bool) -> None:
    from bot.routing.cues import cues_in
    from bot.routing.features import normalised

    assert ("request_change" in cues_in(normalised(text))) is found


@pytest.mark.parametrize(
    ("text", "cue"),
    [
        ("scaled appt-broker to 12 pods, watching", "done"),
        ("已扩容到 12 个 pod，观察中", "done"),
        ("restarted appt-broker at 09:12 per runbook, pods healthy now", "done"),
        ("rollback 咗", "done"),
        ("可以帮我重启 mrn-matcher 吗？", "ask_act"),
        ("kindly do the needful and restart the mrn-matcher pods", "ask_act"),
        ("I would like to request you to failover the redis of wallet-sync", "ask_act"),
        ("幫手 call 醒 Hiroshi", "ask_act"),
    ],
)
def test_an_action_reported_as_done_and_one_asked_for_politely_are_cues(text: str, cue: str) -> None:
    from bot.routing.cues import cues_in
    from bot.routing.features import normalised

    assert cue in cues_in(normalised(text))


@pytest.mark.parametrize(
    "text",
    [
        "promo-svc-7d9f8c-x2k4q 重启过几次",
        "pod 重启了几次",
        "why is checkout slow",
        "Please check and revert.",
        "restart cart",
    ],
)
def test_a_count_a_symptom_or_a_bare_command_is_neither_done_nor_asked_politely(text: str) -> None:
    from bot.routing.cues import cues_in
    from bot.routing.features import normalised

    assert not {"done", "ask_act"} & set(cues_in(normalised(text)))


@pytest.mark.parametrize(
    ("text", "cue"),
    [
        ("p99 on railbridge went from 180ms to 2.3s", "measured"),
        ("risk-engine 的 p99 飙到 1.2s 了", "measured"),
        ("recon-batch 已经重启十几次了", "measured"),
        ("why'd matchmaker restart 14 times overnight", "measured"),
        ("settle-svc 写入 TPS 掉到平时的一半", "baseline"),
        ("mismatch count is 4,312 today, usually under 50", "baseline"),
        ("why are coin-wallet balances taking forever to update", "entity"),
        ("订单服务挂了", "entity"),
        ("item-center 又挂了", "anchor"),
        ("why did gacha-svc autoscale to 80 pods at 4am", "anchor"),
        ("500s on seatmap since the 14:10 deploy", "anchor"),
    ],
)
def test_a_stated_value_a_baseline_a_named_service_and_a_moment_are_cues(text: str, cue: str) -> None:
    """What sets a symptom report apart from a lookup or a general question: it states the value it saw (a lookup asks
    for one), sets it against what is normal, names one of our services, at a moment."""
    from bot.routing.cues import cues_in
    from bot.routing.features import normalised

    assert cue in cues_in(normalised(text))


@pytest.mark.parametrize(
    ("text", "cue"),
    [
        ("scale hotel-avail to 12 replicas", "measured"),
        ("v3.12.0 went out at 14:05", "measured"),
        ("what is the p99 of cart", "measured"),
        ("why is exactly-once delivery so hard in kafka", "anchor"),
        ("一般来说 kafka 分区数怎么设", "baseline"),
        ("已重启 20 次", "done"),
        ("why are coin-wallet balances taking forever to update", "fyi"),
        ("已经重启十几次了", "done"),
    ],
)
def test_a_bare_count_a_version_a_general_question_or_a_restart_count_are_not_those_cues(text: str, cue: str) -> None:
    from bot.routing.cues import cues_in
    from bot.routing.features import normalised

    assert cue not in cues_in(normalised(text))


def test_english_cues_are_read_inside_chinese_text() -> None:
    from bot.routing.cues import cues_in
    from bot.routing.features import normalised

    assert {"value", "metric"} <= set(cues_in(normalised("payment的p99现在多少")))  # no \b between 的 and p99
    assert cues_in(normalised("gacha-svc全是502了")) == cues_in(normalised("gacha-svc 全是 502 了"))


def test_traditional_chinese_reads_as_simplified_and_an_older_artifact_keeps_its_features() -> None:
    traditional, simplified = "為什麼發佈後錯誤率升高？幫我查一下", "为什么发布后错误率升高？帮我查一下"
    assert features_from_text(traditional) == features_from_text(simplified)
    literal = FeatureSpec(simplified=False)
    assert features_from_text(traditional, literal) != features_from_text(simplified, literal)
    older = {key: value for key, value in FeatureSpec().to_dict().items() if key != "simplified"}
    assert FeatureSpec.from_dict(older) == literal  # an artifact trained before the fold is served without it


@pytest.mark.parametrize(
    ("text", "cue"),
    [
        ("don't investigate, just tell me the error rate", "no_dig"),
        ("no investigues nada, solo decime el pico de errores", "no_dig"),
        ("não precisa investigar, só me diz a taxa de erro", "no_dig"),
        ("pas besoin d'enquêter, donne-moi juste le taux d'erreur", "no_dig"),
        ("keine Analyse nötig, sag mir nur die Fehlerrate", "no_dig"),
        ("不用排查，只告诉我错误率", "no_dig"),
        ("what was the peak during the outage? just the number", "only"),
        ("¿hubo un deploy anoche? solo sí o no", "only"),
        ("seit wann feuert der Alert? mehr brauch ich nicht", "only"),
        ("write the post-mortem, the cause was an expired cert", "write"),
        ("redacta una actualización para la página de estado", "write"),
        ("resume essa thread pra diretoria", "write"),
        ("rédige le post-mortem de la panne de mardi", "write"),
        ("fass den Thread in 5 Punkten zusammen", "write"),
        ("帮我写一下昨天故障的复盘报告", "write"),
        ("liste les alertes actives en prod", "list"),
    ],
)
def test_what_a_message_asks_for_is_a_cue_in_every_language(text: str, cue: str) -> None:
    from bot.routing.cues import cues_in
    from bot.routing.features import normalised

    assert cue in cues_in(normalised(text))


@pytest.mark.parametrize(
    "text",
    [
        "why is checkout slow since the deploy?",
        "¿por qué se cayó pagos-api anoche?",
        "investiga por qué el login falla",
        "o portal caiu, descobre o que foi",
    ],
)
def test_an_investigation_asked_for_plainly_declines_nothing(text: str) -> None:
    from bot.routing.cues import cues_in
    from bot.routing.features import normalised

    assert not {"no_dig", "only", "write"} & set(cues_in(normalised(text)))


def test_a_pasted_alert_is_read_before_its_code_block_becomes_a_word() -> None:
    from bot.routing.features import alert_cues

    firing = "```\n[FIRING:1] HighErrorRate fx-rates\nseverity: page\n```\nwhat does this mean?"
    assert alert_cues(firing) == ["alert"] and "firing" not in plain_from_slack(firing).lower()
    assert alert_cues("[RESOLVED] HighErrorRate pagos-api\nse recuperó solo") == ["alert_resolved"]
    assert alert_cues("why is order slow") == []
    features = features_from_text(firing)
    assert features != features_from_text(firing, replace(FeatureSpec(), lexicon=False))


def test_an_artifact_trained_before_the_lexicon_is_served_without_it() -> None:
    older = {key: value for key, value in FeatureSpec().to_dict().items() if key not in ("lexicon", "ask_weight")}
    spec = FeatureSpec.from_dict(older)
    assert not spec.lexicon and spec.ask_weight == 0.0
    text = "@opsbot no investigues, solo dime el p99 de pagos-api"
    assert features_from_text(text, spec) != features_from_text(text)  # the address and the new cues: newer only
    assert features_from_text("why is order slow", spec) == features_from_text("why is order slow", spec)
