"""A series that stops (a service that serves no requests has no latency and a 0/0 error ratio): found, and
rendered as "no samples", never as "no change"; a fall to zero is worded as one."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from tools.analysis.changepoints import ChangePoint, detect_changes, detect_stop
from tools.metrics.series import MetricSeries, MetricStats, render_series, series_summary
from tools.timerange import TimeWindow

T0 = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)
END = T0 + timedelta(minutes=180)


def minutes(n: int) -> list[datetime]:
    return [T0 + timedelta(minutes=i) for i in range(n)]


def test_a_series_that_ends_well_before_the_window_has_stopped_where_its_samples_end():
    rng = random.Random(3)
    values = [50 * (1 + rng.uniform(-0.15, 0.15)) for _ in range(140)]
    stop = detect_stop(minutes(140), values, END, 60)
    assert stop is not None
    assert stop.last_at == T0 + timedelta(minutes=139) and stop.silent_s == 41 * 60
    assert 45 < stop.before < 55


def test_a_series_that_reaches_the_window_end_or_misses_a_scrape_has_not_stopped():
    values = [50.0] * 180
    assert detect_stop(minutes(180), values, END, 60) is None
    assert detect_stop(minutes(176), values[:176], END, 60) is None  # 5 minutes short: a late scrape, a rate window


def test_a_stop_needs_several_steps_of_silence_at_coarse_resolution():
    times = [T0 + timedelta(minutes=5 * i) for i in range(35)]  # the last point 10 minutes before the end
    assert detect_stop(times, [1.0] * 35, END, 300) is None  # two 5-minute steps: not yet
    assert detect_stop(times[:-1], [1.0] * 34, END, 300) is not None  # three


def test_traffic_that_falls_to_nothing_is_a_change_and_is_worded_as_a_fall():
    rng = random.Random(5)
    values = [150 * (1 + rng.uniform(-0.12, 0.12)) for _ in range(140)] + [0.0] * 40
    [change] = detect_changes(minutes(180), values)
    assert change.after == 0 and change.ratio == 0
    series = _series("qps", "req/s", values, changes=(change,))
    assert f"change: {change.at:%H:%M} " in render_series(series) and "-> 0 req/s (to 0)" in render_series(series)


def test_a_stopped_series_is_rendered_as_no_samples_never_as_no_change():
    values = [50.0] * 140
    stop = detect_stop(minutes(140), values, END, 60)
    text = render_series(_series("p99_latency", "ms", values, stop=stop))
    assert "stopped: no samples after 11:19 (last 50.0 ms), 41m to the window's end" in text
    assert "none detected" not in text


def _series(metric: str, unit: str, values: list[float], changes: tuple[ChangePoint, ...] = (), stop=None):
    points = tuple(zip(minutes(len(values)), values, strict=True))
    stats = MetricStats(min(values), sorted(values)[len(values) // 2], max(values), values[-1])
    summary = series_summary(points, 60)
    return MetricSeries("ranker", metric, "q", unit, TimeWindow(T0, END), 60, summary, stats, changes, 1, stop=stop)
