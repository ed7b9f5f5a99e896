"""One piece of evidence for or against a suspect, in words, and the score a suspect's evidence adds up to."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Reason:
    """One piece of evidence for (points > 0) or against (points < 0) a suspect, in words."""

    points: int
    text: str


def score_of(reasons: Iterable[Reason]) -> int:
    return sum(r.points for r in reasons)
