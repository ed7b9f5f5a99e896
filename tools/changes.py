"""find_changes: every change around a symptom's onset, ranked by the evidence that ties it to the symptom.

It composes the other tools' sources (Prometheus series, deploy records and diffs, logs): the onset comes from
the asked service's metrics (not from the user's words), the lookback follows the symptom's shape (minutes for
a step, hours when memory or restarts changed), and it looks at the asked service and every service within two
hops of it in the topology, both directions: deploys, traffic surges in the other callers of a dependency that
degraded, and log signatures that appear after the onset and not before it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from tools.base import ToolError, ToolResult, ToolSpec, tool
from tools.deploys import DeploySource
from tools.logmodel import LogQuery, LogSource
from tools.logs import cluster_signatures
from tools.metrics import MetricsTools
from tools.timerange import instant_from_text, iso_z, utc_now

STEP_LOOKBACK = timedelta(minutes=45)
TREND_LOOKBACK = timedelta(hours=6)
AROUND = timedelta(hours=2)
SIGNIFICANT = 1.5
SURGE_LEAD = timedelta(minutes=20)
MAX_SUSPECTS = 6
_TRIVIAL_RX = re.compile(r"kustomization|changelog|readme|log(back|ging|4j)|pattern|format", re.IGNORECASE)

_DOC = """\
Find every change around a symptom's onset and rank the suspects. One call does what an SRE does first:
it finds the onset in the service's metrics (say so when the user's time is off), looks back minutes for a \
step or hours for a leak or sawtooth, and gathers the deploys of the service and of every service within two \
hops (callers and callees), traffic surges in the other callers of a dependency that degraded, and log \
signatures that are new after the onset. Use it after the first query_metrics, before reading diffs one by one.
Legal values:
- service: the service the user asks about
- around: the time the user named, ISO 8601 UTC ("2026-11-28T15:05Z") or HH:MM; empty = the last 6 hours
Returns the onset, the lookback, then the suspects best first, each with its score and why (timing, topology \
path, what its diff changed, a log signature naming it); checks that could not run are listed as not run."""


@dataclass
class _Suspect:
    what: str
    score: int = 0
    why: list[str] = field(default_factory=list)

    def add(self, points: int, reason: str) -> None:
        self.score += points
        self.why.append(reason)


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


def _setting_lines(diff: str) -> list[str]:
    """The added lines of a diff outside the image tag, CHANGELOG, README and logging files."""
    lines, trivial = [], False
    for line in diff.splitlines():
        if line.startswith("diff --git"):
            trivial = bool(_TRIVIAL_RX.search(line))
        elif line.startswith("+") and not line.startswith("+++") and not trivial:
            text = line[1:].strip()
            if text and "newTag" not in text and not _TRIVIAL_RX.search(text):
                lines.append(text)
    return lines


class ChangeFinder:
    """find_changes over the metric tools, a deploy source and a log source, with the topology and metric roles."""

    def __init__(
        self, metrics: MetricsTools, deploys: DeploySource, logs: LogSource | None,
        topology: Mapping[str, Sequence[str]], roles: Mapping[str, str], clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.metrics, self.deploys, self.logs = metrics, deploys, logs
        self.topology = {k: list(v) for k, v in topology.items()}
        self.roles = dict(roles)  # role (latency, errors, traffic, memory, restarts) -> catalogue metric
        self.clock = clock

    def specs(self) -> list[ToolSpec]:
        return [tool(self.find_changes, description=_DOC)]

    def find_changes(self, service: str, around: str = "") -> ToolResult | str:
        """Run find_changes (the description shown to the model is _DOC)."""
        now = self.clock()
        said = _moment(around, now)
        start, end = ((said - AROUND, min(now, said + AROUND)) if said else (now - timedelta(hours=6), now))
        span = f"{iso_z(start)}/{iso_z(end)}"
        notes: list[str] = []
        onset = self._onset(service, span, notes)
        if onset is None:
            return ToolResult("no_data", "\n".join([f"no change point in {service}'s golden signals over {span}; "
                                                    "nothing to rank (is the incident over, or elsewhere?)", *notes]))
        metric, at, ratio = onset
        lookback = TREND_LOOKBACK if self._changed(service, ("memory", "restarts"), span, notes) else STEP_LOOKBACK
        head = [f"onset: {service} {metric} changed at {at:%Y-%m-%d %H:%M} UTC (x{ratio:.1f})"]
        if said is not None and abs(at - said) >= timedelta(minutes=15):
            head.append(f"you said {said:%H:%M}; the {metric} change starts at {at:%H:%M} UTC")
        shape = "a trend or sawtooth" if lookback > STEP_LOOKBACK else "a step"
        head.append(f"lookback: {int(lookback.total_seconds() // 60)} min ({shape})")
        suspects = self._deploy_suspects(service, at, lookback, notes)
        suspects += self._surge_suspects(service, at, span, notes)
        new_logs = self._new_signatures(service, at, notes)
        ranked = sorted(suspects, key=lambda s: -s.score)[:MAX_SUSPECTS]
        lines = [f"{i}. {s.what} (score {s.score}): {'; '.join(s.why)}" for i, s in enumerate(ranked, 1)]
        return "\n".join([*head, "suspects, best first:", *(lines or ["(none found in the lookback)"]),
                          *new_logs, *notes])

    def _series_changes(self, service: str, metric: str, span: str, notes: list[str]) -> list[tuple[datetime, float]]:
        try:
            series = self.metrics.series(service, metric, span)
        except ToolError as exc:
            notes.append(f"not run: {metric} of {service} ({exc})")
            return []
        found = [(c.at, c.ratio) for c in series.changes
                 if c.ratio and (c.ratio >= SIGNIFICANT or c.ratio <= 1 / SIGNIFICANT)]
        return sorted(found)

    def _onset(self, service: str, span: str, notes: list[str]) -> tuple[str, datetime, float] | None:
        found = [(at, ratio, metric) for role in ("latency", "errors", "traffic") if (metric := self.roles.get(role))
                 for at, ratio in self._series_changes(service, metric, span, notes)]
        if not found:
            return None
        at, ratio, metric = min(found)
        return metric, at, ratio

    def _changed(self, service: str, roles: Sequence[str], span: str, notes: list[str]) -> bool:
        return any(self._series_changes(service, m, span, notes) for r in roles if (m := self.roles.get(r)))

    def _near(self, service: str) -> list[str]:
        edges: dict[str, set[str]] = {}
        for caller, callees in self.topology.items():
            for callee in callees:
                edges.setdefault(caller, set()).add(callee)
                edges.setdefault(callee, set()).add(caller)
        found, frontier = [service], [service]
        for _ in range(2):
            frontier = sorted({n for s in frontier for n in edges.get(s, ())} - set(found))
            found += frontier
        return found

    def _deploy_suspects(self, service: str, at: datetime, lookback: timedelta, notes: list[str]) -> list[_Suspect]:
        near = self._near(service)
        try:
            records = [r for r in self.deploys.records(None, at - lookback, at) if r.service in near]
        except Exception as exc:  # a backend failure is a check not run, never "no deploy"
            notes.append(f"not run: deploys ({type(exc).__name__}: {exc})")
            return []
        suspects = []
        for record in records[:MAX_SUSPECTS]:
            suspect = _Suspect(f"deploy {record.service}/{record.version} at {record.at:%H:%M}")
            minutes = int((at - record.at).total_seconds() // 60)
            suspect.add(2 if minutes <= 15 else 1, f"{minutes} min before the onset")
            suspect.add(3 if record.service == service else 0, f"{record.service} is the service asked about"
                        if record.service == service else f"{record.service} is within two hops of {service}")
            self._score_diff(suspect, record.service, record.version)
            suspects.append(suspect)
        return suspects

    def _score_diff(self, suspect: _Suspect, service: str, version: str) -> None:
        try:
            found = self.deploys.diff(service, version)
        except Exception as exc:
            suspect.why.append(f"diff not read ({type(exc).__name__})")
            return
        meaningful = _setting_lines(found.diff if found else "")
        if meaningful:
            suspect.add(2, f"its diff changes {' / '.join(meaningful[:2])}")
        else:
            suspect.add(-2, "its diff changes no setting (image tag, logging or notes only)")

    def _surge_suspects(self, service: str, at: datetime, span: str, notes: list[str]) -> list[_Suspect]:
        traffic, found = self.roles.get("traffic"), []
        signals = [m for r in ("latency", "errors") if (m := self.roles.get(r))]
        for dependency in self.topology.get(service, []):
            if not traffic or not any(self._series_changes(dependency, m, span, notes) for m in signals):
                continue
            for caller in [c for c, ds in self.topology.items() if dependency in ds and c != service]:
                for when, ratio in self._series_changes(caller, traffic, span, notes):
                    if ratio >= SIGNIFICANT and at - SURGE_LEAD <= when <= at + timedelta(minutes=5):
                        suspect = _Suspect(f"traffic surge in {caller} (x{ratio:.1f} at {when:%H:%M})")
                        suspect.add(2, "it starts at the onset")
                        suspect.add(3, f"{caller} also calls {dependency}, which degraded")
                        found.append(suspect)
                        break
        return found

    def _new_signatures(self, service: str, at: datetime, notes: list[str]) -> list[str]:
        if self.logs is None:
            return []
        lines = []
        for name in self._near(service)[:8]:
            try:
                before = self.logs.search(LogQuery(name, at - timedelta(hours=1), at, levels=(), limit=1,
                                                   cluster_levels=("ERROR", "WARN")))
                after = self.logs.search(LogQuery(name, at, at + timedelta(minutes=30), levels=(), limit=1,
                                                  cluster_levels=("ERROR", "WARN")))
            except Exception as exc:
                notes.append(f"not run: logs of {name} ({type(exc).__name__}: {exc})")
                continue
            old = {s.template for s in cluster_signatures(before.cluster_entries)}
            fresh = [s for s in cluster_signatures(after.cluster_entries) if s.template not in old]
            lines += [f"new log signature in {name} after the onset: {s.count}x {s.template[:140]}" for s in fresh[:2]]
        return lines
