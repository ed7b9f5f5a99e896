"""One piece of evidence for or against a suspect, in words, and the score a suspect's evidence adds up to."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta

CLOSE = timedelta(minutes=15)  # a change (a deploy, an event) this close before the onset is "just before" it


@dataclass(frozen=True)
class Reason:
    """One piece of evidence for (points > 0) or against (points < 0) a suspect, in words."""

    points: int
    text: str


def score_of(reasons: Iterable[Reason]) -> int:
    return sum(r.points for r in reasons)


def place_reason(service: str, target: str, changed_too: bool | None, unplaced: str) -> Reason:
    """Where a change's service sits from the one asked about: that service, one that changed too on its path, one
    that shows no change, or (`changed_too` None: not looked at) `unplaced`."""
    if service == target:
        return Reason(3, f"{target} is the service asked about")
    if changed_too:
        return Reason(2, f"{service} changed too, on the path from {target}")
    if changed_too is None:
        return Reason(0, unplaced)
    return Reason(-1, f"{service} itself shows no change")
