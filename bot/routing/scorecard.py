"""How well a router routes a labelled corpus: accuracy per language and per route, the confusion matrix, and the
two costly errors (a needless investigation of a non-diagnosis message, a missed diagnosis).

Also reads the corpus (bot/routing/corpus/intent.jsonl: one {text, route, request, lang, kind, split} object per line;
`request`, what the message asks for, is there where it is known: every line of the writers who labelled requests,
and the older lines whose route or kind says it).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

ROUTES = ("diagnose", "lookup", "chitchat", "help", "act")


@dataclass(frozen=True)
class Example:
    text: str
    route: str
    lang: str = "en"
    kind: str = ""
    split: str = "train"
    request: str = ""


@dataclass(frozen=True)
class Scorecard:
    """Predictions beside the labels of one split; every reported number derives from these two."""

    examples: tuple[Example, ...]
    predicted: tuple[str, ...]

    def accuracy(self, keep: Callable[[Example], bool] = lambda e: True) -> tuple[int, int]:
        """(correct, total) over the examples `keep` selects."""
        hits = [e.route == p for e, p in zip(self.examples, self.predicted, strict=True) if keep(e)]
        return sum(hits), len(hits)

    def needless_investigations(self) -> tuple[int, int]:
        """Non-diagnosis messages routed to diagnose."""
        wrong = [p == "diagnose" for e, p in zip(self.examples, self.predicted, strict=True) if e.route != "diagnose"]
        return sum(wrong), len(wrong)

    def missed_diagnoses(self) -> tuple[int, int]:
        """Diagnosis messages routed anywhere else."""
        wrong = [p != "diagnose" for e, p in zip(self.examples, self.predicted, strict=True) if e.route == "diagnose"]
        return sum(wrong), len(wrong)

    def confusion(self) -> Counter[tuple[str, str]]:
        """(label, predicted) -> count."""
        return Counter((e.route, p) for e, p in zip(self.examples, self.predicted, strict=True))

    def errors(self) -> list[tuple[Example, str]]:
        return [(e, p) for e, p in zip(self.examples, self.predicted, strict=True) if e.route != p]


def score(route_of: Callable[[str], str], examples: Iterable[Example]) -> Scorecard:
    """Route every example with `route_of` and keep the predictions beside the labels."""
    chosen = tuple(examples)
    return Scorecard(chosen, tuple(route_of(e.text) for e in chosen))


def scorecard_to_text(card: Scorecard, routes: Sequence[str] = ROUTES) -> str:
    """The accuracy table (overall, per language, per route and per request where known: is the route right), the two
    costly error rates and the confusion matrix, as plain text."""
    lines = [_rate_line("overall", *card.accuracy())]
    for lang in sorted({e.lang for e in card.examples}):
        lines.append(_rate_line(f"lang {lang}", *card.accuracy(_field_is("lang", lang))))
    for route in routes:
        lines.append(_rate_line(f"route {route}", *card.accuracy(_field_is("route", route))))
    for request in sorted({e.request for e in card.examples} - {""}):  # where the corpus knows what was asked
        lines.append(_rate_line(f"request {request}", *card.accuracy(_field_is("request", request))))
    lines.append(_rate_line("needless investigations", *card.needless_investigations()))
    lines.append(_rate_line("missed diagnoses", *card.missed_diagnoses()))
    confusion = card.confusion()
    lines.append("confusion (rows: label, columns: predicted)")
    lines.append(f"{'':>10}" + "".join(f"{r:>10}" for r in routes))
    for label in routes:
        lines.append(f"{label:>10}" + "".join(f"{confusion[(label, p)]:>10}" for p in routes))
    return "\n".join(lines)


def leave_out_summary(cards: Sequence[Scorecard]) -> str:
    """One line over several leave-one-kind-out scorecards: the mean of their accuracies (each writer counts once)
    and the pooled needless and missed rates (each message counts once), the numbers options are chosen by."""
    mean = sum(hits / total for hits, total in (c.accuracy() for c in cards)) / len(cards)
    needless = [sum(n) for n in zip(*(c.needless_investigations() for c in cards), strict=True)]
    missed = [sum(m) for m in zip(*(c.missed_diagnoses() for c in cards), strict=True)]
    return (
        f"left out {len(cards)} kinds: mean accuracy {mean:.2%}, pooled needless {needless[0]}/{needless[1]} "
        f"({needless[0] / max(needless[1], 1):.2%}), pooled missed {missed[0]}/{missed[1]} "
        f"({missed[0] / max(missed[1], 1):.2%})"
    )


def leave_out_by_language(cards: Sequence[Scorecard]) -> str:
    """Several leave-one-kind-out scorecards pooled per language (each message counts once): accuracy, needless
    investigations and missed diagnoses, one line per language."""
    pairs = [(e, p) for card in cards for e, p in zip(card.examples, card.predicted, strict=True)]
    lines = []
    for lang in sorted({e.lang for e, _ in pairs}):
        chosen = [(e, p) for e, p in pairs if e.lang == lang]
        card = Scorecard(tuple(e for e, _ in chosen), tuple(p for _, p in chosen))
        (hits, total), needless, missed = card.accuracy(), card.needless_investigations(), card.missed_diagnoses()
        lines.append(
            f"left out, {lang}: {hits / total:.2%} ({hits}/{total}), needless {needless[0]}/{needless[1]}, "
            f"missed {missed[0]}/{missed[1]}"
        )
    return "\n".join(lines)


def _field_is(name: str, value: str) -> Callable[[Example], bool]:
    return lambda example: getattr(example, name) == value


def _rate_line(name: str, hits: int, total: int) -> str:
    share = f"{hits / total:6.1%}" if total else "   n/a"
    return f"{name:<24} {share}  ({hits}/{total})"


def load_corpus(path: Path | None = None) -> list[Example]:
    """The labelled corpus: the shipped one, or a JSON-lines file of the same shape."""
    if path is None:
        text = resources.files("bot.routing").joinpath("corpus", "intent.jsonl").read_text(encoding="utf-8")
    else:
        text = Path(path).read_text(encoding="utf-8")
    return [_example_from_dict(json.loads(line)) for line in text.splitlines() if line.strip()]


def _example_from_dict(data: dict[str, str]) -> Example:
    return Example(
        text=data["text"],
        route=data["route"],
        lang=data.get("lang", "en"),
        kind=data.get("kind", ""),
        split=data.get("split", "train"),
        request=data.get("request", ""),
    )
