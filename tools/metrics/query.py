"""query_metrics: one catalogued metric of one service over a window, summarised for the model.

User text never reaches PromQL unchecked: the metric must be a catalogue name, and the service must be
one of the label values Prometheus actually holds (and is escaped as a PromQL string on top of that).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from statistics import median
from typing import TYPE_CHECKING

from tools.base import ToolError, ToolResult, ToolSpec, tool
from tools.choices import CachedNames, choice_or_error
from tools.metrics.breakdown import RELATED_ROLES, RESOURCE_OF_ROLE, grouped_by, parts_from_result, read_resources
from tools.metrics.catalogue import ServiceCatalogue, catalogue_problems, render
from tools.metrics.ceiling import ceiling_of
from tools.metrics.chartline import CHART_POINTS, ChartLine, bucket_length
from tools.metrics.collection import GAP, CollectionCheck, without_gap_tail
from tools.metrics.descriptions import LIST_SERVICES_DOC, QUERY_METRICS_DOC
from tools.metrics.pinning import pinned_change, pinned_spike
from tools.metrics.reading import (
    align,
    display_unit,
    points_from_result,
    promql_string,
    read_counts,
    step_for,
)
from tools.metrics.series import (
    MetricQuery,
    MetricSeries,
    MetricStats,
    ServiceList,
    render_series,
    render_services,
    series_summary,
)
from tools.metrics.views import MetricBreakdown, RelatedRead, ResourceUse, render_breakdown
from tools.timerange import Clock, TimeWindow, utc_now, window_from_args

if TYPE_CHECKING:  # the detectors load with the first series analysed, the client (urllib3) with the first query
    from datetime import datetime

    from tools.metrics.prometheus import PrometheusAPI

log = logging.getLogger(__name__)

__all__ = [
    "MetricQuery",
    "MetricSeries",
    "MetricStats",
    "MetricsTools",
    "ServiceCatalogue",
    "ServiceList",
    "render_series",
    "render_services",
]

_LABEL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
BREAKDOWN_LABELS = {"pod": "pod", "version": "version", "peer": "peer"}  # by= value -> the Prometheus label


class MetricsTools:
    """Prometheus metrics for the model, through a catalogue of PromQL templates."""

    def __init__(
        self,
        client: PrometheusAPI,
        catalogue: Mapping[str, MetricQuery | tuple[str, str, str]],
        *,
        service_label: str = "service",
        max_points: int = 288,
        services_ttl_s: float = 60.0,
        clock: Clock = utc_now,
        topology: Mapping[str, Sequence[str]] | None = None,
        max_services: int = 200,
        up_metric: str = "up",
        gap_share: float = 0.8,
        services: Mapping[str, ServiceCatalogue] | None = None,
        breakdown_labels: Mapping[str, str] | None = None,
        roles: Mapping[str, str] | None = None,
    ) -> None:
        self.services = dict(services or {})
        self.breakdown_labels = dict(breakdown_labels or BREAKDOWN_LABELS)
        self.roles = dict(roles or {})  # metric name -> its role (latency, errors, client_errors, memory ...)
        own_labels = (own.label for own in self.services.values() if own.label)
        for label in {service_label, *own_labels, *self.breakdown_labels.values()}:
            if not _LABEL_NAME.match(label):
                raise ValueError(f"invalid Prometheus label name {label!r}")
        if not catalogue:
            raise ValueError("the metric catalogue is empty")
        self.client = client
        self.catalogue = {k: v if isinstance(v, MetricQuery) else MetricQuery(*v) for k, v in catalogue.items()}
        # A broken template is that metric's error when queried, never a failure to start (doctor lists them).
        self.problems = catalogue_problems(self.catalogue, self.services)
        self.service_label = service_label
        self.max_points = max_points
        self.clock = clock
        self.topology = {name: list(downstream) for name, downstream in (topology or {}).items()}
        self.max_services = max_services
        self._ttl_s = services_ttl_s
        self._names: dict[str, CachedNames] = {}
        self._up_metric, self._gap_share = up_metric, gap_share
        self._collection: dict[str, CollectionCheck] = {}
        self._collection_for(service_label)  # a bad up_metric is refused here, at start-up

    def specs(self) -> list[ToolSpec]:
        """query_metrics (its description lists this catalogue) and list_services."""
        units = {name: display_unit(q.unit)[0] or "count" for name, q in self.catalogue.items()}
        entries = [f"  {name} ({units[name]}): {q.description}" for name, q in self.catalogue.items()]
        text = QUERY_METRICS_DOC.format(metrics="\n".join(entries), max_points=self.max_points)
        listing = LIST_SERVICES_DOC.format(max_services=self.max_services)
        choices = {"metric": list(self.catalogue), "by": ["", *self.breakdown_labels]}
        return [
            tool(self.query_metrics, description=text, choices=choices),
            tool(self.list_services, description=listing),
        ]

    def list_services(self) -> ToolResult:
        """Run list_services (the docstring shown to the model is LIST_SERVICES_DOC)."""
        services = tuple(self.known_services())
        shown = services[: self.max_services]
        downstream = {name: tuple(self.topology[name]) for name in shown if self.topology.get(name)}
        own = {name: c.label for name, c in self.services.items() if c.label not in ("", self.service_label)}
        listed = ServiceList(self.service_label, services, len(shown), downstream, own)
        if not services:
            return ToolResult("no_data", f"Prometheus holds no values of the label {self.service_label!r}.", listed)
        return ToolResult("ok", render_services(listed), listed)

    def query_metrics(
        self,
        service: str,
        metric: str,
        range: str = "1h",
        by: str = "",
    ) -> ToolResult:
        """Run query_metrics (the docstring shown to the model is QUERY_METRICS_DOC)."""
        if by.strip():
            parts = self.breakdown(service, metric, range, by.strip())
            return ToolResult("ok" if parts.parts else "no_data", render_breakdown(parts), parts)
        series = self.series(service, metric, range)
        return ToolResult("ok" if series.summary.samples else "no_data", render_series(series), series)

    def breakdown(self, service: str, metric: str, range: str, by: str) -> MetricBreakdown:
        """The metric per pod, version or peer, the most moved first: the data of query_metrics(by=...)."""
        grouping = self.breakdown_labels.get(by)
        if grouping is None:
            raise ToolError(f"unknown breakdown {by!r}; by may be: {', '.join(self.breakdown_labels)}")
        name = self._known_service(service)
        label, query = self.query_for(name, metric.strip())
        window, step_s = self._window(range)
        promql = grouped_by(render(query.promql, label=label, service=promql_string(name)[1:-1]), grouping)
        unit, factor = display_unit(query.unit)
        result = self.client.query_range(promql, window.start, window.end, f"{step_s}s")
        parts = parts_from_result(result, grouping, factor, window)
        return MetricBreakdown(name, metric.strip(), by, grouping, promql, unit, window, step_s, parts)

    def _window(self, range: str) -> tuple[TimeWindow, int]:
        window = window_from_args(range, "", "", self.clock())
        step_s = step_for(window.seconds, self.max_points)
        return TimeWindow(align(window.start, step_s), window.end), step_s

    def series(self, service: str, metric: str, range: str = "1h") -> MetricSeries:
        """The series read and analysed (stats, change points, spikes, trends, a stop): the data of query_metrics."""
        from tools.analysis.changepoints import detect_changes, detect_spikes, detect_stop
        from tools.analysis.trends import detect_sawtooth, detect_trends

        name = self._known_service(service)
        label, query = self.query_for(name, metric.strip())
        window, step_s = self._window(range)
        promql = render(query.promql, label=label, service=promql_string(name)[1:-1])
        log.debug("query_range %s step=%ss %s", promql, step_s, window.describe())
        result = self.client.query_range(promql, window.start, window.end, f"{step_s}s")
        unit, factor = display_unit(query.unit)
        points = points_from_result(result, factor)
        times, values = [p[0] for p in points], [p[1] for p in points]
        stats = MetricStats(min(values), median(values), max(values), values[-1]) if values else None
        counted = render(query.counts, label=label, service=promql_string(name)[1:-1])  # low traffic: judged on counts
        counts = read_counts(self.client, counted, query.unit, window, step_s, times)
        found = detect_changes(times, values, counts=counts)
        changes = tuple(pinned_change(self.client, c, promql, step_s, factor) for c in found)
        spikes_found = detect_spikes(times, values, counts=counts)
        spikes = tuple(pinned_spike(self.client, s, promql, step_s, factor) for s in spikes_found)
        trends = tuple(detect_trends(times, values, counts=counts))
        sawtooth = detect_sawtooth(times, values, counts=counts)
        stop = detect_stop(times, values, window.end, step_s)
        collection = None
        if stop is not None:
            check = self._collection_for(label).check  # it finds the raw metric by `$label="$service"`
            template = render(query.promql, label="$label", service="$service")
            collection = check(name, template, stop.last_at, window.start, window.end, step_s)
            if collection.cause == GAP:
                changes, spikes, collection = without_gap_tail(stop.last_at, step_s, changes, spikes, collection)
        return MetricSeries(
            name,
            metric,
            promql,
            unit,
            window,
            step_s,
            series_summary(points, step_s),
            stats,
            changes,
            len(result),
            spikes,
            trends,
            sawtooth,
            stop,
            collection,
            ChartLine.of(points, bucket_length(points, step_s, CHART_POINTS)),  # a curve on a phone
            ceiling_of(self.client, promql, values, query.unit, factor, window.start),  # p99 >= the top bucket
            self._resources(metric, promql, label, name, window.end, factor) if values else None,
            self._related(metric, name, window, step_s),
        )

    def _resources(
        self, metric: str, promql: str, label: str, name: str, end: datetime, factor: float
    ) -> ResourceUse | None:
        """Beside cpu or memory: the pod closest to its limit, with its request (kube-state-metrics)."""
        resource = RESOURCE_OF_ROLE.get(self.roles.get(metric.strip(), ""))
        if resource is None:
            return None
        selector = f"{label}={promql_string(name)}"
        pod = self.breakdown_labels["pod"]
        return read_resources(self.client, promql, resource, pod, selector, end, factor)

    def _related(self, metric: str, name: str, window: TimeWindow, step_s: int) -> tuple[RelatedRead, ...]:
        """Beside the 5xx errors: the 4xx and 429 shares, each with its first change (one query and its counts'
        each: the playbook reads every error series, so no pinning, spikes or trends here)."""
        wanted = RELATED_ROLES.get(self.roles.get(metric.strip(), ""), ())
        others = [(m, r) for m, r in self.roles.items() if r in wanted and m != metric.strip()]
        return tuple(read for other, role in others if (read := self._related_read(other, role, name, window, step_s)))

    def _related_read(self, metric: str, role: str, name: str, window: TimeWindow, step_s: int) -> RelatedRead | None:
        from tools.analysis.changepoints import detect_changes

        try:
            label, query = self.query_for(name, metric)
            promql = render(query.promql, label=label, service=promql_string(name)[1:-1])
            unit, factor = display_unit(query.unit)
            points = points_from_result(self.client.query_range(promql, window.start, window.end, f"{step_s}s"), factor)
            times, values = [t for t, _ in points], [v for _, v in points]
            counted = render(query.counts, label=label, service=promql_string(name)[1:-1])
            counts = read_counts(self.client, counted, query.unit, window, step_s, times)
        except ToolError:
            return None  # a related series that cannot be read never fails the one asked for
        if not values:
            return None
        changes = detect_changes(times, values, counts=counts)
        return RelatedRead(metric, role, unit, median(values), values[-1], changes[0] if changes else None)

    def known_services(self) -> list[str]:
        """Values of the service label, with each service that has its own label and holds a value of it; cached
        for a short while."""
        known = set(self._label_values(self.service_label))
        for service, own in self.services.items():
            if own.label and own.label != self.service_label and service in self._label_values(own.label):
                known.add(service)
        return sorted(known)

    def query_for(self, service: str, metric: str) -> tuple[str, MetricQuery]:
        """The service label and template a service's metric is read with (its own, else the catalogue's); a
        ToolError when the template is broken or the service does not measure it."""
        own = self.services.get(service, ServiceCatalogue())
        problems = self.problems.get(f"{service}/{metric}") if metric in own.metrics else self.problems.get(metric)
        if problems:
            raise ToolError(
                f"metric {metric!r} cannot be queried for {service}: its PromQL template is broken ({problems[0]}); "
                "`opsbot doctor` lists every problem of the catalogue"
            )
        if metric in own.not_measured:
            raise ToolError(f"unknown metric for {service}: {metric!r} is not measured for it (its catalogue says so)")
        return own.label or self.service_label, own.metrics.get(metric) or self._catalogued(metric)

    def _label_values(self, label: str) -> list[str]:
        if label not in self._names:
            self._names[label] = CachedNames(lambda: self.client.label_values(label), self._ttl_s)
        return self._names[label].get()

    def _collection_for(self, label: str) -> CollectionCheck:
        if label not in self._collection:
            self._collection[label] = CollectionCheck(
                self.client, label, up_metric=self._up_metric, gap_share=self._gap_share
            )
        return self._collection[label]

    def _catalogued(self, metric: str) -> MetricQuery:
        query = self.catalogue.get(metric.strip())
        if query is None:
            raise ToolError(f"unknown metric {metric!r}; the catalogue has: {', '.join(self.catalogue)}.")
        return query

    def _known_service(self, service: str) -> str:
        return choice_or_error(service, self.known_services(), "service", "Prometheus")
