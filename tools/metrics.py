"""query_metrics: one catalogued metric of one service over a window, summarised for the model.

User text never reaches PromQL unchecked: the metric must be a catalogue name, and the service must be
one of the label values Prometheus actually holds (and is escaped as a PromQL string on top of that).
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from statistics import fmean, median
from string import Template
from typing import Annotated, Any

import requests
from prometheus_api_client import PrometheusApiClientException, PrometheusConnect

from tools.base import ToolError, ToolResult, ToolSpec, tool
from tools.changepoints import ChangePoint, detect_changes
from tools.choices import CachedNames, choice_or_error
from tools.timerange import Clock, TimeWindow, duration_to_text, utc_now, window_from_args

log = logging.getLogger(__name__)

_LABEL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NICE_STEPS_S = (15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10_800, 21_600, 43_200, 86_400)
# Catalogue unit -> (unit shown to the model, factor): latency in ms, ratios in %, bytes in MB.
_DISPLAY_UNITS = {
    "s": ("ms", 1000.0),
    "ms": ("ms", 1.0),
    "ratio": ("%", 100.0),
    "rps": ("req/s", 1.0),
    "cores": ("cores", 1.0),
    "bytes": ("MB", 1e-6),
    "count": ("", 1.0),
}
SUMMARY_POINTS = 12
_BUCKET_S = (60, 120, 300, 600, 900, 1200, 1800, 2700, 3600, 7200, 10_800, 14_400, 21_600, 43_200, 86_400)


@dataclass(frozen=True)
class MetricQuery:
    """One catalogue entry: a PromQL template with `$label` and `$service` placeholders, and its unit."""

    promql: str
    unit: str
    description: str = ""


@dataclass(frozen=True)
class MetricStats:
    min: float
    median: float
    max: float
    last: float


@dataclass(frozen=True)
class MetricSeries:
    """What query_metrics saw, in the display unit; the observation text is rendered from this."""

    service: str
    metric: str
    promql: str
    unit: str
    window: TimeWindow
    step_s: int
    points: tuple[tuple[datetime, float], ...]
    stats: MetricStats | None
    changes: tuple[ChangePoint, ...]
    series_count: int


class MetricsTools:
    """Prometheus metrics for the model, through a catalogue of PromQL templates."""

    def __init__(
        self,
        client: PrometheusConnect,
        catalogue: Mapping[str, MetricQuery | tuple[str, str, str]],
        *,
        service_label: str = "service",
        max_points: int = 288,
        services_ttl_s: float = 60.0,
        clock: Clock = utc_now,
    ) -> None:
        if not _LABEL_NAME.match(service_label):
            raise ValueError(f"invalid Prometheus label name {service_label!r}")
        if not catalogue:
            raise ValueError("the metric catalogue is empty")
        self.client = client
        self.catalogue = {k: v if isinstance(v, MetricQuery) else MetricQuery(*v) for k, v in catalogue.items()}
        self.service_label = service_label
        self.max_points = max_points
        self.clock = clock
        self._services = CachedNames(lambda: self._call(lambda: client.get_label_values(service_label)), services_ttl_s)

    def specs(self) -> list[ToolSpec]:
        """The query_metrics tool, its description listing this catalogue."""
        lines = [
            f"- {name} ({_display_unit(q.unit)[0] or 'count'}): {q.description}" for name, q in self.catalogue.items()
        ]
        text = _QUERY_METRICS_DOC.format(metrics="\n".join(lines), max_points=self.max_points)
        return [tool(self.query_metrics, description=text, choices={"metric": list(self.catalogue)})]

    def query_metrics(
        self,
        service: Annotated[str, "service name as labelled in Prometheus, e.g. order"],
        metric: Annotated[str, "a catalogue metric name"],
        range: Annotated[str, 'window ending now: "30m", "1h", "6h", "24h", "7d"; or ISO "start/end"'] = "1h",
    ) -> ToolResult | str:
        """Run query_metrics (the docstring shown to the model is _QUERY_METRICS_DOC)."""
        series = self.series(service, metric, range)
        if not series.points:
            return ToolResult("no_data", render_series(series))
        return render_series(series)

    def series(self, service: str, metric: str, range: str = "1h") -> MetricSeries:
        """The structured result (points, stats, change points) for the playbook and the observation."""
        query = self._catalogued(metric)
        name = self._known_service(service)
        window = window_from_args(range, "", "", self.clock())
        step_s = _step_for(window.seconds, self.max_points)
        window = TimeWindow(_align(window.start, step_s), window.end)
        promql = Template(query.promql).substitute(label=self.service_label, service=_promql_string(name)[1:-1])
        result = self._call(lambda: self.client.custom_query_range(promql, window.start, window.end, f"{step_s}s"))
        unit, factor = _display_unit(query.unit)
        points = _points_from_result(result, factor)
        times, values = [p[0] for p in points], [p[1] for p in points]
        stats = MetricStats(min(values), median(values), max(values), values[-1]) if values else None
        changes = tuple(self._pinned(c, promql, step_s, factor) for c in detect_changes(times, values))
        return MetricSeries(name, metric, promql, unit, window, step_s, points, stats, changes, len(result))

    def _pinned(self, change: ChangePoint, promql: str, step_s: int, factor: float) -> ChangePoint:
        """Re-read the step before a change at 1-minute resolution, so it reads 15:05 rather than 15:10."""
        if step_s <= 60:
            return change
        start = change.at - timedelta(seconds=step_s)
        try:
            result = self._call(lambda: self.client.custom_query_range(promql, start, change.at, "60s"))
        except ToolError:
            return change  # the coarse time is still right to within one step
        mid, up = (change.before + change.after) / 2, change.after > change.before
        first = next((t for t, v in _points_from_result(result, factor) if (v > mid) == up), change.at)
        return replace(change, at=first)

    def known_services(self) -> list[str]:
        """Label values of the service label, cached for a short while."""
        return self._services.get()

    def _catalogued(self, metric: str) -> MetricQuery:
        query = self.catalogue.get(metric.strip())
        if query is None:
            raise ToolError(f"unknown metric {metric!r}; the catalogue has: {', '.join(self.catalogue)}.")
        return query

    def _known_service(self, service: str) -> str:
        return choice_or_error(service, self.known_services(), "service", "Prometheus")

    def _call(self, request: Callable[[], Any]) -> Any:
        try:
            return request()
        except requests.RequestException as exc:
            # requests reports a read timeout after retries as a ConnectionError; tell the two apart by text.
            if isinstance(exc, requests.Timeout) or "timed out" in str(exc):
                raise ToolError(f"Prometheus at {self.client.url} did not answer in time: {exc}") from exc
            raise ToolError(f"Prometheus at {self.client.url} is unreachable: {exc}") from exc
        except PrometheusApiClientException as exc:
            raise ToolError(f"Prometheus rejected the request: {_backend_text(str(exc))}") from exc


_QUERY_METRICS_DOC = """\
Read one metric of one service from Prometheus over a time window.
Use it first to see WHEN a symptom started and how big it is (latency, errors, traffic, saturation); \
use query_logs for what failed and query_deploy_records for what changed.
Legal metrics:
{metrics}
service must be a service label value Prometheus holds (an unknown one gets the known list back). \
range: "30m", "1h", "6h", "24h", "7d" (any <n>m|h|d) or an ISO interval "2026-11-28T14:00Z/2026-11-28T16:00Z".
Returns ~10 lines, never the raw series: the PromQL run; min, median, max and last with units; \
change points as "change: HH:MM before -> after (xN)"; 12 averaged points (at most {max_points} are fetched)."""


def render_series(series: MetricSeries) -> str:
    """The compact observation: PromQL, stats with units, change points, a 12-point summary."""
    head = f"{series.metric} of {series.service}, {series.window.describe()}, step {duration_to_text(series.step_s)}"
    lines = [head, f"promql: {series.promql}"]
    if series.stats is None:
        lines.append("no data: the query returned no samples in this window for this service.")
        return "\n".join(lines)
    s, u = series.stats, series.unit
    stats = f"min {_value(s.min, u)} · median {_value(s.median, u)} · max {_value(s.max, u)}"
    lines.append(f"{stats} · last {_value(s.last, u)}")
    if series.series_count > 1:
        lines.append(f"note: the query returned {series.series_count} series; this is the first.")
    clock = series.window.clock_format
    lines += [_change_line(c, u, clock) for c in series.changes] or ["change: none detected"]
    lines.append(_summary_line(series.points, u, series.step_s, clock))
    return "\n".join(lines)


def _change_line(change: ChangePoint, unit: str, clock: str) -> str:
    ratio = change.ratio
    factor = f"x{ratio:.1f}" if ratio is not None and ratio >= 0.1 else f"x{ratio:.2g}" if ratio else "from 0"
    return f"change: {change.at:{clock}} {_value(change.before, unit)} -> {_value(change.after, unit)} ({factor})"


def _summary_line(points: Sequence[tuple[datetime, float]], unit: str, step_s: int, clock: str) -> str:
    """About SUMMARY_POINTS means over buckets of a round length (2h rather than 125m)."""
    wanted_s = math.ceil(len(points) / SUMMARY_POINTS) * step_s
    bucket_s = next((s for s in _BUCKET_S if s >= wanted_s and s % step_s == 0), wanted_s)
    buckets: dict[int, list[tuple[datetime, float]]] = {}
    for moment, value in points:
        buckets.setdefault(int(moment.timestamp()) // bucket_s, []).append((moment, value))
    cells = [f"{b[0][0]:{clock}} {_number(fmean(v for _, v in b))}" for b in buckets.values()]
    return f"series (mean per {duration_to_text(bucket_s)}, {unit or 'count'}): " + ", ".join(cells)


def _value(number: float, unit: str) -> str:
    text = _number(number)
    return f"{text}%" if unit == "%" else f"{text} {unit}".rstrip()


def _number(number: float) -> str:
    if abs(number) >= 100:
        return f"{number:,.0f}"
    if abs(number) >= 1:
        return f"{number:.1f}"
    return f"{number:.2g}"


def _display_unit(unit: str) -> tuple[str, float]:
    return _DISPLAY_UNITS.get(unit, (unit, 1.0))


def _points_from_result(result: Sequence[Mapping[str, Any]], factor: float) -> tuple[tuple[datetime, float], ...]:
    if not result:
        return ()
    points = []
    for ts, raw in result[0].get("values", []):
        value = float(raw)
        if math.isfinite(value):  # histogram_quantile gives NaN when there was no traffic
            points.append((datetime.fromtimestamp(float(ts), tz=UTC), value * factor))
    return tuple(points)


def _step_for(window_s: float, max_points: int) -> int:
    wanted = window_s / max(1, max_points)
    return next((s for s in _NICE_STEPS_S if s >= wanted), _NICE_STEPS_S[-1])


def _align(moment: datetime, step_s: int) -> datetime:
    """Start on a multiple of the step, so points fall on round times and repeated queries agree."""
    seconds = moment.timestamp()
    return datetime.fromtimestamp(seconds - seconds % step_s, tz=UTC)


def _promql_string(value: str) -> str:
    """A PromQL double-quoted string literal (JSON escaping is a valid subset)."""
    return json.dumps(value)


def _backend_text(message: str) -> str:
    match = re.search(r'"error":\s*"((?:[^"\\]|\\.)*)"', message)
    status = re.search(r"HTTP Status Code (\d+)", message)
    if match:
        return f"HTTP {status.group(1) if status else '?'}: {match.group(1)}"
    return message[:500]
