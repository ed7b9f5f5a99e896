"""The points of a series a chart draws, kept compact in a stored step: a start, a step and the values.

About CHART_POINTS means over buckets of a round length (the same bucketing as the text's summary), each rounded to
four significant digits (a picture, not a measurement: the detectors and the text read the full samples). A bucket
no sample fell in is NaN (null in JSON), so a gap stays a gap. 120 points cost about 1 kB in a stored trace.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from statistics import fmean

CHART_POINTS = 120
SIGNIFICANT = 4


@dataclass(frozen=True)
class ChartLine:
    start: datetime  # the first bucket's start
    step_s: int  # the bucket length
    values: tuple[float, ...]  # one mean per bucket from `start`; NaN where no sample fell

    @classmethod
    def of(cls, points: Sequence[tuple[datetime, float]], bucket_s: int) -> ChartLine | None:
        """The means of `points` over buckets of `bucket_s` (None for no points)."""
        if not points:
            return None
        first = int(points[0][0].timestamp()) // bucket_s
        buckets: dict[int, list[float]] = {}
        for moment, value in points:
            buckets.setdefault(int(moment.timestamp()) // bucket_s - first, []).append(value)
        values = tuple(_rounded(fmean(buckets[i])) if i in buckets else math.nan for i in range(max(buckets) + 1))
        start = datetime.fromtimestamp(first * bucket_s, tz=points[0][0].tzinfo)
        return cls(start, bucket_s, values)

    def points(self) -> tuple[tuple[datetime, float], ...]:
        """(bucket start, mean) for every bucket that has one, oldest first."""
        step = timedelta(seconds=self.step_s)
        return tuple((self.start + i * step, v) for i, v in enumerate(self.values) if math.isfinite(v))


def _rounded(value: float) -> float:
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, SIGNIFICANT - 1 - math.floor(math.log10(abs(value))))
