"""Change points and spikes placed to the minute: a coarse step (5 min over a day) is re-read at 1-minute
resolution, so a change reads 15:05 rather than 15:10."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from tools.base import ToolError
from tools.metrics.reading import points_from_result

if TYPE_CHECKING:
    from tools.analysis.changepoints import ChangePoint, Spike
    from tools.metrics.prometheus import PrometheusAPI


def pinned_change(client: PrometheusAPI, change: ChangePoint, promql: str, step_s: int, factor: float) -> ChangePoint:
    """The change, at the first minute of its step past halfway between before and after."""
    mid = (change.before + change.after) / 2
    return replace(change, at=first_crossing(client, promql, change.at, step_s, factor, mid, change.after > mid))


def pinned_spike(client: PrometheusAPI, spike: Spike, promql: str, step_s: int, factor: float) -> Spike:
    """The spike, starting at the first minute a quarter of the way up to its peak."""
    level = spike.before + (spike.peak - spike.before) / 4
    return replace(spike, start=first_crossing(client, promql, spike.start, step_s, factor, level, True))


def first_crossing(
    client: PrometheusAPI, promql: str, at: datetime, step_s: int, factor: float, level: float, up: bool
) -> datetime:
    """The first minute of the step ending at `at` whose value is past `level`; `at` itself when unsure."""
    if step_s <= 60:
        return at
    start = at - timedelta(seconds=step_s)
    try:
        result = client.query_range(promql, start, at, "60s")
    except ToolError:
        return at  # the coarse time is still right to within one step
    return next((t for t, v in points_from_result(result, factor) if (v > level) == up), at)
