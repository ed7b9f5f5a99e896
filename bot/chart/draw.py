"""The chart as a PNG, drawn with matplotlib's Agg backend from a ChartSpec.

matplotlib is imported here, inside `render_png`, so only the worker that draws a chart pays for it: the CLI's
start-up, the intent gate and Slack's 3-second ack never load it. Drawn for a phone: one or two panels, thick
lines, large labels, times in the team's zone with UTC in the axis label, a legend only when a baseline is drawn.
A gap in the series stays a gap, a single point is drawn as a dot, and a flat line gets some room above and below.
"""

from __future__ import annotations

import io
import math
from datetime import datetime, timedelta, tzinfo
from itertools import pairwise
from statistics import median
from typing import Any

from bot.chart.spec import ChartSpec, Panel, chart_spec
from bot.engine.types import Trace
from bot.playbook.zones import is_utc

WIDTH_IN, PANEL_IN, DPI = 8.0, 3.6, 110
FONT = 13
COLOURS = {"onset": "#d62728", "said": "#1f77b4", "suspect": "#ff7f0e"}
STYLES = {"onset": "-", "said": ":", "suspect": "--"}
LINE = "#222222"
BASELINE = "#9a9a9a"


def trace_png(trace: Trace, zone: tzinfo) -> bytes | None:
    """The chart of a finished diagnosis as a PNG; None when no step holds a series to draw."""
    spec = chart_spec(trace)
    return render_png(spec, zone) if spec is not None else None


def render_png(spec: ChartSpec, zone: tzinfo) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import dates as mdates
    from matplotlib import pyplot as plt

    plt.rcParams.update({"font.size": FONT, "axes.titlesize": FONT + 1, "axes.titleweight": "bold"})
    count = len(spec.panels)
    figure, axes = plt.subplots(count, 1, figsize=(WIDTH_IN, PANEL_IN * count + 0.6), sharex=True, squeeze=False)
    try:
        for index, (ax, panel) in enumerate(zip(axes[:, 0], spec.panels, strict=True)):
            _draw_panel(ax, panel, zone)
            _draw_marks(ax, spec, zone, labelled=index == 0)
            ax.set_xlim(_local(spec.start, zone), _local(spec.end, zone))
        bottom = axes[-1, 0]
        bottom.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M", tz=zone))
        bottom.xaxis.set_major_locator(mdates.AutoDateLocator(tz=zone))
        bottom.set_xlabel(axis_label(spec.start, zone))
        figure.tight_layout()
        out = io.BytesIO()
        figure.savefig(out, format="png", dpi=DPI)
        return out.getvalue()
    finally:
        plt.close(figure)


def axis_label(moment: datetime, zone: tzinfo) -> str:
    """`time, CET (UTC+01:00), 2026-12-04`, or `time, UTC, 2026-12-04` for a UTC team."""
    local = moment.astimezone(zone)
    if is_utc(zone):
        return f"time, UTC, {local:%Y-%m-%d}"
    offset = local.utcoffset() or timedelta(0)
    sign, minutes = ("+" if offset >= timedelta(0) else "-"), abs(int(offset.total_seconds() // 60))
    return f"time, {local.tzname()} (UTC{sign}{minutes // 60:02d}:{minutes % 60:02d}), {local:%Y-%m-%d}"


def _draw_panel(ax: Any, panel: Panel, zone: tzinfo) -> None:
    ax.set_title(panel.title, loc="left")
    ax.grid(True, alpha=0.3)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    if panel.baseline:
        times, values = _with_gaps(panel.baseline, zone)
        ax.plot(times, values, color=BASELINE, linewidth=1.8, linestyle="--", label="same hours a day earlier")
    times, values = _with_gaps(panel.points, zone)
    ax.plot(times, values, color=LINE, linewidth=2.6, marker="o" if len(panel.points) == 1 else None, label="now")
    finite = [v for _, v in panel.points if math.isfinite(v)]
    if finite and max(finite) - min(finite) <= 1e-9 * max(abs(max(finite)), 1.0):
        level = finite[0]
        pad = abs(level) * 0.5 or 1.0
        ax.set_ylim(level - pad, level + pad)
    if panel.baseline:
        ax.legend(loc="upper left", fontsize=FONT - 2, frameon=False)


def _draw_marks(ax: Any, spec: ChartSpec, zone: tzinfo, *, labelled: bool) -> None:
    """A vertical line per mark; on the top panel its label, staggered, on the side of the line with more room."""
    span = (spec.end - spec.start).total_seconds() or 1.0
    for order, mark in enumerate(spec.marks):
        at = _local(mark.at, zone)
        ax.axvline(at, color=COLOURS[mark.kind], linestyle=STYLES[mark.kind], linewidth=2.0)
        if not labelled:
            continue
        right_side = (mark.at - spec.start).total_seconds() / span < 0.6
        ax.text(
            at,
            0.95 - 0.12 * (order % 4),
            f" {mark.label} {at:%H:%M} " if right_side else f" {at:%H:%M} {mark.label} ",
            transform=ax.get_xaxis_transform(),
            color=COLOURS[mark.kind],
            fontsize=FONT - 1,
            va="top",
            ha="left" if right_side else "right",
            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1.5},
        )


def _with_gaps(points: tuple[tuple[datetime, float], ...], zone: tzinfo) -> tuple[list[datetime], list[float]]:
    """The points in the team's zone, with a NaN wherever two neighbours sit over twice the usual spacing apart
    (matplotlib breaks the line there)."""
    if len(points) < 2:
        return [_local(at, zone) for at, _ in points], [v for _, v in points]
    spacing = median((b[0] - a[0]).total_seconds() for a, b in pairwise(points))
    times, values = [_local(points[0][0], zone)], [points[0][1]]
    for (before, _), (at, value) in pairwise(points):
        if (at - before).total_seconds() > 2 * spacing:
            times.append(_local(before + (at - before) / 2, zone))
            values.append(math.nan)
        times.append(_local(at, zone))
        values.append(value)
    return times, values


def _local(moment: datetime, zone: tzinfo) -> datetime:
    return moment.astimezone(zone)
