"""Train the intent classifier: multinomial logistic regression (scikit-learn, newton-cg) over the hashed features.

Training needs the `[train]` extra (scikit-learn, numpy, scipy); serving never imports them. Reproducible: the
features are deterministic, the solver (newton-cg) is deterministic, and the exported artifact carries no timestamp,
so the same corpus and options give the same bytes. Every option is chosen on the train split only (`opsbot intent
cv`): by the mean of `leave_kind_out` over the independent writers (extra-w1..w9, b2/b3, t1..t4, o1..o6), the proxy
for a writer the model has never read, and by its needless-investigation rate, which must not rise; never on a
held-out split.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.routing.augmentation import renamed_copies
from bot.routing.features import FeatureSpec, cue_names, features_from_text
from bot.routing.intent import REQUEST_ROUTES, request_of
from bot.routing.model import IntentModel
from bot.routing.scorecard import ROUTES, Example, Scorecard

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainOptions:
    """The knobs, chosen on the train split only: mean leave-one-writer-out (`leave_kind_out`) over the independent
    writers and its needless rate. With 4,064 train lines, over extra-w1..w7 (mean / needless / missed): the options
    before, 94.77 / 4.43 % / 2.97 %; diagnose_shift 0.2 -> -0.1 with the done and ask_act cues, 95.00 / 3.72 % /
    3.34 %. C (40, 160), diagnose_weight (1.0, 2.0) move it under 0.2 points; min_weight 0.1 (0.07 before) keeps the
    artifact under 1 MB for 0.06 points. With 4,637 lines, over extra-w1..w9 (w8 and w9 left out together: they share
    message skeletons): 95.47 / 3.21 % / 3.16 % before; the measured, baseline, entity and anchor cues and the fyi cue
    split from a resolved one, 95.72 / 3.28 % / 2.44 %, and diagnose_shift -0.1 -> -0.2 with them, 95.83 / 2.93 % /
    2.44 %. A cue weight of 0.15 costs 0.65 points (0.05 and 0.2 cost 0.5 to 1.2 before). With 5,233 lines
    (extra-b2/b3: two writers of a channel's natural mix), leaving both out is flat in the shift: needless + missed
    8 + 11 of 328 + 268 at -0.2, 10 + 10 at 0.1 and 0.25, 12 + 7 at 0.4; -0.2 is kept. With 6,995 lines (extra-t1/t2:
    two writers of what a message asks for, mostly Spanish, Portuguese, French and German; more-request: lines
    written for the shapes they showed), over the 11 writer groups: 92.50 / 6.82 % / 3.46 % with the cues before
    (t1 + t2 alone: 77.35 / 19.8 % / 6.0 %); with the other languages' cues and the request cues (lexicon.py),
    95.24 / 3.19 % / 3.40 %; a request-cue weight of 0.2 (0.3 costs 0.5 points on t1 + t2), with the written lines and
    diagnose_shift -0.2, 95.67 / 2.43 % / 3.22 %; 0.2, 95.72 / 3.36 % / 2.09 % (t1 + t2: 96.39 / 1.32 % / 3.33 %);
    0.4, 95.62 / 3.81 % / 1.79 %. 0.2 is kept. With 7,105 lines (extra-t3/t4: two writers of messages written
    during or after an incident that mostly ask for no investigation), over 13 writer groups, these options score
    95.35 / 3.86 % / 2.43 % (t3 + t4 alone: 91.64 / 7.95 % / 1.15 %; before they joined, scored as fresh writers by
    the shipped model: 89.6 %, 11.0 % needless, 1.2 % missed). With the request kinds as the classes (by_request),
    the lexicon's second edition and 33 written lines that ask for an investigation and then a text: 96.02 / 2.69 %
    / 2.01 % at diagnose_shift 0.1 (the writers before t1: 95.69 / 3.30 % / 2.03 %; t3 + t4: 96.01 / 2.47 % /
    1.15 %); 0.0, 96.01 / 2.48 % / 2.38 %; 0.2, 95.94 / 2.87 % / 1.96 %; 0.3, 95.82 / 3.22 % / 1.81 %. 0.1 makes the
    fewest needless + missed (75 + 40) and is kept; it lowers needless investigations without raising missed ones.
    Tried and not kept: the third lexicon edition with 278 written lines of chat that sounds like trouble beside
    real asks (not in the corpus), over the same 13 groups at 0.1: needless 70/2825 (2.48 %), missed 46/1936
    (2.38 %); on the seven groups whose predictions were kept (w7, w8+w9, b2+b3, t1..t4), 96.02 -> 96.06 %, needless
    49 -> 44, missed 27 -> 33, and a shift of 0.3 gives 54 and 28: the lines trade a needless investigation for a
    missed one, no net gain, so the shipped artifact and the corpus stay as they were. With 8,401 lines (extra-o1..o4:
    four outside writers, 1,263 lines in six languages, once scored blind), over 17 writer groups (mean / needless /
    missed, the outside four apart): these options, 95.75 / 2.63 % / 2.60 % (outside: 94.84 / 3.27 % / 2.47 %; the
    shipped model had scored them as fresh writers 92.66 %, 5.42 % needless, 2.26 % missed); the third edition,
    outside 94.69 / 3.40 % / 2.47 %, no gain; the fourth edition (an alert taken, a disk written, other alerting
    tools' pages, a log line in inline code, more request words) with a request-cue weight of 0.2, 96.21 / 2.33 % /
    2.31 %; 0.3, 96.47 / 2.22 % / 2.11 %; 0.4, 96.61 / 2.30 % / 1.94 % (outside: 97.47 / 1.16 % / 1.44 %; the 13
    groups before, 96.03 -> 96.34); 0.5, 96.54 / 2.36 % / 1.82 %. 0.4 is kept, and shift 0.1 (0.0: 77 + 52 needless
    + missed, 0.1: 83 + 47, 0.2: 89 + 45). The fourth edition's words were read off these four writers' leave-out
    errors, so their outside numbers flatter it; the 13 older groups are the fairer check. With 9,020 lines
    (extra-o5/o6: two more outside writers, 619 lines, scored as fresh writers first: the shipped model 95.16 %,
    needless 15/399, missed 2/241), over 19 groups (mean / needless / missed): these options, 96.68 / 2.11 % / 2.03 %
    (outside six: 97.13 / 1.82 % / 1.38 %; the 13 older: 96.47 / 2.23 % / 2.27 %). The fifth edition (the bot stopped, a
    value for a text, a text's style, a negation's scope) at 0.1: 96.88 / 2.01 % / 1.88 % (outside: 97.87 / 1.30 % /
    0.96 %; the 13 older: 96.42 / 2.30 % / 2.22 %, flat: it was read off the outside writers' errors). Its shift, over
    the 19 groups (needless + missed): -0.2, 60 + 58 (missed 2.18 %); -0.1, 68 + 56; 0.0, 74 + 52 (1.86 % / 1.95 %);
    0.1, 80 + 50; 0.2, 87 + 45; 0.3, 93 + 42; over the outside six, 0.0: 13 + 7 and 0.1: 15 + 7. 0.0 is kept: the fewest
    needless + missed with both rates under the bar (<= 3 % / <= 2 %); fresh writers have leaked needless investigations
    more than missed ones (15 against 2 of the last two outside writers' 640). With 9,638 lines (extra-o7/o8: two
    more outside writers, 618 lines), leaving out each of the eight outside writers: the fifth edition 97.55 / 1.31 % /
    1.24 %; the sixth (cues.py SIXTH, read off o7 and o8's errors) 98.35 / 0.85 % / 0.72 %, and on o1..o6, which it
    was not read from, 1,852 -> 1,855 of 1,882 with no writer worse: adopted. Fresh writers score lower than any
    leave-out (91.9 % for the next two), so a leave-out chooses between options and does not predict that number.
    With 10,835 lines (extra-o9..o12: four more outside writers written for training, 1,197 lines), o1..o8 left out
    2,459 -> 2,464 of 2,500, needless 13 -> 15, missed 7 -> 4: kept. The four new ones, left out before any cue was
    read off them, score 93.2-96.0 % (needless 19/790, missed 22/408): what a new voice gets, as fresh writers show.
    With 13,197 lines (extra-o13..o20: eight more outside writers written for training, 2,362 lines, four of them
    briefed on the request boundaries and four on Romance, German, Chinese and panicking or terse voices), the
    seventh edition read off o13..o16's leave-out errors: o13..o16 1,087 -> 1,114 of 1,191, and on six writers it
    was not read from 1,735 -> 1,734 of 1,815 (flat); o17..o20, left out before any cue was read off them, 92.9-96.9 %.
    Over seven of those groups (o13..o16 and o7..o12 in pairs), shifts from -0.2 to 0.8 scored 94.44-94.91 %, 0.0
    the highest (needless 2.89 %, missed 4.79 %; 0.8: 4.58 % and 3.25 %), and 0.0 was kept for the artifact that fresh
    writers s and t scored. Over eleven groups (o13..o20 alone, o7..o12 in pairs; 4,177 lines), -0.2 / 0.0 / 0.2 /
    0.4 / 0.6 / 0.8 score 95.16 / 95.19 / 95.16 / 95.02 / 94.92 / 95.00 %, needless 2.94 / 3.20 / 3.27 / 3.79 / 4.09 /
    4.35 %, missed 4.37 / 3.84 / 3.77 / 3.30 / 3.03 / 2.36 %. The rule set before reading them: among shifts within
    0.3 points of the best accuracy, the one whose worse rate against the bar (needless / 3 %, missed / 2 %) is
    lowest: 0.8 (1.45, against 1.92 at 0.0). A missed diagnosis costs an incident a quick answer; a needless one
    costs tokens, and with a model configured the cheap model confirms a doubtful investigation first. With 14,353
    lines (extra-o21..o24: four more outside writers on the request boundaries, 1,156 lines after dropping 39 that
    nearly matched a fresh writer's line), over fifteen groups (o13..o24 alone, o7..o12 in pairs; 5,333 lines), the
    seventh edition at -0.2 / 0.0 / 0.4 / 0.8: 95.33 / 95.16 / 94.73 / 94.30 %, needless 3.87 / 4.53 / 5.48 / 6.52 %,
    missed 2.84 / 2.30 / 1.82 / 1.23 % (the new lines moved the balance: 0.8 now costs 6.5 % needless). The eighth
    edition (cues.py EIGHTH, read off o21..o24's errors as the shipped model made them): on o21..o24 94.98 -> 96.54 %
    at -0.2; on the seven groups it was not read from (o17..o20, o7..o12) flat, 95.49 % at best either way (the
    seventh at -0.2, the eighth at -0.8). Over the fifteen, from -1.0 to 1.6 in steps of 0.2, the best is 95.74 % at
    -0.8; by the same rule (within 0.3 points, the lowest of needless / 3 % and missed / 2 %), -0.2: 95.56 %, needless
    3.63 %, missed 2.52 % (worse ratio 1.26; 0.0: 1.34, -0.4: 1.39)."""

    c: float = 80.0  # inverse L2 strength
    balanced: bool = True  # weight routes inversely to their frequency: act and help are the small ones
    seed: int = 12
    min_weight: float = 0.1  # prune buckets whose largest |weight| is below this (keeps the artifact ~1 MB)
    renamed_copies: int = 1  # per message naming a corpus service, copies with made-up names (augmentation.py)
    diagnose_weight: float = 1.5  # on top of `balanced`: a missed diagnosis costs more than a needless one
    # the decision threshold: added to diagnose's bias (log-odds), so it trades missed diagnoses for needless ones
    diagnose_shift: float = -0.2
    # the classes are the request kinds, a route's probability their sum (off: the routes, as models trained before)
    by_request: bool = True
    spec: FeatureSpec = field(default_factory=FeatureSpec)


def train_model(
    examples: Sequence[Example], options: TrainOptions = TrainOptions(), routes: Sequence[str] = ROUTES
) -> IntentModel:
    """Fit on `examples` (their split is ignored: pass the ones to learn from) and export a pure-Python model whose
    classes are the request kinds (each line's request, or what its route and cues stand for), or, with
    `by_request` off, the routes. The diagnose shift goes to the bias of the class that stands for diagnose."""
    examples = [*examples, *renamed_copies(examples, options.renamed_copies, options.seed)]
    usable = [e for e in examples if features_from_text(e.text, options.spec)]
    matrix, columns = _matrix([e.text for e in usable], options.spec)
    requests = tuple(REQUEST_ROUTES) if options.by_request else ()
    request_routes = tuple(REQUEST_ROUTES.values()) if options.by_request else ()
    classes, routed = (requests, request_routes) if requests else (tuple(routes), tuple(routes))
    targets = [request_label(e) if requests else e.route for e in usable]
    heavier = classes[routed.index("diagnose")] if "diagnose" in routed else ""
    coef, bias = _fit(matrix, targets, classes, heavier, options)
    bias = [b + (options.diagnose_shift if route == "diagnose" else 0.0) for b, route in zip(bias, routed, strict=True)]
    weights = {}
    for j, bucket in enumerate(columns):
        row = [float(column[j]) for column in coef]
        if max(abs(w) for w in row) >= options.min_weight:
            weights[bucket] = row
    log.info("trained intent model on %d examples, %d of %d buckets kept", len(usable), len(weights), len(columns))
    meta = _meta(usable, options)
    return IntentModel(routes, options.spec, bias, weights, meta=meta, requests=requests, request_routes=request_routes)


def request_label(example: Example) -> str:
    """What a training line asks for: its label, or, where the corpus has none (an older lookup or chitchat line),
    the request its route and cues stand for (a list, a text to write, a term to explain)."""
    return example.request or request_of(example.route, frozenset(cue_names(example.text)))


def _fit(
    matrix: Any, targets: Sequence[str], labels: Sequence[str], heavier: str, options: TrainOptions
) -> tuple[list[Any], list[float]]:
    """One softmax head: a weight column (over the matrix's columns) and a bias per label, `heavier` weighed by
    diagnose_weight. A label absent from the targets gets zero weights and a bias far below the others."""
    from sklearn.linear_model import LogisticRegression

    y = [labels.index(t) for t in targets]
    fitted = LogisticRegression(
        C=options.c,
        solver="newton-cg",
        max_iter=1000,
        random_state=options.seed,
        class_weight=_class_weights(y, labels, options, heavier),
    )
    fitted.fit(matrix, y)
    present = list(fitted.classes_)
    rows, intercepts = fitted.coef_, fitted.intercept_
    if len(present) == 2:  # scikit-learn fits one row for two classes: the first class's logit is 0
        rows, intercepts = [0 * rows[0], rows[0]], [0.0, float(intercepts[0])]
    floor = min(float(b) for b in intercepts) - 10.0
    coef = [rows[present.index(k)] if k in present else 0 * rows[0] for k in range(len(labels))]
    bias = [float(intercepts[present.index(k)]) if k in present else floor for k in range(len(labels))]
    return coef, bias


def _class_weights(y: Sequence[int], labels: Sequence[str], options: TrainOptions, heavier: str) -> dict[int, float]:
    """Per label index: n / (k * count) when balanced (scikit-learn's "balanced"), else 1; `heavier` (diagnose in
    the route head: a missed diagnosis costs more) times diagnose_weight."""
    counts = Counter(y)
    weights = {k: len(y) / (len(counts) * n) if options.balanced else 1.0 for k, n in counts.items()}
    if heavier in labels and labels.index(heavier) in weights:
        weights[labels.index(heavier)] *= options.diagnose_weight
    return weights


def _matrix(texts: Sequence[str], spec: FeatureSpec) -> tuple[Any, list[int]]:
    """A CSR matrix over only the buckets that occur (columns), and those buckets in column order."""
    from scipy.sparse import csr_matrix

    rows = [features_from_text(t, spec) for t in texts]
    columns = sorted({b for row in rows for b in row})
    where = {b: j for j, b in enumerate(columns)}
    data, indices, indptr = [], [], [0]
    for row in rows:
        for bucket, value in sorted(row.items()):
            indices.append(where[bucket])
            data.append(value)
        indptr.append(len(indices))
    return csr_matrix((data, indices, indptr), shape=(len(rows), len(columns))), columns


def _meta(examples: Sequence[Example], options: TrainOptions) -> dict[str, Any]:
    digest = hashlib.sha256("\n".join(f"{e.route}\t{e.text}" for e in examples).encode("utf-8")).hexdigest()
    return {
        "trained_on": len(examples),
        "corpus_sha256": digest[:16],
        "c": options.c,
        "balanced": options.balanced,
        "seed": options.seed,
        "renamed_copies": options.renamed_copies,
        "diagnose_weight": options.diagnose_weight,
        "diagnose_shift": options.diagnose_shift,
        "by_request": options.by_request,
    }


def cross_validate(examples: Sequence[Example], options: TrainOptions, folds: int = 5) -> Scorecard:
    """k-fold cross-validation on `examples` (the train split), to choose options without any held-out split: each
    message predicted by the model that did not learn from it. Folds are assigned round-robin within each route and
    language, in corpus order, so each fold keeps the mix and the same corpus always gives the same folds."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, example in enumerate(examples):
        groups.setdefault((example.route, example.lang), []).append(i)
    fold_of = {i: n % folds for members in groups.values() for n, i in enumerate(members)}
    predicted = [""] * len(examples)
    for fold in range(folds):
        model = train_model([e for i, e in enumerate(examples) if fold_of[i] != fold], options)
        for i in (i for i in range(len(examples)) if fold_of[i] == fold):
            predicted[i] = model.scores(examples[i].text).route
    return Scorecard(tuple(examples), tuple(predicted))


def leave_kind_out(examples: Sequence[Example], kind: str, options: TrainOptions) -> Scorecard:
    """Train on every example but those of `kind` (e.g. one writer's lines; "extra-w8,extra-w9" leaves out both,
    for two writers who shared their message skeletons) and score those: the proxy for a writer the model has never
    read."""
    kinds = set(kind.split(","))
    model = train_model([e for e in examples if e.kind not in kinds], options)
    rows = tuple(e for e in examples if e.kind in kinds)
    return Scorecard(rows, tuple(model.scores(e.text).route for e in rows))
