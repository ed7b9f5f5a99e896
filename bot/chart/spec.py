"""What one diagnosis' chart shows, chosen from the typed results its steps already hold (never a second query).

The symptom panel is the series the answer rests on: the metric of the onset `find_changes` found, else the first
series of the asked service that changed. Its baseline is the same hours a day earlier, where a wider look at the
same series holds them. A second panel shows another series that changed and that the answer names (a dependency's
latency, a pool). Vertical lines mark the onset, the time the user said, and the ranked suspects (deploys, surges),
or the asked service's deploys and Kubernetes warnings inside the window when nothing was ranked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from bot.engine.types import Trace
from tools.analysis.ranking import ChangeRanking
from tools.metrics.series import MetricSeries
from tools.results import deploys_of, events_of, ranking_of, series_of

MarkKind = Literal["onset", "said", "suspect"]
MAX_SUSPECTS = 3
DAY = timedelta(days=1)

Points = tuple[tuple[datetime, float], ...]


@dataclass(frozen=True)
class Panel:
    service: str
    metric: str
    unit: str
    points: Points  # oldest first
    baseline: Points = ()  # the same hours a day earlier, moved forward a day

    @property
    def title(self) -> str:
        return f"{self.metric} of {self.service}" + (f" ({self.unit})" if self.unit else "")


@dataclass(frozen=True)
class Mark:
    at: datetime
    label: str
    kind: MarkKind


@dataclass(frozen=True)
class ChartSpec:
    panels: tuple[Panel, ...]  # the symptom first; at most two
    marks: tuple[Mark, ...]
    start: datetime
    end: datetime

    @property
    def onset(self) -> datetime | None:
        return next((m.at for m in self.marks if m.kind == "onset"), None)


def chart_spec(trace: Trace) -> ChartSpec | None:
    """The chart for a finished diagnosis, or None when no step holds a series with a point to draw."""
    looks = [s for step in trace.steps if (s := series_of(step)) is not None and s.chart is not None]
    if not looks:
        return None
    ranking = next((r for step in trace.steps if (r := ranking_of(step)) is not None), None)
    symptom = _symptom(looks, ranking)
    start, end = symptom.window.start, symptom.window.end
    panels = [_panel(symptom, looks)]
    second = _second(looks, symptom, trace.answer)
    if second is not None:
        panels.append(_panel(second, looks))
    marks = [*_onset_marks(symptom, ranking), *_suspect_marks(trace, symptom, ranking)]
    inside = tuple(dict.fromkeys(m for m in marks if start <= m.at <= end))  # a deploy two steps listed: once
    return ChartSpec(tuple(panels), inside, start, end)


def _symptom(looks: Sequence[MetricSeries], ranking: ChangeRanking | None) -> MetricSeries:
    if ranking is not None and ranking.onset is not None:
        onset = ranking.onset
        for look in looks:
            if look.service == ranking.service and look.metric == onset.metric and _holds(look, onset.at):
                return look
    asked = ranking.service if ranking is not None else looks[0].service
    changed = [s for s in looks if s.service == asked and _changed(s)]
    return changed[0] if changed else next((s for s in looks if s.service == asked), looks[0])


def _second(looks: Sequence[MetricSeries], symptom: MetricSeries, answer: str) -> MetricSeries | None:
    """Another series that changed and that the answer names: a dependency, or another signal of the service."""
    for look in looks:
        other = (look.service, look.metric) != (symptom.service, symptom.metric)
        named = look.service in answer if look.service != symptom.service else look.metric in answer
        if other and named and _changed(look):
            return look
    return None


def _panel(series: MetricSeries, looks: Sequence[MetricSeries]) -> Panel:
    """The series, and from a wider look at it the same hours a day earlier (moved forward a day to overlay)."""
    start, end = series.window.start, series.window.end
    baseline: Points = ()
    for look in looks:
        if (look.service, look.metric) == (series.service, series.metric) and look.window.start <= start - DAY:
            earlier = look.chart.points() if look.chart is not None else ()
            baseline = tuple((at + DAY, v) for at, v in earlier if start <= at + DAY <= end)
            if baseline:
                break
    drawn = series.chart.points() if series.chart is not None else ()
    return Panel(series.service, series.metric, series.unit, drawn, baseline)


def _onset_marks(symptom: MetricSeries, ranking: ChangeRanking | None) -> list[Mark]:
    marks = []
    if ranking is not None and ranking.onset is not None:
        marks.append(Mark(ranking.onset.at, "onset", "onset"))
    elif symptom.changes:
        marks.append(Mark(symptom.changes[0].at, "onset", "onset"))
    elif symptom.spikes:
        marks.append(Mark(symptom.spikes[0].start, "onset", "onset"))
    if ranking is not None and ranking.said is not None:
        marks.append(Mark(ranking.said, "you said", "said"))
    return marks


def _suspect_marks(trace: Trace, symptom: MetricSeries, ranking: ChangeRanking | None) -> list[Mark]:
    """The ranked suspects, best first; without a ranking, the service's deploys and Kubernetes warnings."""
    if ranking is not None and ranking.suspects:
        return [
            Mark(s.at, s.what.removeprefix("deploy "), "suspect")
            for s in ranking.suspects[:MAX_SUSPECTS]
            if s.at is not None
        ]
    marks: list[Mark] = []
    for step in trace.steps:
        deploys = deploys_of(step)
        if deploys is not None:
            own = [r for r in deploys.records if r.service == symptom.service]
            marks += [Mark(r.at, f"{r.service} {r.version}", "suspect") for r in own]
        events = events_of(step)
        if events is not None:
            marks += [
                Mark(e.at, f"{e.reason} {e.object_name}", "suspect") for e in events.events if e.type == "Warning"
            ]
    return marks[:MAX_SUSPECTS]


def _changed(series: MetricSeries) -> bool:
    return bool(series.changes or series.spikes or series.trends or series.stop or series.sawtooth)


def _holds(series: MetricSeries, moment: datetime) -> bool:
    return series.window.start <= moment <= series.window.end
