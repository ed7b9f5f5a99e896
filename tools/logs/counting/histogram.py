"""The count histogram of a window: its buckets, the backend's counts per bucket, and the onset read from them.

About BUCKETS buckets of a round step (1 s … 1 d) from the window's start, so an onset in the logs is read in one
call. The change points come from the same detector the metrics use (tools/analysis/changepoints.py), run on the
lines at ERROR and FATAL per bucket.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import datetime

from tools.logs.model import Frame
from tools.logs.summary import ERROR_LEVELS, LogHistogram
from tools.timerange import TimeWindow

BUCKETS = 30
STEPS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)
MIN_CHANGE_LINES = 5  # fewer error lines than this in the window: no onset is read from them
MIN_RATIO = 3.0  # line counts are noisier than a metric's rates: a change must at least triple (or fall to a third)


def frame_for(window: TimeWindow) -> Frame:
    """About BUCKETS buckets of a round step over the window, starting at its start."""
    wanted = window.seconds / BUCKETS
    step = next((s for s in STEPS_S if s >= wanted), STEPS_S[-1])
    return Frame(window.start, step, max(1, math.ceil(window.seconds / step)))


def log_histogram(
    frame: Frame, by_level: Mapping[str, tuple[int, ...]], by_signature: Mapping[str, tuple[int, ...]]
) -> LogHistogram:
    """The histogram with its change points in the lines at ERROR and FATAL."""
    histogram = LogHistogram(frame.start, frame.step_s, dict(by_level), dict(by_signature))
    errors = histogram.at_levels(ERROR_LEVELS)
    if sum(errors) < MIN_CHANGE_LINES:
        return histogram
    from tools.analysis.changepoints import detect_changes  # numpy loads with the first histogram read

    changes = detect_changes(histogram.times(), [float(n) for n in errors], min_ratio=MIN_RATIO)
    return LogHistogram(frame.start, frame.step_s, histogram.by_level, histogram.by_signature, tuple(changes))


def local_buckets(frame: Frame, moments: Iterable[datetime]) -> tuple[int, ...]:
    """Buckets counted from lines in hand (when the sample held every line)."""
    counts = [0] * frame.count
    for moment in moments:
        counts[frame.index(moment)] += 1
    return tuple(counts)
