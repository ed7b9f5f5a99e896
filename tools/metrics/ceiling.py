"""A quantile read from a histogram cannot exceed the histogram's highest finite bucket.

When the quantile's rank falls in the `+Inf` bucket, `histogram_quantile` returns the upper bound of the highest
finite bucket: a histogram whose top bucket is 1 s reads "1,000 ms" however slow the service is, and a series
pinned there looks flat ("no change") while the real latency climbs. So a reading at that bound is a floor, said as
such (`p99 >= 1,000 ms`), and `opsbot doctor` names the templates whose histograms put a material share of the
observations above it. Both find the bound from the `le` values of the `_bucket` series the query reads.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from tools.base import ToolError
from tools.metrics.series import Ceiling

if TYPE_CHECKING:
    from tools.metrics.prometheus import PrometheusAPI

_QUANTILE_RX = re.compile(r"histogram_quantile\s*\(\s*(?P<q>[0-9.eE+-]+)\s*,")
_BUCKET_RX = re.compile(r"(?P<metric>[A-Za-z_:][A-Za-z0-9_:]*_bucket)\s*(?P<matchers>\{[^{}]*\})?")
MATERIAL_SHARE = 0.01  # doctor: at least this share of observations above the top finite bucket is worth a warning


@dataclass(frozen=True)
class HistogramRead:
    """What a histogram_quantile template reads: its quantile and the `_bucket` selector it reads it from."""

    quantile: float
    metric: str
    matchers: str  # "" or `{...}` as the query writes it

    @property
    def name(self) -> str:
        """ "p99" for 0.99, "p99.9" for 0.999."""
        return f"p{self.quantile * 100:g}"

    def selector(self, extra: str = "") -> str:
        """The bucket selector, with one more matcher when given."""
        inner = self.matchers.strip()[1:-1].strip() if self.matchers else ""
        return f"{self.metric}{{{', '.join(m for m in (inner, extra) if m)}}}"


def histogram_read(promql: str) -> HistogramRead | None:
    """The quantile and bucket selector of a rendered histogram_quantile query; None for any other query."""
    quantile = _QUANTILE_RX.search(promql)
    bucket = _BUCKET_RX.search(promql, quantile.end()) if quantile else None
    if quantile is None or bucket is None:
        return None
    try:
        q = float(quantile.group("q"))
    except ValueError:
        return None
    return HistogramRead(q, bucket.group("metric"), bucket.group("matchers") or "")


def top_finite_bucket(client: PrometheusAPI, read: HistogramRead, since: datetime) -> tuple[float, str] | None:
    """The highest finite `le` of the series the query reads, as a number and as written; None without one."""
    bounds = []
    for written in client.label_values("le", match=read.selector(), since=since):
        try:
            bound = float(written)
        except ValueError:
            continue
        if math.isfinite(bound):
            bounds.append((bound, written))
    return max(bounds) if bounds else None


def bucket_text(written: str, unit: str) -> str:
    """`1 s` for le="1.0" in a seconds histogram, `250 ms` for le="250" in a milliseconds one."""
    return f"{float(written):g} {unit}"


def ceiling_of(
    client: PrometheusAPI, promql: str, values: Sequence[float], unit: str, factor: float, since: datetime
) -> Ceiling | None:
    """The ceiling of a histogram quantile series when some of its `values` (display unit: the bound times
    `factor`) read the top finite bucket; None otherwise, or when the bound cannot be read (the reading stands)."""
    read = histogram_read(promql) if values else None
    if read is None or not _round(max(values) / factor):
        return None  # an interpolated quantile is never a bucket's round bound: no lookup for most series
    try:
        top = top_finite_bucket(client, read, since)
    except ToolError:
        return None
    if top is None:
        return None
    shown = top[0] * factor
    if not any(math.isclose(value, shown, rel_tol=1e-9) for value in values):
        return None
    return Ceiling(read.name, bucket_text(top[1], unit), shown)


def share_above(client: PrometheusAPI, read: HistogramRead, bound: str, start: datetime, end: datetime) -> float:
    """The share of the observations between start and end that lie above the bucket `le=bound` (0 when none)."""
    span_s = max(60, int((end - start).total_seconds()))
    every, under = (f"sum(increase({read.selector(matcher)}[{span_s}s]))" for matcher in _le("+Inf", bound))
    result = client.query_range(f"1 - {under} / {every}", end, end, f"{span_s}s")
    values = [float(v) for series in result for _, v in series.get("values", [])]
    return next((v for v in values if math.isfinite(v)), 0.0)


def _le(*bounds: str) -> list[str]:
    return [f'le="{bound}"' for bound in bounds]


def ceiling_warning(client: PrometheusAPI, promql: str, unit: str, start: datetime, end: datetime) -> str:
    """For doctor: "" unless a material share of the histogram's observations lie above its top finite bucket;
    else that share, the metric and the bound, what it does to the quantile, and the fix."""
    read = histogram_read(promql)
    top = top_finite_bucket(client, read, start) if read else None
    if read is None or top is None:
        return ""
    share = share_above(client, read, top[1], start, end)
    if share < MATERIAL_SHARE:
        return ""
    bucket = bucket_text(top[1], unit)
    effect = (
        f"its {read.name} reads {bucket} however slow the service is"
        if share > 1 - read.quantile
        else f"a {read.name} above {bucket} cannot show"
    )
    return (
        f'{share:.1%} of {read.metric} observations lie above its top finite bucket le="{top[1]}" ({bucket}), so '
        f"{effect}: add buckets above {bucket} to the histogram (or read a summary's quantile in this template)"
    )


def _round(value: float) -> bool:
    """Whether a value is written in at most 4 significant digits, as bucket bounds are (1, 2.5, 0.005)."""
    return math.isfinite(value) and math.isclose(value, float(f"{value:.4g}"), rel_tol=1e-9)
