"""`opsbot intent train | cv | export`: retrain the intent classifier, cross-validate its options on the train split,
and collect 👎-voted messages to label for it."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from bot.routing.scorecard import Example, load_corpus
from bot.routing.training import TrainOptions

app = typer.Typer(
    no_args_is_help=True,
    help="Train (and cross-validate) the intent classifier; export 👎-voted messages for labelling.",
)
_CHOSEN = TrainOptions()  # the options chosen by cross-validation (bot/routing/training.py)
C_OPTION = typer.Option("--c", help="inverse L2 regularisation strength")
WEIGHT_OPTION = typer.Option(help="extra class weight of diagnose (a missed diagnosis costs more)")
SHIFT_OPTION = typer.Option(help="added to diagnose's log-odds: the threshold between missed and needless")


@app.command("train")
def train_command(
    corpus: Annotated[
        Path | None, typer.Option(metavar="FILE", help="JSON lines {text, route, lang, split} (default: shipped)")
    ] = None,
    extra: Annotated[
        list[Path] | None, typer.Option(metavar="FILE", help="more labelled lines, e.g. a reviewed export (train)")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(metavar="FILE", help="artifact to write (default: the shipped one)")
    ] = None,
    c: Annotated[float, C_OPTION] = _CHOSEN.c,
    diagnose_weight: Annotated[float, WEIGHT_OPTION] = _CHOSEN.diagnose_weight,
    diagnose_shift: Annotated[float, SHIFT_OPTION] = _CHOSEN.diagnose_shift,
    seed: Annotated[int, typer.Option(help="solver seed (the split is fixed in the corpus)")] = _CHOSEN.seed,
    accept_suggestions: Annotated[
        bool, typer.Option(help="an --extra line nobody labelled trains on its suggested_route (from export)")
    ] = False,
) -> None:
    """Fit on the train split, print the held-out scorecard (no LLM), write the artifact. Same inputs, same bytes."""
    from bot.routing.intent import classify
    from bot.routing.model import DEFAULT_ARTIFACT, save_model
    from bot.routing.scorecard import score, scorecard_to_text
    from bot.routing.training import train_model

    examples = load_corpus(corpus) + [e for path in extra or [] for e in _labelled(path, accept_suggestions)]
    train = [e for e in examples if e.split == "train"]
    splits = sorted({e.split for e in examples} - {"train"})
    held = {split: [e for e in examples if e.split == split] for split in splits}
    typer.echo(
        f"corpus: {len(examples)} messages, {len(train)} to train, held out: "
        + (", ".join(f"{split} {len(rows)}" for split, rows in held.items()) or "none")
    )
    options = replace(_CHOSEN, c=c, seed=seed, diagnose_weight=diagnose_weight, diagnose_shift=diagnose_shift)
    model = train_model(train, options)
    target = out or Path(__file__).resolve().parents[1] / "routing" / "model" / DEFAULT_ARTIFACT
    size = save_model(model, target)
    typer.echo(f"wrote {target} ({size:,} bytes, {model.feature_count:,} feature buckets)")
    for split, rows in held.items():  # every split but "train" is scored, never learned from
        typer.echo(f"split {split!r}, no LLM (rules + classifier):")
        typer.echo(scorecard_to_text(score(lambda text: classify(text, model=model).route, rows)))


@app.command("cv")
def cv_command(
    corpus: Annotated[
        Path | None, typer.Option(metavar="FILE", help="JSON lines {text, route, lang, split} (default: shipped)")
    ] = None,
    folds: Annotated[int, typer.Option(min=2, help="folds, each stratified by route and language")] = 5,
    c: Annotated[float, C_OPTION] = _CHOSEN.c,
    diagnose_weight: Annotated[float, WEIGHT_OPTION] = _CHOSEN.diagnose_weight,
    diagnose_shift: Annotated[float, SHIFT_OPTION] = _CHOSEN.diagnose_shift,
    leave_out: Annotated[
        list[str] | None,
        typer.Option(
            metavar="KIND",
            help="also score each KIND (e.g. a writer, extra-w1; "
            "a,b for both at once) by a model trained on every other train line",
        ),
    ] = None,
) -> None:
    """Cross-validate the options on the train split only (no held-out message is read): the scorecard of every
    train message as predicted by the fold's model that did not learn from it. Choose options with this."""
    from bot.routing.scorecard import leave_out_by_language, leave_out_summary, scorecard_to_text
    from bot.routing.training import cross_validate, leave_kind_out

    train = [e for e in load_corpus(corpus) if e.split == "train"]
    options = replace(_CHOSEN, c=c, diagnose_weight=diagnose_weight, diagnose_shift=diagnose_shift)
    typer.echo(f"{folds}-fold cross-validation on {len(train)} train messages, no LLM:")
    typer.echo(scorecard_to_text(cross_validate(train, options, folds)))
    cards = []
    for kind in leave_out or []:
        card = leave_kind_out(train, kind, options)
        typer.echo(
            f"kind {kind!r} ({len(card.examples)} lines) by a model trained on the other "
            f"{len(train) - len(card.examples)}, no LLM:"
        )
        typer.echo(scorecard_to_text(card))
        cards.append(card)
    if len(cards) > 1:
        typer.echo(leave_out_summary(cards))
        typer.echo(leave_out_by_language(cards))


def _labelled(path: Path, accept_suggestions: bool) -> list[Example]:
    """Reviewed lines only (an export line has no route until a person, or an accepted suggestion, gives it one);
    always train data."""
    from bot.routing.feedback import labelled_line

    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [row for line in lines if (row := labelled_line(line, accept_suggestions=accept_suggestions))]
    return [Example(text=r["text"], route=r["route"], lang=r.get("lang", "en"), kind=r.get("kind", "")) for r in rows]


@app.command("export")
def export_command(
    out: Annotated[Path | None, typer.Option(metavar="FILE", help="write here instead of stdout")] = None,
    since: Annotated[str, typer.Option(metavar="WHEN", help="30m, 12h, 7d, 2w, an ISO date, or '' for all")] = "",
    limit: Annotated[int, typer.Option(metavar="N")] = 500,
) -> None:
    """Every 👎-voted message as a JSON line to label: text, an empty `route`, the route the gate chose when the 👎
    was cast (`routed_as`, `tier`, `probability`) and a `suggested_route` (diagnose <-> not diagnose)."""
    from bot import wiring
    from bot.routing.feedback import review_line_from_trace
    from bot.routing.intent import shipped_or_none
    from bot.store.analytics import since_from_text

    try:
        since_at = since_from_text(since)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--since") from exc
    traces = wiring.build_store(wiring.load_settings()).downvoted(limit, since=since_at)
    model = shipped_or_none()
    lines = [json.dumps(review_line_from_trace(t, model), ensure_ascii=False) for t in traces]
    if out is None:
        sys.stdout.write("".join(f"{line}\n" for line in lines))
    else:
        out.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
        typer.echo(f"wrote {len(lines)} examples to {out}", err=True)
