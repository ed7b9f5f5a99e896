"""What query_metrics saw, as a small frozen value, and its compact text rendering.

Code reads `MetricSeries` (tools/results.py finds it on a step); the model reads `render_series()`: PromQL, stats
with units, `capped: p99 >= 1,000 ms (...)` when a histogram quantile read its top finite bucket, `change: HH:MM
before -> after (xN)` for level shifts, `spike: HH:MM before -> peak P at HH:MM (xN), back to ~A by HH:MM` for
excursions that came and went, `trend: +35 %/h since HH:MM (before -> after, xN)` for a climb still going at the
window's end, `sawtooth: N drops (restarts?) HH:MM–HH:MM, high -> low (xN)` for repeated climbs that drop back,
`stopped: no samples after HH:MM (last V), D to the window's end; cause: C (up: ...; other services: ...)` for a
series that ended early (a service that serves no requests has no latency and no error ratio: "no samples", never
"no change"; C says whether the service stopped, the collection did, or it is unknown: tools/metrics/collection.py),
and about a dozen averaged points. When none of the four was found it says so (`change: none detected`), and when
there were too few points to look it says that instead (`change: not checked`).

The raw samples are not kept: the series carries the averaged cells the text shows and how many samples they
average, so a stored step holds what the model saw, not 288 points per query.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, ClassVar, Final, Literal

from tools.base import ToolData
from tools.metrics.chartline import ChartLine, bucket_means
from tools.timerange import TimeWindow, duration_to_text

if TYPE_CHECKING:  # the detectors load with the first series analysed, not with the metrics tool
    from tools.analysis.changepoints import ChangePoint, Spike, Stop
    from tools.analysis.trends import Sawtooth, Trend
    from tools.metrics.views import RelatedRead, ResourceUse

SUMMARY_POINTS = 12
GAP: Final = "collection gap"  # the collection stopped with the series (tools/metrics/collection.py decides)
SERVICE: Final = "the service"
UNKNOWN: Final = "unknown"
StopCause = Literal["collection gap", "the service", "unknown"]
TAIL_S = 600  # before a gap, changes this close to the last sample are a rate() window running out of samples


@dataclass(frozen=True)
class MetricQuery:
    """One catalogue entry: a PromQL template with `$label` and `$service` placeholders, and its unit."""

    promql: str
    unit: str
    description: str = ""
    counts: str = ""  # requests per second behind each point (a quantile's or a share's), "" = not known


@dataclass(frozen=True)
class MetricStats:
    min: float
    median: float
    max: float
    last: float


@dataclass(frozen=True)
class SeriesSummary:
    """About SUMMARY_POINTS means over buckets of a round length, as the text's `series (mean per ...)` line shows
    them, and how many samples the query returned (the detectors read those)."""

    bucket_s: int
    cells: tuple[tuple[datetime, float], ...]  # (bucket start, mean), oldest first
    samples: int

    @property
    def first_at(self) -> datetime | None:
        """About when the series starts: its first bucket."""
        return self.cells[0][0] if self.cells else None


@dataclass(frozen=True)
class Collection:
    """What the checks said about a stopped series: whether the service stopped, the collection did, or unknown."""

    cause: StopCause
    up: str  # Prometheus' own `up` of its targets, in words
    others: str  # what the other services' raw series did, in words
    tail_left_out: int = 0  # change points in the series' last minutes before a gap, left out (see without_gap_tail)
    others_ended: int | None = None  # other services whose raw series ended at the same minute (None: not compared)
    others_total: int | None = None  # other services with the same raw metric
    last_sample_at: datetime | None = None  # the last sample of the service's own raw series, when compared

    def describe(self) -> str:
        """`cause: collection gap (scrape health: up ended with it ...; other services: all 3 others' ...)`."""
        tail = (
            f"; {self.tail_left_out} change(s) in its last {TAIL_S // 60} minutes left out: a rate window "
            "running out of samples, not the service"
            if self.tail_left_out
            else ""
        )
        return f"cause: {self.cause} (scrape health: {self.up}; other services: {self.others}{tail})"

    @property
    def ended_with(self) -> str:
        """Whose series ended with this one: "every service", or "4 of 5 services" (this one included)."""
        if self.others_ended is None or self.others_total is None or self.others_ended == self.others_total:
            return "every service"
        return f"{self.others_ended + 1} of {self.others_total + 1} services"


@dataclass(frozen=True)
class Ceiling:
    """A histogram quantile that read the histogram's top finite bucket (tools/metrics/ceiling.py): a floor."""

    name: str  # "p99"
    bucket: str  # the top finite bucket as the histogram writes it: "1 s"
    bound: float  # the same in the display unit

    def reading(self, unit: str) -> str:
        """`p99 >= 1,000 ms (the histogram's top finite bucket is 1 s; real latency may be higher)`."""
        shown, top = value_text(self.bound, unit), f"the histogram's top finite bucket is {self.bucket}"
        return f"{self.name} >= {shown} ({top}; real latency may be higher)"


@dataclass(frozen=True)
class MetricSeries(ToolData):
    """What query_metrics saw, in the display unit; the observation text is rendered from this."""

    kind: ClassVar[str] = "metric_series"
    service: str
    metric: str
    promql: str
    unit: str
    window: TimeWindow
    step_s: int
    summary: SeriesSummary
    stats: MetricStats | None
    changes: tuple[ChangePoint, ...]
    series_count: int
    spikes: tuple[Spike, ...] = ()
    trends: tuple[Trend, ...] = ()
    sawtooth: Sawtooth | None = None
    stop: Stop | None = None
    collection: Collection | None = None  # whether the stop is the service's or the collection's
    chart: ChartLine | None = None  # about CHART_POINTS means: what a chart of it draws
    ceiling: Ceiling | None = None  # set when a histogram quantile read its top finite bucket
    resources: ResourceUse | None = None  # beside cpu or memory: the pods' requests and limits
    related: tuple[RelatedRead, ...] = ()  # beside the 5xx errors: the 4xx and 429 shares

    @property
    def checked(self) -> bool:
        """Whether there were enough samples for the detectors to look (else `change: not checked`)."""
        return self.summary.samples >= min_detection_points()


@dataclass(frozen=True)
class ServiceList(ToolData):
    """What list_services saw: every value of the service label, and each listed service's downstream services."""

    kind: ClassVar[str] = "service_list"
    label: str
    services: tuple[str, ...]  # every one, sorted
    shown: int  # how many the text lists
    downstream: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # of the listed ones that have any
    own_labels: Mapping[str, str] = field(default_factory=dict)  # service -> its own label, where not `label`


def series_summary(points: Sequence[tuple[datetime, float]], step_s: int) -> SeriesSummary:
    """About SUMMARY_POINTS means over buckets of a round length (2h rather than 125m)."""
    bucket_s, cells = bucket_means(points, step_s, SUMMARY_POINTS)
    return SeriesSummary(bucket_s, cells, len(points))


def render_series(series: MetricSeries) -> str:
    """The compact observation: PromQL, stats with units, change points, a 12-point summary."""
    lines = [heading(series), f"promql: {series.promql}"]
    if series.stats is None:
        return "\n".join([*lines, NO_SAMPLES])
    lines.append(stats_line(series.stats, series.unit))
    lines += [f"capped: {series.ceiling.reading(series.unit)}"] if series.ceiling else []
    lines += [note] if (note := count_note(series)) else []
    lines += finding_lines(series) or [no_finding_line(series)]
    lines.append(_summary_line(series.summary, series.unit, series.window.clock_format))
    return "\n".join(lines + beside_lines(series))


def beside_lines(series: MetricSeries) -> list[str]:
    """The `limits:` and `beside:` lines: what was read next to the series (tools/metrics/beside.py)."""
    from tools.metrics.views import related_line, resource_line

    lines = [resource_line(series.resources, series.unit)] if series.resources else []
    return lines + ([related_line(series.related, series.window.clock_format)] if series.related else [])


NO_SAMPLES = "no data: the query returned no samples in this window for this service; nothing was checked."


def heading(series: MetricSeries) -> str:
    """The text's first line: `p99_latency of order, 2026-11-28 14:05 → 16:05 UTC (2h), step 30s`."""
    return f"{series.metric} of {series.service}, {series.window.describe()}, step {duration_to_text(series.step_s)}"


def count_note(series: MetricSeries) -> str:
    """`note: the query returned 3 series; this is the first.` ("" for one series)."""
    if series.series_count < 2:
        return ""
    return f"note: the query returned {series.series_count} series; this is the first."


def no_finding_line(series: MetricSeries) -> str:
    """What the text says of a series with samples but no finding: not checked (too few points) or none detected."""
    if not series.checked:
        needed = min_detection_points()
        return f"change: not checked (only {series.summary.samples} points; detection needs {needed})"
    capped = "; capped: a rise above the top finite bucket cannot show" if series.ceiling else ""
    return f"change: none detected (no level shift, spike, trend or sawtooth{capped})"


def render_services(listed: ServiceList) -> str:
    """One line per listed service (`shipping -> billing, shipping-db`), under a header with the total."""
    lines = [
        f"{name} -> {', '.join(listed.downstream[name])}" if name in listed.downstream else name
        for name in listed.services[: listed.shown]
    ]
    labels = "".join(f"; {name} on {label!r}" for name, label in sorted(listed.own_labels.items()))
    header = f"{len(listed.services)} services (label {listed.label!r}{labels}); -> lists a service's downstream"
    header += " services:"
    more = len(listed.services) - listed.shown
    footer = [f"… and {more} more not shown; query_metrics validates any name."] if more else []
    return "\n".join([header, *lines, *footer])


def stats_line(stats: MetricStats, unit: str) -> str:
    """`min 190 ms · median 205 ms · max 1,240 ms · last 1,180 ms`."""
    shown = f"min {value_text(stats.min, unit)} · median {value_text(stats.median, unit)}"
    return f"{shown} · max {value_text(stats.max, unit)} · last {value_text(stats.last, unit)}"


def finding_lines(series: MetricSeries) -> list[str]:
    """The change, spike, trend, sawtooth and stopped lines of the text, in that order."""
    u, clock = series.unit, series.window.clock_format
    found = [change_line(c, u, clock) for c in series.changes]
    found += [spike_line(spike, u, clock) for spike in series.spikes]
    found += [trend_line(trend, u, clock) for trend in series.trends]
    found += [sawtooth_line(series.sawtooth, u, clock)] if series.sawtooth else []
    found += [stop_line(series.stop, series.collection, u, clock)] if series.stop else []
    return found


def min_detection_points() -> int:
    """Fewer points than this and detect_changes does not look."""
    from tools.analysis.changepoints import MIN_SIDE_POINTS

    return 2 * MIN_SIDE_POINTS + 1


def change_line(change: ChangePoint, unit: str, clock: str) -> str:
    before, after = value_text(change.before, unit), value_text(change.after, unit)
    return f"change: {change.at:{clock}} {before} -> {after} ({factor_text(change.ratio)})"


def spike_line(spike: Spike, unit: str, clock: str) -> str:
    """`spike: 15:26 94 ms -> peak 2,455 ms at 15:30 (x26.0), back to ~93 ms by 16:04`."""
    rise = f"{spike.start:{clock}} {value_text(spike.before, unit)} -> peak {value_text(spike.peak, unit)}"
    back = f"back to ~{value_text(spike.after, unit)} by {spike.back_at:{clock}}"
    return f"spike: {rise} at {spike.peak_at:{clock}} ({factor_text(spike.ratio)}), {back}"


def trend_line(trend: Trend, unit: str, clock: str) -> str:
    """`trend: +35 %/h since 09:10 (212 MB -> 890 MB, x4.2)`."""
    ratio = trend.after / trend.before if trend.before else None
    levels = f"{value_text(trend.before, unit)} -> {value_text(trend.after, unit)}, {factor_text(ratio)}"
    return f"trend: {trend.per_hour * 100:+.0f} %/h since {trend.start:{clock}} ({levels})"


def sawtooth_line(saw: Sawtooth, unit: str, clock: str) -> str:
    """`sawtooth: 4 drops (restarts?) 09:40–13:10, 890 MB -> 420 MB (x2.1)`."""
    span = f"{saw.drops[0]:{clock}}–{saw.drops[-1]:{clock}}"
    levels = f"{value_text(saw.high, unit)} -> {value_text(saw.low, unit)} ({factor_text(saw.ratio)})"
    return f"sawtooth: {len(saw.drops)} drops (restarts?) {span}, {levels}"


def stop_line(stop: Stop, collection: Collection | None, unit: str, clock: str) -> str:
    """`stopped: no samples after 11:20 (last 55.9 ms), 40m to the window's end; cause: collection gap (up: ...;
    other services: ...)`: the service stopped serving, or the collection stopped, or unknown (not checked)."""
    silent = duration_to_text(int(stop.silent_s) // 60 * 60 or int(stop.silent_s))  # whole minutes
    cause = collection.describe() if collection else "cause: unknown (whether collection stopped too was not checked)"
    return (
        f"stopped: no samples after {stop.last_at:{clock}} (last {value_text(stop.before, unit)}), {silent} to the "
        f"window's end; {cause}"
    )


def factor_text(ratio: float | None) -> str:
    """A ratio as the text prints it: `x6.1`, `x0.65`, `to 0` (a fall to nothing) or `from 0` (a rise from it)."""
    if ratio == 0:
        return "to 0"  # a fall to nothing, not a rise from it
    return f"x{ratio:.1f}" if ratio is not None and ratio >= 0.1 else f"x{ratio:.2g}" if ratio else "from 0"


def _summary_line(summary: SeriesSummary, unit: str, clock: str) -> str:
    cells = [f"{at:{clock}} {number_text(mean)}" for at, mean in summary.cells]
    return f"series (mean per {duration_to_text(summary.bucket_s)}, {unit or 'count'}): " + ", ".join(cells)


def value_text(number: float, unit: str) -> str:
    """A value with its display unit as the text prints it: `1,180 ms`, `0.68%`, `42.5 req/s`."""
    text = number_text(number)
    return f"{text}%" if unit == "%" else f"{text} {unit}".rstrip()


def number_text(number: float) -> str:
    """`1,180`, `42.5`, `0.068`: thousands separated, about three significant digits below 100."""
    if abs(number) >= 100:
        return f"{number:,.0f}"
    if abs(number) >= 1:
        return f"{number:.1f}"
    return f"{number:.2g}"
