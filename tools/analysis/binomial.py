"""Whether errors split between two runs of requests differently than chance would split them.

A share of the requests (an error ratio) over a few hundred requests moves by whole errors: 2 of 200 is 1 %, 5 of
200 is 2.5 %, and nothing else changed. Given the errors on both sides together, under no change each error fell on
a side in proportion to the requests there, so the errors on one side are binomial; the test is exact, a sum over
that binomial's terms (numpy, on a log scale so large counts do not underflow). Past EXACT_LIMIT errors the normal
approximation (with continuity correction) is as good and costs nothing.
"""

from __future__ import annotations

import math

import numpy as np

EXACT_LIMIT = 20_000  # errors on both sides; past it the normal approximation stands in for the exact sum


def split_p_value(errors: tuple[float, float], requests: tuple[float, float]) -> float:
    """The two-sided p-value of `errors` (before, after) falling as they did on sides holding `requests` (before,
    after), if both sides had the same share. 1.0 when a side has no requests or there are no errors at all."""
    total, after = round(errors[0] + errors[1]), round(errors[1])
    if total <= 0 or min(requests) <= 0:
        return 1.0
    p = requests[1] / (requests[0] + requests[1])
    if total > EXACT_LIMIT:
        z = max(0.0, abs(after - total * p) - 0.5) / math.sqrt(total * p * (1 - p))
        return math.erfc(z / math.sqrt(2))
    j = np.arange(total, dtype=float)
    steps = np.log((total - j) / (j + 1)) + math.log(p / (1 - p))  # log pmf(j + 1) - log pmf(j)
    pmf = np.exp(total * math.log1p(-p) + np.concatenate(([0.0], np.cumsum(steps))))
    upper, lower = float(pmf[after:].sum()), float(pmf[: after + 1].sum())
    return min(1.0, 2 * min(upper, lower))
