"""`opsbot intent train | export`: retrain the intent classifier, and collect 👎-voted messages to label for it."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer

from bot.engine.types import Trace
from bot.routing.scorecard import Example, load_corpus

app = typer.Typer(no_args_is_help=True, help="Train the intent classifier; export 👎-voted messages for labelling.")


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
    c: Annotated[float, typer.Option("--c", help="inverse L2 regularisation strength")] = 20.0,
    seed: Annotated[int, typer.Option(help="solver seed (the split is fixed in the corpus)")] = 12,
) -> None:
    """Fit on the train split, print the held-out scorecard (no LLM), write the artifact. Same inputs, same bytes."""
    from bot.routing.intent import classify
    from bot.routing.model import DEFAULT_ARTIFACT, save_model
    from bot.routing.scorecard import score, scorecard_to_text
    from bot.routing.training import TrainOptions, train_model

    examples = load_corpus(corpus) + [e for path in extra or [] for e in _labelled(load_corpus(path))]
    train = [e for e in examples if e.split == "train"]
    splits = sorted({e.split for e in examples} - {"train"})
    held = {split: [e for e in examples if e.split == split] for split in splits}
    typer.echo(f"corpus: {len(examples)} messages, {len(train)} to train, held out: "
               + (", ".join(f"{split} {len(rows)}" for split, rows in held.items()) or "none"))
    model = train_model(train, TrainOptions(c=c, seed=seed))
    target = out or Path(__file__).resolve().parents[1] / "routing" / "model" / DEFAULT_ARTIFACT
    size = save_model(model, target)
    typer.echo(f"wrote {target} ({size:,} bytes, {model.feature_count:,} feature buckets)")
    for split, rows in held.items():  # every split but "train" is scored, never learned from
        typer.echo(f"split {split!r}, no LLM (rules + classifier):")
        typer.echo(scorecard_to_text(score(lambda text: classify(text, model=model).route, rows)))


def _labelled(examples: list[Example]) -> list[Example]:
    """Reviewed lines only (an export line has no route until a person gives it one); always train data."""
    return [replace(e, split="train") for e in examples if e.route]


@app.command("export")
def export_command(
    out: Annotated[Path | None, typer.Option(metavar="FILE", help="write here instead of stdout")] = None,
    since: Annotated[str, typer.Option(metavar="WHEN", help="30m, 12h, 7d, 2w, an ISO date, or '' for all")] = "",
    limit: Annotated[int, typer.Option(metavar="N")] = 500,
) -> None:
    """Every 👎-voted message as a JSON line to label: text, the route it got (`routed`) and an empty `route`."""
    from bot import wiring
    from bot.store.analytics import since_from_text

    try:
        since_at = since_from_text(since)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--since") from exc
    traces = wiring.build_store(wiring.load_settings()).downvoted(limit, since=since_at)
    lines = [json.dumps(example_from_trace(t), ensure_ascii=False) for t in traces]
    if out is None:
        sys.stdout.write("".join(f"{line}\n" for line in lines))
    else:
        out.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
        typer.echo(f"wrote {len(lines)} examples to {out}", err=True)


def example_from_trace(trace: Trace) -> dict[str, Any]:
    """A corpus-shaped line for a 👎-voted trace; `route` stays empty until a person labels it."""
    intent = trace.intent
    lang = "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in trace.question) else "en"
    return {"text": trace.question, "route": "", "lang": lang, "kind": "feedback", "split": "train",
            "routed": intent.route if intent else "", "tier": intent.tier if intent else "",
            "confidence": round(intent.confidence, 3) if intent else None, "trace_id": trace.trace_id}
