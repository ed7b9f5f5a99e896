"""The points of a series a chart draws, kept compact in a stored step: a start, a step and the values; and the
round buckets both the chart and the text's summary average over.

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
_BUCKET_S = (60, 120, 300, 600, 900, 1200, 1800, 2700, 3600, 7200, 10_800, 14_400, 21_600, 43_200, 86_400)


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


def bucket_length(points: Sequence[tuple[datetime, float]], step_s: int, count: int) -> int:
    """A round bucket length (2h rather than 125m) that gives about `count` buckets over `points`."""
    wanted_s = math.ceil(len(points) / count) * step_s
    return next((s for s in _BUCKET_S if s >= wanted_s and s % step_s == 0), wanted_s)


def bucket_means(
    points: Sequence[tuple[datetime, float]], step_s: int, count: int
) -> tuple[int, tuple[tuple[datetime, float], ...]]:
    """(bucket length, (first moment, mean) per bucket that has a point): the text's summary cells."""
    bucket_s = bucket_length(points, step_s, count)
    buckets: dict[int, list[tuple[datetime, float]]] = {}
    for moment, value in points:
        buckets.setdefault(int(moment.timestamp()) // bucket_s, []).append((moment, value))
    return bucket_s, tuple((b[0][0], fmean(v for _, v in b)) for b in buckets.values())


def _rounded(value: float) -> float:
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, SIGNIFICANT - 1 - math.floor(math.log10(abs(value))))
