"""find_changes: every change around a symptom's onset, ranked by the evidence that ties it to the symptom.

It composes the other tools' sources (Prometheus series, deploy records and diffs, logs): the onset comes from
the asked service's metrics (not from the user's words), the lookback follows the symptom's shape (minutes for
a step, hours when memory or restarts changed), and it looks at the asked service and every service within two
hops of it in the topology, both directions: deploys, traffic surges in the other callers of a dependency that
degraded, and log signatures that appear after the onset and not before it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta

from tools.analysis import ranking
from tools.analysis.events import (
    EventReader,
    OpsEvent,
    event_reasons,
    event_title,
    in_reach,
    naming_line,
    read_events,
)
from tools.analysis.onsets import slow_changes, step_changes
from tools.analysis.ranking import ChangeRanking, NewSignature, Onset, Reason, Suspect, render_ranking
from tools.base import ToolError, ToolResult, ToolSpec, tool
from tools.deploys.query import DeploySource
from tools.deploys.records import DeployRecord
from tools.events.deploys import event_from_record
from tools.latechanges import diff_read, late_suspects
from tools.logs.model import LogQuery, LogSource
from tools.logs.shape.cluster import cluster_signatures
from tools.metrics.query import MetricsTools
from tools.metrics.series import MetricSeries
from tools.timerange import TimeWindow, instant_from_text, iso_z, utc_now

AROUND = timedelta(hours=2)
MAX_SUSPECTS = 6
SIGNATURE_SERVICES = 8  # the nearest services whose logs are compared before and after the onset
GOLDEN = ("latency", "errors", "traffic")
# When the golden signals are flat, the onset is the first change in these: an OOM, a crash loop, a saturated pool
# or CPU can be the incident before any request is slower.
OTHER_SYMPTOMS = ("memory", "restarts", "cpu", "client_errors", "rate_limited")  # 4xx and 429: the 5xx may stay flat

_DOC = """\
Every change around a symptom's onset, suspects ranked: the onset in the service's metrics (the golden signals, \
else memory, restarts, cpu, 4xx, 429, saturation; it says which, and when the user's time is off), deploys of the \
service and of services within two hops, operational events with their actor (DDL and manual database sessions, job \
starts, failovers, campaign launches in the logs; drains, evictions, restarts, rescales in Kubernetes; rollbacks \
and failed rollouts), traffic surges in other callers of a degraded dependency, log signatures new after the onset; \
also deploys of the 30 h before whose change can wait to bite (a cap, a pool, a rate limit, a log level, a retry).
Use it first, for the service asked about: it finds the onset itself. Then read only what it leaves open.
Legal values:
- service: the service the user asks about
- around: the time the user named, ISO 8601 UTC ("2026-11-28T15:05Z") or HH:MM; empty = the last 6 hours
Returns the onset, the lookback, then the suspects best first ("deploy" or "event"), each with its score and why \
(timing, topology path, what its diff changed or what the event can explain, a log signature naming it); checks \
that could not run are listed as not run."""


def _moment(around: str, now: datetime) -> datetime | None:
    """ISO 8601 / now-2h as the other tools take it, or a bare HH:MM (the latest such time not in the future)."""
    text = around.strip()
    if not text:
        return None
    clock = re.fullmatch(r"(\d{1,2}):(\d{2})", text)
    if clock is None:
        return instant_from_text(text, now)
    moment = now.replace(hour=int(clock.group(1)), minute=int(clock.group(2)), second=0, microsecond=0)
    return moment if moment <= now else moment - timedelta(days=1)


class ChangeFinder:
    """find_changes over the metric tools, a deploy source and a log source, with the topology and metric roles."""

    def __init__(
        self,
        metrics: MetricsTools,
        deploys: DeploySource,
        logs: LogSource | None,
        topology: Mapping[str, Sequence[str]],
        roles: Mapping[str, str],
        clock: Callable[[], datetime] = utc_now,
        *,
        saturation: Sequence[str] = (),
        events: Sequence[EventReader] = (),
    ) -> None:
        self.metrics, self.deploys, self.logs = metrics, deploys, logs
        self.topology = {k: list(v) for k, v in topology.items()}
        self.roles = dict(roles)  # role (latency, errors, traffic, memory, restarts, cpu) -> catalogue metric
        self.saturation = list(saturation)  # the catalogue metrics with the role "saturation"
        self.events = list(events)  # readers of operational events (logs, Kubernetes)
        self.clock = clock

    def specs(self) -> list[ToolSpec]:
        return [tool(self.find_changes, description=_DOC)]

    def find_changes(self, service: str, around: str = "") -> ToolResult:
        """Run find_changes (the description shown to the model is _DOC)."""
        now = self.clock()
        said = _moment(around, now)
        window = TimeWindow(*((said - AROUND, min(now, said + AROUND)) if said else (now - timedelta(hours=6), now)))
        span = f"{iso_z(window.start)}/{iso_z(window.end)}"
        notes: list[str] = []
        onset = self._onset(service, span, notes)
        if onset is None and notes:  # a signal that could not be read is not a signal without a change
            head = f"could not find the onset: {service}'s golden signals over {span} were not all read"
            head += ", so nothing is ranked"
            return ToolResult("error", "\n".join([head, *notes]))
        if onset is None:
            empty = ChangeRanking(service, window, None, said)
            return ToolResult("no_data", render_ranking(empty), empty)
        slow = onset.signal in ("memory", "restarts") or self._changed(service, ("memory", "restarts"), span, notes)
        lookback = ranking.lookback_for(slow)
        new_logs = self._new_signatures(service, onset.at, notes)
        cited = [(t, t) for t in (f"{n.count}x {n.template}" for n in new_logs)]
        suspects = self._deploy_suspects(service, onset, lookback, span, cited, notes)
        suspects += self._event_suspects(service, onset, lookback, span, cited, notes)
        suspects += self._surge_suspects(service, onset.at, span, notes)
        # equal evidence: the change nearer the onset first (a statement a minute before it, a deploy ten)
        nearest = sorted(suspects, key=lambda s: abs(onset.at - s.at) if s.at else lookback)
        best = tuple(sorted(nearest, key=lambda s: -s.score)[:MAX_SUSPECTS])
        found = ChangeRanking(service, window, onset, said, lookback, best, tuple(new_logs), tuple(notes))
        return ToolResult("ok", render_ranking(found), found)

    def _series(self, service: str, metric: str, span: str, notes: list[str]) -> MetricSeries | None:
        try:
            return self.metrics.series(service, metric, span)
        except ToolError as exc:
            notes.append(f"not run: {metric} of {service} ({exc})")
            return None

    def _series_changes(self, service: str, metric: str, span: str, notes: list[str]) -> list[tuple[datetime, float]]:
        series = self._series(service, metric, span, notes)
        return [] if series is None else step_changes(series)

    def _symptom_changes(self, service: str, metric: str, span: str, notes: list[str]) -> list[tuple[datetime, float]]:
        """Steps, and the slower shapes of memory and restarts: a climb, a sawtooth, a count rising from zero."""
        series = self._series(service, metric, span, notes)
        return [] if series is None else sorted(step_changes(series) + slow_changes(series))

    def _onset(self, service: str, span: str, notes: list[str]) -> Onset | None:
        """The first change in the golden signals; when they are flat, the first in the other symptoms."""
        golden = [m for r in GOLDEN if (m := self.roles.get(r))]
        others = [m for r in OTHER_SYMPTOMS if (m := self.roles.get(r))] + self.saturation
        # Most services lack some saturation series (no pool, no queue): an unreadable one is no failure to report.
        unread: list[str] = []
        for metrics, read, said in ((golden, self._series_changes, notes), (others, self._symptom_changes, unread)):
            found = [(at, ratio, metric) for metric in metrics for at, ratio in read(service, metric, span, said)]
            if found:
                at, ratio, metric = min(found)
                return Onset(metric, at, ratio, self._role_of(metric))
        return None

    def _role_of(self, metric: str) -> str:
        """The symptom an onset metric shows (latency, errors, memory, saturation ...)."""
        named = {m: r for r, m in self.roles.items()}
        return named.get(metric, "saturation" if metric in self.saturation else "latency")

    def _changed(self, service: str, roles: Sequence[str], span: str, notes: list[str]) -> bool:
        return any(self._series_changes(service, m, span, notes) for r in roles if (m := self.roles.get(r)))

    def _deploy_suspects(
        self,
        service: str,
        onset: Onset,
        lookback: timedelta,
        span: str,
        signatures: Sequence[tuple[str, str]],
        notes: list[str],
    ) -> list[Suspect]:
        """Deploys, and the records that are events (a rollback, a restart, a failed rollout) as events; one read
        covers the lookback and the day before it, whose deploys count only when their change can wait to bite."""
        near, at = ranking.neighbourhood(self.topology, service), onset.at
        try:
            records = self.deploys.records(None, at - ranking.DELAYED_LOOKBACK, at)
        except Exception as exc:  # a backend failure is a check not run, never "no deploy"
            notes.append(f"not run: deploys ({type(exc).__name__}: {exc})")
            return []
        recent = [r for r in records if r.at is None or r.at >= at - lookback]
        older = [r for r in records if r.at is not None and r.at < at - lookback]
        events = [e for r in recent if r.service in near and (e := event_from_record(r))]
        plain = [r for r in recent if event_from_record(r) is None]
        read = functools.partial(diff_read, self.deploys, signatures=signatures)
        return [
            *self._deploys_ranked(service, at, lookback, plain, span, signatures, notes),
            *(self._event_suspect(e, service, onset, span, notes) for e in events),
            *late_suspects(older, near, service, at, read, notes),
        ]

    def _deploys_ranked(
        self,
        service: str,
        at: datetime,
        lookback: timedelta,
        records: Sequence[DeployRecord],
        span: str,
        signatures: Sequence[tuple[str, str]],
        notes: list[str],
    ) -> list[Suspect]:
        near = ranking.neighbourhood(self.topology, service)
        suspects = []
        for record in ranking.deploys_to_read(records, near, service, at, lookback):
            changed = record.service == service or self._changed(record.service, ("latency", "errors"), span, notes)
            why = ranking.deploy_reasons(record, service, at, changed)
            why += diff_read(self.deploys, record.service, record.version, signatures)[0]
            what = f"deploy {record.service}/{record.version} at {record.at:%H:%M}"
            suspects.append(Suspect("deploy", what, tuple(why), record.service, record.at, record.version))
        return suspects

    def _event_suspects(
        self,
        service: str,
        onset: Onset,
        lookback: timedelta,
        span: str,
        signatures: Sequence[tuple[str, str]],
        notes: list[str],
    ) -> list[Suspect]:
        """Operational events of the neighbourhood (and the cluster's nodes) in the lookback or at the onset."""
        near = ranking.neighbourhood(self.topology, service)
        found, failed = read_events(self.events, near, onset.at - lookback, onset.at + timedelta(minutes=5))
        notes += failed
        reachable = [e for e in found if in_reach(e, onset.at, lookback)]
        return [self._event_suspect(e, service, onset, span, notes, signatures) for e in reachable]

    def _event_suspect(
        self,
        event: OpsEvent,
        service: str,
        onset: Onset,
        span: str,
        notes: list[str],
        signatures: Sequence[tuple[str, str]] = (),
    ) -> Suspect:
        near = ranking.neighbourhood(self.topology, service)
        latency_errors = ("latency", "errors")
        changed = (
            None
            if event.service not in near
            else event.service == service or self._changed(event.service, latency_errors, span, notes)
        )
        why = event_reasons(event, service, onset.at, changed, onset.signal or self._role_of(onset.metric))
        named = naming_line(event, [quoted for _, quoted in signatures])
        if named is not None:
            why.append(Reason(2, f"a log signature new after the onset names it: {named}"))
        return Suspect("event", event_title(event), tuple(why), event.service, event.at, actor=event.actor)

    def _surge_suspects(self, service: str, at: datetime, span: str, notes: list[str]) -> list[Suspect]:
        traffic, found = self.roles.get("traffic"), []
        signals = [m for r in ("latency", "errors") if (m := self.roles.get(r))]
        for dependency in self.topology.get(service, []):
            if not traffic or not any(self._series_changes(dependency, m, span, notes) for m in signals):
                continue
            for caller in ranking.other_callers(self.topology, dependency, service):
                surge = next(
                    (
                        (w, r)
                        for w, r in self._series_changes(caller, traffic, span, notes)
                        if ranking.is_surge(r, w, at)
                    ),
                    None,
                )
                if surge is not None:
                    when, ratio = surge
                    change = f"{caller} {traffic} went x{ratio:.1f} at {when:%H:%M} UTC"
                    why = tuple(ranking.surge_reasons(caller, dependency, service, change))
                    what = f"traffic surge in {caller} (x{ratio:.1f} at {when:%H:%M})"
                    found.append(Suspect("surge", what, why, caller, when, ratio=ratio))
        return found

    def _new_signatures(self, service: str, at: datetime, notes: list[str]) -> list[NewSignature]:
        """The log signatures, any level, after the onset and not before it, in the nearest services' logs."""
        if self.logs is None:
            notes.append("not run: new log signatures (no log source is configured)")
            return []
        found = []
        for name in ranking.neighbourhood(self.topology, service)[:SIGNATURE_SERVICES]:
            try:
                before = self.logs.search(
                    LogQuery(name, at - timedelta(hours=1), at, levels=(), limit=1, cluster_levels=("ERROR", "WARN"))
                )
                after = self.logs.search(
                    LogQuery(name, at, at + timedelta(minutes=30), levels=(), limit=1, cluster_levels=("ERROR", "WARN"))
                )
            except Exception as exc:
                notes.append(f"not run: logs of {name} ({type(exc).__name__}: {exc})")
                continue
            old = {s.key for s in cluster_signatures(before.cluster_entries)}
            fresh = [s for s in cluster_signatures(after.cluster_entries) if s.key not in old]
            found += [NewSignature(name, s.count, s.template[:140]) for s in fresh[:2]]
        return found
