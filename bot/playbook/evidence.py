"""The playbook's evidence, read from the tools' typed data (tools/results.py finds it on a step): change points,
spikes, stops and collection gaps of a metric series, log signatures, the newest log lines, deploys.

Numbers stay numbers: a ratio of 0.653 is judged as 0.653 (the text prints it "x0.7"), and a time is the instant
the detector found, not a clock read back against the window. Each fact is worded with the renderer beside its type
(value_text, factor_text, entry_line, record_line), so an answer quotes exactly what the tool showed the model.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from bot.playbook.moments import moment_from_question as moment_from_question  # read here by the playbook
from tools.deploys.records import DeployRecord
from tools.logs.render import entry_line, seconds_clock
from tools.logs.summary import Signature
from tools.metrics.series import GAP, UNKNOWN, MetricSeries, factor_text, value_text
from tools.results import Carrier, deploys_of, logs_of, new_signatures_of, signatures_of

NO_SAMPLES = "no samples"  # how a stop's level after it reads: the series had samples, then none
EXAMPLE_CHARS = 200  # a signature's example, as quoted in an answer


@dataclass(frozen=True)
class ChangePoint:
    """One change of a metric series, in its display unit: a level shift, a spike (before = the level it rose
    from, after = the peak), or a stop (after None: no samples since)."""

    at: datetime
    before: float
    after: float | None
    unit: str
    ratio: float  # after / before as found (a spike's peak / before); inf from 0, 0.0 for a stop
    spike: bool = False
    cause: str = ""  # of a stop: what stopped ("the service", "unknown"); "" unsaid

    @property
    def strength(self) -> float:
        """How big the shift is, whichever direction: |log(ratio)|."""
        if self.ratio < 0:
            return 0.0
        # a fall to nothing (or a series that stopped) is as big as a rise from nothing
        return 50.0 if math.isinf(self.ratio) or self.ratio == 0 else abs(math.log(self.ratio))

    @property
    def before_text(self) -> str:
        """The level before, as the tool printed it ("212 ms")."""
        return value_text(self.before, self.unit)

    @property
    def after_text(self) -> str:
        """The level after (a spike's peak), as the tool printed it; NO_SAMPLES after a stop."""
        return NO_SAMPLES if self.after is None else value_text(self.after, self.unit)

    @property
    def factor(self) -> str:
        """The factor as the tool printed it ("x5.6"); "" where it printed none ("from 0", "to 0", a stop)."""
        if self.after is None or not self.before:
            return ""
        printed = factor_text(self.ratio)
        return printed if printed.startswith("x") else ""


@dataclass(frozen=True)
class Recovery:
    """Where a spike came back to, as the tool printed it ("back to ~243 ms by 16:16")."""

    level: str  # "~243 ms"
    at: datetime


@dataclass(frozen=True)
class Gap:
    """A series that stopped when the collection did (`cause: collection gap`): not a change of the service."""

    at: datetime  # the last raw sample before the gap (the series' own last point when not compared)
    services: str  # whose series ended with it: "every service", or "4 of 5 services"


@dataclass(frozen=True)
class LogSignature:
    count: int
    text: str  # the clustered template ("... timed out after <n>ms")
    example: str = ""  # one concrete message of the cluster, as logged

    @property
    def quoted(self) -> str:
        """The concrete example when there is one (it can be checked against the logs), else the template."""
        return self.example or self.text


def change_points_of(series: MetricSeries) -> list[ChangePoint]:
    """The series' level shifts, oldest first."""
    points = [ChangePoint(c.at, c.before, c.after, series.unit, _ratio(c.before, c.after)) for c in series.changes]
    return sorted(points, key=lambda p: p.at)


def stops_of(series: MetricSeries) -> list[ChangePoint]:
    """A series that had samples, then none to the window's end, as a change to no samples (ratio 0): the biggest
    change a series can show, never "no change". A stop with the collection is no change of the service (see
    gap_of); one of unknown cause still counts, so it is never dropped unchecked."""
    stop, collection = series.stop, series.collection
    if stop is None or (collection is not None and collection.cause == GAP):
        return []
    cause = collection.cause if collection is not None else UNKNOWN
    return [ChangePoint(stop.last_at, stop.before, None, series.unit, 0.0, cause=cause)]


def gap_of(series: MetricSeries) -> Gap | None:
    """The stop of a series whose cause is a gap in collection, with whose series ended with it."""
    stop, collection = series.stop, series.collection
    if stop is None or collection is None or collection.cause != GAP:
        return None
    return Gap(collection.last_sample_at or stop.last_at, collection.ended_with)


def spikes_of(series: MetricSeries) -> list[tuple[ChangePoint, Recovery]]:
    """Each spike (a peak that came and went) as a ChangePoint with spike=True (at = when it started, before = the
    level it rose from, after = the peak) and where it came back to; oldest first."""
    found = [
        (
            ChangePoint(s.start, s.before, s.peak, series.unit, _ratio(s.before, s.peak), spike=True),
            Recovery(f"~{value_text(s.after, series.unit)}", s.back_at),
        )
        for s in series.spikes
    ]
    return sorted(found, key=lambda pair: pair[0].at)


def _ratio(before: float, after: float) -> float:
    if before == 0:
        return math.inf if after > 0 else 1.0
    return after / before


def signatures_in(carrier: Carrier, level: str = "ERROR") -> list[LogSignature]:
    """query_logs' top signatures at ERROR/FATAL (with level="WARN", at WARN), biggest first."""
    return [_signature(s) for s in signatures_of(carrier, level)]


def new_signatures_in(carrier: Carrier) -> list[LogSignature]:
    """The signatures query_logs(onset=...) found after the onset and not before it, at any level."""
    return [_signature(s) for s in new_signatures_of(carrier)]


def _signature(found: Signature) -> LogSignature:
    return LogSignature(found.count, found.template, found.example.message[:EXAMPLE_CHARS])


def log_lines_in(carrier: Carrier) -> list[str]:
    """query_logs' newest lines as its text lists them, oldest first."""
    summary = logs_of(carrier)
    if summary is None:
        return []
    clock, every = seconds_clock(summary.window), summary.service is None
    return [entry_line(line.entry, clock, service=every, trace=False) for line in reversed(summary.newest)]


def deploys_in(carrier: Carrier, service: str) -> list[DeployRecord]:
    """query_deploy_records' deploys of `service`, oldest first."""
    found = deploys_of(carrier)
    records = {(r.version, r.at): r for r in (found.records if found else ()) if r.service == service}
    return sorted(records.values(), key=lambda r: r.at)


def service_from_text(text: str, services: Iterable[str]) -> str | None:
    """The known service the question names, preferring the longest match ("order-db" over "order").

    Word edges are ASCII ones: "order服务" and "看下payment的p99" name order and payment, since Chinese
    characters sit right next to a name with no space."""
    lowered = text.lower()
    for name in sorted(set(services), key=len, reverse=True):
        if re.search(rf"(?<![a-z0-9_-]){re.escape(name.lower())}(?:e?s)?(?![a-z0-9_-])", lowered):  # "payments"
            return name
    return None
