"""When a series stopped: did the service stop, or did the collection (Prometheus, its targets, a remote-write
or federation lag, a partition, a relabelling change)?

Two cheap checks, each one Prometheus query per window shared by every series that stopped in it:
- Prometheus' own `up` of the service's targets (`max by (<label>)`): still 1 after the stop means it is still
  scraped (the service serves no requests); 0 means Prometheus cannot scrape it (down, or unreachable from
  Prometheus); `up` that ends with the series means the scraping itself stopped; no `up` for the service at all
  (remote-write, federation, a push gateway) says nothing.
- the raw series of the same metric for every service (the last sample's `timestamp()`, `max by (<label>)`, of
  the selector the catalogue template reads): this service's own raw series still reported means collection
  works for it; every other service's ending at the same minute too means a gap in collection is likelier than
  every service stopping at once; the others still reporting means it is this service.
Neither conclusive: "unknown", never "the service stopped" as fact. Both queries share one lookback (Prometheus'
staleness), so ends are compared with each other, never with the catalogue query's own last point.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from tools.base import ToolError
from tools.metrics.series import GAP, SERVICE, TAIL_S, UNKNOWN, Collection, StopCause

if TYPE_CHECKING:
    from tools.analysis.changepoints import ChangePoint, Spike
    from tools.metrics.prometheus import PrometheusAPI

log = logging.getLogger(__name__)

__all__ = ["GAP", "SERVICE", "UNKNOWN", "Collection", "CollectionCheck", "raw_metric", "without_gap_tail"]

LOOK_BEFORE_S = 900  # the checks read from this long before the stop (or 5 steps) to the window's end: cheap
_METRIC_NAME_RX = re.compile(r"^[A-Za-z_:][A-Za-z0-9_:]*$")
_SELECTOR_RX = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*\{[^{}]*\$label\s*=\s*\"\$service\"")


@dataclass(frozen=True)
class _Others:
    """What the other services' raw series did: in words, and (when compared) how many ended with this one."""

    text: str
    ended: int | None = None
    total: int | None = None
    last_at: datetime | None = None  # this service's own last raw sample

    @property
    def share(self) -> float | None:
        """The share of the others that ended with it (None: not compared)."""
        return self.ended / self.total if self.ended is not None and self.total else None


def without_gap_tail(
    last_at: datetime, step_s: int, changes: Sequence[ChangePoint], spikes: Sequence[Spike], collection: Collection
) -> tuple[tuple[ChangePoint, ...], tuple[Spike, ...], Collection]:
    """Before a gap in collection, a rate() over the last samples falls as its window runs out of them: changes
    and spikes that start in the series' last TAIL_S (or 3 steps) are that artefact, not the service."""
    since = last_at - timedelta(seconds=max(TAIL_S, 3 * step_s))
    kept, spikes_kept = tuple(c for c in changes if c.at < since), tuple(s for s in spikes if s.start < since)
    left_out = len(changes) - len(kept) + len(spikes) - len(spikes_kept)
    return kept, spikes_kept, replace(collection, tail_left_out=left_out)


@dataclass(frozen=True)
class Ends:
    """Per service, the last step with a value, and that value, of one `by (<label>)` query over a window."""

    last: dict[str, tuple[datetime, float]]
    end: datetime
    step_s: int

    def reaches_end(self, service: str) -> bool:
        """Still reported at the window's end (within two steps and a minute)."""
        last = self.last.get(service)
        return last is not None and last[0] >= self.end - timedelta(seconds=2 * self.step_s + 60)


def raw_metric(promql_template: str) -> str | None:
    """The metric name of the first selector that carries `$label="$service"` in a catalogue template."""
    match = _SELECTOR_RX.search(promql_template)
    return match.group(1) if match else None


class CollectionCheck:
    """Cheap checks on whether the collection stopped with a series; results cached for `ttl_s` per query."""

    def __init__(
        self,
        client: PrometheusAPI,
        service_label: str,
        *,
        up_metric: str = "up",
        gap_share: float = 0.8,
        ttl_s: float = 120.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if up_metric and not _METRIC_NAME_RX.match(up_metric):
            raise ValueError(f"invalid Prometheus metric name {up_metric!r} for the scrape-health check")
        self.client = client
        self.label = service_label
        self.up_metric = up_metric
        self.gap_share = gap_share
        self.ttl_s = ttl_s
        self._monotonic = monotonic
        self._cache: dict[tuple[str, int], tuple[float, datetime, datetime, Ends | None]] = {}

    def check(
        self, service: str, template: str, stop_at: datetime, start: datetime, end: datetime, step_s: int
    ) -> Collection:
        """Which stopped: the service, the collection, or unknown (a check that did not run says so)."""
        metric = raw_metric(template)
        start = max(start, _aligned(stop_at - timedelta(seconds=max(LOOK_BEFORE_S, 5 * step_s)), step_s))
        raw = (
            self._ends(f'max by ({self.label}) (timestamp({metric}{{{self.label}!=""}}))', start, end, step_s)
            if metric
            else None
        )
        up = (
            self._ends(f'max by ({self.label}) ({self.up_metric}{{{self.label}!=""}})', start, end, step_s)
            if self.up_metric
            else None
        )
        others = _others_seen(raw, service, metric, step_s)
        up_text, up_cause = _up_text(up, service, raw, stop_at, step_s, self.up_metric)
        share = others.share
        cause: StopCause = UNKNOWN  # some others ended with it too: a partial gap, or several stops
        if share is not None and share >= self.gap_share:
            cause = GAP
        elif share == 0 or up_cause == SERVICE or (raw is not None and raw.reaches_end(service)):
            cause = SERVICE
        return Collection(cause, up_text, others.text, 0, others.ended, others.total, others.last_at)

    def _ends(self, promql: str, start: datetime, end: datetime, step_s: int) -> Ends | None:
        """The query's per-service ends over [start, end], from the cache when a recent fetch covers it."""
        key = (promql, step_s)
        cached = self._cache.get(key)
        if (
            cached is not None
            and self._monotonic() - cached[0] <= self.ttl_s
            and cached[1] <= start
            and cached[2] >= end - timedelta(seconds=self.ttl_s)
        ):
            return cached[3]
        try:
            result = self.client.query_range(promql, start, end, f"{step_s}s")
        except ToolError as exc:
            log.info("collection check not run: %s", exc)
            ends = None
        else:
            ends = Ends(_last_points(result, self.label), end, step_s)
        self._cache[key] = (self._monotonic(), start, end, ends)
        return ends


def _aligned(moment: datetime, step_s: int) -> datetime:
    """On a multiple of the step, so the series that stopped in one gap share one cached query."""
    seconds = moment.timestamp()
    return datetime.fromtimestamp(seconds - seconds % step_s, tz=UTC)


def _last_points(result: Sequence[Mapping[str, Any]], label: str) -> dict[str, tuple[datetime, float]]:
    last = {}
    for series in result:
        name, values = series.get("metric", {}).get(label), series.get("values") or []
        if name and values:
            ts, raw = values[-1]
            last[str(name)] = (datetime.fromtimestamp(float(ts), tz=UTC), float(raw))
    return last


def _others_seen(raw: Ends | None, service: str, metric: str | None, step_s: int) -> _Others:
    """What the other services' raw series did, and how many of them ended with this one (None: not compared)."""
    if metric is None:
        return _Others("not checked (the query names no metric selector with the service label)")
    if raw is None:
        return _Others(f"not checked (the {metric} query failed)")
    own = raw.last.get(service)
    others = {name: last for name, last in raw.last.items() if name != service}
    if own is None or raw.reaches_end(service):
        return _Others(_still_text(raw, others, metric, own is None))
    if not others:
        return _Others(f"not checked (no other service has {metric})")
    tolerance = max(step_s, 120)  # the values are the last samples' own timestamps (seconds)
    ended = [name for name, (_, ts) in others.items() if abs(ts - own[1]) <= tolerance]
    last_at = datetime.fromtimestamp(own[1], tz=UTC)
    last = f"its last sample {last_at:%H:%M}"
    if len(ended) == len(others):
        return _Others(
            f"all {len(others)} others' {metric} ended at the same minute ({last})", len(ended), len(others), last_at
        )
    still = sum(raw.reaches_end(name) for name in others)
    return _Others(
        f"{len(ended)} of {len(others)} others' {metric} ended at the same minute ({last}), {still} still report it",
        len(ended),
        len(others),
        last_at,
    )


def _still_text(raw: Ends, others: Mapping[str, Any], metric: str, missing: bool) -> str:
    still = sum(raw.reaches_end(name) for name in others)
    if missing:
        return f"not compared (its own {metric} is not found); {still} of {len(others)} others report {metric}"
    return f"its own {metric} is still collected (so is {still} of {len(others)} others'): no requests were measured"


def _up_text(
    up: Ends | None, service: str, raw: Ends | None, stop_at: datetime, step_s: int, up_metric: str
) -> tuple[str, str]:
    """`up` in words, and what it points at: SERVICE (still scraped, or not reachable) or UNKNOWN."""
    if not up_metric:
        return "not checked (no up metric configured)", UNKNOWN
    if up is None:
        return f"not checked (the {up_metric} query failed)", UNKNOWN
    last = up.last.get(service)
    if last is None:
        return (
            f"not checked (no {up_metric} series for it: its metrics may come by remote-write or federation)",
            UNKNOWN,
        )
    if up.reaches_end(service):
        if last[1] == 0:
            return (f"{up_metric} == 0: Prometheus cannot scrape it (down, or unreachable from Prometheus)", SERVICE)
        return f"{up_metric} == 1: Prometheus still scrapes it", SERVICE
    own = raw.last.get(service) if raw is not None else None
    near = own[0] if own is not None else stop_at
    if abs(last[0] - near) <= timedelta(seconds=max(2 * step_s, 600)):
        return f"{up_metric} ended with it: Prometheus stopped scraping it (stopped, or lost the target)", UNKNOWN
    return f"{up_metric} ended at {last[0]:%H:%M}", UNKNOWN
