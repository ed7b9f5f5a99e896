"""Numbers an answer derives from observed ones: a ratio, a difference, a percent change, a share or a product.

A reasoner writes "p99 rose from 212 ms to 1,180 ms (x5.6)" or "errors went up 40 %" without a calculate step; the
grounding check should not flag the x5.6. A derived number is backed when it equals, at the precision it was
written with, one of those simple derivations of two numbers that are themselves backed and that either

- the answer states itself (its "212 ms" and "1,180 ms", each found in an observation), or
- stand on one line of an observation (a tool's "before -> after" line).

A duration is backed when it is the time between two times of day the answer states, each backed ("locked from
19:02 to 19:35, 33 min").

Pairs are never drawn from all the numbers of all observations: with hundreds of them, some pair would match almost
any number, and an invented one would pass. A number with no such pair stays unverified.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from itertools import combinations

Quantity = tuple[float, str]  # (value in its dimension's base unit, dimension; "" for a bare number)
Units = dict[str, tuple[str, float]]  # unit -> (dimension, factor to the base unit)
MAX_LINE_NUMBERS = 12  # a line with more numbers is a table, not one finding: its pairs are not used


def derivations(a: Quantity, b: Quantity) -> Iterable[Quantity]:
    """What a reasoner computes from two quantities, each as (value, dimension of the result)."""
    (x, dim_x), (y, dim_y) = a, b
    if dim_x == dim_y:
        yield abs(x - y), dim_x
        if x and y:
            yield x / y, "ratio"
            yield y / x, "ratio"
            yield (y - x) / x * 100, "percent"
            yield (x - y) / y * 100, "percent"
            yield x / y * 100, "percent"
            yield y / x * 100, "percent"
    if not dim_x or not dim_y:
        yield x * y, dim_x or dim_y


def derived_from(
    value: float, unit: str, decimals: int, pairs: Iterable[tuple[Quantity, Quantity]], units: Units
) -> bool:
    """Whether (value, unit) written with `decimals` equals a derivation of one of the pairs."""
    dimension, factor = units[unit] if unit else ("", 1.0)
    for a, b in pairs:
        for result, result_dimension in derivations(a, b):
            if not _fits(dimension, result_dimension):
                continue
            seen = abs(result) / (factor if dimension == result_dimension else 1.0)
            if _same(value, seen, decimals):
                return True
    return False


def pairs_of(quantities: Sequence[Quantity]) -> list[tuple[Quantity, Quantity]]:
    return list(combinations(dict.fromkeys(quantities), 2))


def line_pairs(
    texts: Iterable[str], read: Callable[[str], list[tuple[float, str]]], units: Units
) -> list[tuple[Quantity, Quantity]]:
    """The pairs of numbers that stand on one line of an observation (lines with a handful of numbers only)."""
    pairs: list[tuple[Quantity, Quantity]] = []
    for text in texts:
        for line in text.splitlines():
            numbers = read(line)
            if 2 <= len(numbers) <= MAX_LINE_NUMBERS:
                pairs += pairs_of([quantity(value, unit, units) for value, unit in numbers])
    return pairs


def elapsed_between(claimed_ms: float, unit_ms: float, decimals: int, times: Iterable[str]) -> bool:
    """Whether a duration ("33 min", "1.5 h") is the time between two times of day the answer states and the
    evidence backs ("19:02" ... "19:35"), at the precision it was written with. Times without seconds are good to
    a minute, so a duration between them is too; across midnight counts ("23:50" to "00:20" is 30 min)."""
    moments = sorted({_ms_of_day(key) for key in times})
    slack = max(unit_ms / 10.0**decimals / 2, 60_000.0)
    for a, b in combinations(moments, 2):
        for gap in (b - a, 86_400_000 - (b - a)):
            if abs(claimed_ms - gap) <= slack:
                return True
    return False


def _ms_of_day(key: str) -> float:
    """ "HH:MM" or "HH:MM:SS" -> milliseconds since midnight."""
    parts = [int(p) for p in key.split(":")]
    return (parts[0] * 3600 + parts[1] * 60 + (parts[2] if len(parts) > 2 else 0)) * 1000.0


def quantity(value: float, unit: str, units: Units) -> Quantity:
    if not unit:
        return value, ""
    dimension, factor = units[unit]
    return value * factor, dimension


def _fits(claimed: str, result: str) -> bool:
    """A claim's dimension takes a result of the same dimension; a bare claim takes any (it makes no unit claim);
    a ratio written "x5.6" or "5.6 times" is a ratio."""
    return not claimed or claimed == result


def _same(claimed: float, seen: float, decimals: int) -> bool:
    scale = 10.0**decimals
    candidates = (round(seen, decimals), math.floor(seen * scale + 1e-9) / scale)
    return any(math.isclose(claimed, c, rel_tol=1e-9, abs_tol=1e-9) for c in candidates)
