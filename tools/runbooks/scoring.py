"""How well a runbook section fits a search, as a number a threshold can read: the share of the query's weight that
the section holds.

bm25 ranks sections but its values have no scale (they grow with the query and the corpus), so "below 4.2" would
mean nothing. Here each search term weighs its inverse document frequency over the runbooks (bm25's own idf: a word
in every section weighs almost nothing, a rare error code a lot), and a section scores the weight of the terms it
holds over the weight of all of them, 0 to 1. A section that shares only "error" and "service" with a long
question scores low; one that holds the error signature's telling words scores high.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence


def section_scores(db: sqlite3.Connection, term_expressions: Sequence[str], rowids: Sequence[int]) -> list[float]:
    """The fit of each section (by rowid) to the terms (each an FTS5 MATCH expression of one term), 0 to 1."""
    total = int(db.execute("SELECT count(*) FROM runbooks").fetchone()[0])
    held: list[set[int]] = []
    weights: list[float] = []
    for expression in dict.fromkeys(term_expressions):
        found = {int(r[0]) for r in db.execute("SELECT rowid FROM runbooks WHERE runbooks MATCH ?", (expression,))}
        # a term no section holds weighs as one that a single section holds: a word the runbooks never use counts
        # against every section alike, without outweighing the words they do share with the question
        weights.append(_idf(total, max(len(found), 1)))
        held.append(found)
    whole = sum(weights)
    if whole <= 0:
        return [0.0 for _ in rowids]
    return [sum(w for w, rows in zip(weights, held, strict=True) if rowid in rows) / whole for rowid in rowids]


def _idf(total: int, holding: int) -> float:
    """bm25's inverse document frequency, never negative."""
    return math.log(1 + (total - holding + 0.5) / (holding + 0.5))
