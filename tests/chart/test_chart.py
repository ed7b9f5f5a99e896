"""The chart of a diagnosis: what it shows (from the typed results), how it draws, and its text fallback."""

from __future__ import annotations

import io
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from bot.chart.draw import axis_label, render_png
from bot.chart.sparkline import ONSET, sparkline
from bot.chart.spec import ChartSpec, chart_spec
from bot.engine.types import Step, StopReason, Totals, Trace
from tests import toolresults
from tests.toolresults import WINDOW, at, deploys, record, series
from tools.analysis.ranking import ChangeRanking, Onset, Suspect
from tools.metrics.chartline import ChartLine
from tools.metrics.series import MetricSeries
from tools.timerange import TimeWindow

PNG = b"\x89PNG\r\n\x1a\n"


def points(start: datetime, end: datetime, level: float, *, jump_at: datetime | None = None, to: float = 0.0):
    step, out, moment = timedelta(minutes=1), [], start
    while moment <= end:
        out.append((moment, to if jump_at is not None and moment >= jump_at else level))
        moment += step
    return tuple(out)


def looked(service: str = "order", metric: str = "p99_latency", **kwargs) -> MetricSeries:
    chart = ChartLine.of(points(WINDOW.start, WINDOW.end, 212.0, jump_at=at("15:05"), to=1180.0), 60)
    return replace(series(service, metric, **kwargs), chart=chart)


def trace_of(*steps: Step, answer: str = "Root cause: order v2.8.1 raised the pool size.") -> Trace:
    return Trace(
        trace_id="t" * 32,
        question="why is order slow?",
        protocol="playbook",
        steps=tuple(replace(s, index=i) for i, s in enumerate(steps, 1)),
        answer=answer,
        complete=True,
        stop_reason=StopReason.FINISH,
        totals=Totals(steps=len(steps)),
    )


def metric_step(data: MetricSeries) -> Step:
    return toolresults.step(1, "query_metrics", data, service=data.service, metric=data.metric)


def ranking(said: datetime | None = None) -> ChangeRanking:
    deploy = Suspect("deploy", "deploy order/v2.8.1 at 15:02", (), "order", at("15:02"), version="v2.8.1")
    return ChangeRanking("order", WINDOW, Onset("p99_latency", at("15:05"), 5.6), said, suspects=(deploy,))


def test_the_symptom_is_the_onsets_series_with_onset_said_time_and_suspects_marked():
    noise = looked("order", "error_rate", changes=())
    trace = trace_of(
        metric_step(noise),
        metric_step(looked()),
        toolresults.step(3, "find_changes", ranking(said=at("15:00")), service="order"),
    )
    spec = chart_spec(trace)
    assert spec is not None and [p.title for p in spec.panels] == ["p99_latency of order (ms)"]
    assert [(m.kind, m.label, m.at) for m in spec.marks] == [
        ("onset", "onset", at("15:05")),
        ("said", "you said", at("15:00")),
        ("suspect", "order/v2.8.1 at 15:02", at("15:02")),
    ]


def test_a_second_panel_shows_a_changed_series_the_answer_names_and_deploys_mark_without_a_ranking():
    trace = trace_of(
        metric_step(looked()),
        metric_step(looked("orders-db", "connections")),
        metric_step(looked("catalog", "p99_latency")),  # changed, but the answer does not name it
        toolresults.step(4, "query_deploy_records", deploys(record()), service="order"),
        answer="orders-db ran out of connections after order v2.8.1.",
    )
    spec = chart_spec(trace)
    assert spec is not None
    assert [p.service for p in spec.panels] == ["order", "orders-db"]
    assert [m.kind for m in spec.marks] == ["onset", "suspect"] and "v2.8.1" in spec.marks[1].label


def test_the_baseline_is_the_same_hours_a_day_earlier_from_a_wider_look():
    wide_window = TimeWindow(WINDOW.start - timedelta(days=2), WINDOW.end)
    wide = replace(
        looked(window=wide_window), chart=ChartLine.of(points(wide_window.start, wide_window.end, 200.0), 60)
    )
    spec = chart_spec(trace_of(metric_step(looked()), metric_step(wide)))
    assert spec is not None
    baseline = spec.panels[0].baseline
    assert baseline and all(WINDOW.start <= moment <= WINDOW.end for moment, _ in baseline)
    assert {value for _, value in baseline} == {200.0}


def test_no_series_no_chart():
    assert chart_spec(trace_of(toolresults.step(1, "query_deploy_records", deploys(record())))) is None
    assert chart_spec(trace_of(metric_step(series()))) is None  # a series with no chart points


def _spec_with(chart: tuple[tuple[datetime, float], ...]) -> ChartSpec:
    spec = chart_spec(trace_of(metric_step(replace(series(), chart=ChartLine.of(chart, 60)))))
    assert spec is not None
    return spec


@pytest.mark.parametrize(
    "shape",
    ["a gap", "a single point", "a flat line", "a step"],
)
def test_each_shape_renders_a_png_for_a_phone(shape):
    start, end = WINDOW.start, WINDOW.end
    charts = {
        "a gap": tuple(p for p in points(start, end, 100.0) if not at("15:10") <= p[0] <= at("15:40")),
        "a single point": ((at("15:05"), 42.0),),
        "a flat line": points(start, end, 7.0),
        "a step": points(start, end, 212.0, jump_at=at("15:05"), to=1180.0),
    }
    png = render_png(_spec_with(charts[shape]), ZoneInfo("Europe/Berlin"))
    assert png.startswith(PNG)
    from matplotlib import image

    height, width = image.imread(io.BytesIO(png)).shape[:2]
    assert (width, height) == (880, 462)  # 8 x 4.2 inches at 110 dpi: one panel, legible on a phone


def test_two_panels_stack_and_the_axis_names_the_zone_and_utc():
    trace = trace_of(metric_step(looked()), metric_step(looked("orders-db", "connections")), answer="orders-db")
    spec = chart_spec(trace)
    assert spec is not None and len(spec.panels) == 2
    from matplotlib import image

    height, _ = image.imread(io.BytesIO(render_png(spec, UTC))).shape[:2]
    assert height == 858  # two 3.6 inch panels and the axis
    assert axis_label(at("15:05"), ZoneInfo("Europe/Berlin")) == f"time, CET (UTC+01:00), {at('15:05'):%Y-%m-%d}"
    assert axis_label(at("15:05"), UTC) == f"time, UTC, {at('15:05'):%Y-%m-%d}"


def test_the_sparkline_marks_the_onset_and_keeps_a_gap():
    line = sparkline(_spec_with(_points(looked())))
    bars = line.split(" ")[2]
    assert line.startswith("order p99_latency ") and f"({ONSET} onset 15:05 UTC)" in line
    left, right = bars.split(ONSET)
    assert set(left) == {"▁"} and set(right) == {"█"}
    gappy = tuple(p for p in _points(looked()) if not at("14:30") <= p[0] <= at("14:45"))
    assert " " in sparkline(_spec_with(gappy)).split(" ", 2)[2].split(" (")[0]
    assert set(sparkline(_spec_with(points(WINDOW.start, WINDOW.end, 3.0))).split(" ")[2]) - {ONSET} == {"▄"}


def _points(data: MetricSeries) -> tuple[tuple[datetime, float], ...]:
    assert data.chart is not None
    return data.chart.points()


def test_the_chart_line_is_compact_rounded_and_keeps_gaps():
    moments = [at("15:00") + timedelta(minutes=m) for m in (0, 1, 2, 7, 8)]
    line = ChartLine.of([(m, 1234.5678 + i) for i, m in enumerate(moments)], 120)
    assert line is not None and line.step_s == 120 and line.start == at("15:00")
    assert [v if v == v else None for v in line.values] == [1235.0, 1237.0, None, 1238.0, 1239.0]
    assert [m for m, _ in line.points()] == [at("15:00"), at("15:02"), at("15:06"), at("15:08")]
    assert ChartLine.of([], 60) is None
