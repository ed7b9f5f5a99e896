"""The database views from postgres_exporter's series in Prometheus, for a server opsbot may not query by SQL, and for
what SQL cannot give: how sizes and connections moved over a window.

The metric names are the exporter's (pg_stat_activity_count, pg_locks_count, pg_settings_max_connections,
pg_database_size_bytes, pg_wal_size_bytes, pg_replication_lag_seconds, pg_stat_replication_pg_wal_lsn_diff,
pg_replication_slots_pg_wal_lsn_diff / _active, else pg_replication_slot_slot_is_active); a server is picked by one
label (the exporter label's value), and only PromQL written here runs. Each builder returns None when Prometheus
holds none of its series.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from tools.database.locks import DbLocks, LockCount
from tools.database.replication import DbReplication, ReplayState, ReplicaLag, ReplicationSlot
from tools.database.sessions import DbConnections, DbSessions, SessionGroup
from tools.database.storage import DbStorage, SizeKind, SizeSeries
from tools.timerange import TimeWindow

LABEL_RX = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
POINTS = 120  # samples a window is read at
SHOWN_POINTS = 8  # samples a size series keeps for the text
# Whether each slot is read: the slots collector's family, else the replication_slot collector's (on by default).
ACTIVE_SLOTS = (
    "sum by (slot_name) (pg_replication_slots_active{$sel})"
    " or sum by (slot_name) (pg_replication_slot_slot_is_active{$sel})"
)


class RangeQuery(Protocol):
    def query_range(self, promql: str, start: datetime, end: datetime, step: str) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class Sampled:
    labels: dict[str, str]
    points: tuple[tuple[datetime, float], ...]

    @property
    def last(self) -> float:
        return self.points[-1][1]

    @property
    def peak(self) -> tuple[datetime, float]:
        return max(self.points, key=lambda p: p[1])


class ExporterViews:
    """The five views over one server's postgres_exporter series."""

    def __init__(self, prometheus: RangeQuery, label: str, value: str, *, datname_label: str = "datname") -> None:
        for name in (label, datname_label):
            if not LABEL_RX.match(name):
                raise ValueError(f"{name!r} is not a Prometheus label name")
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        self._prometheus, self.selector, self.datname = prometheus, f'{label}="{escaped}"', datname_label

    def read(self, template: str, window: TimeWindow) -> list[Sampled]:
        """The series of `template` (`$sel` stands for the server's label matcher) over the window."""
        promql = template.replace("$sel", self.selector)
        step = max(15, int(window.seconds // POINTS))
        matrix = self._prometheus.query_range(promql, window.start, window.end, f"{step}s")
        found = [_sampled(s) for s in matrix]
        return [s for s in found if s.points]

    def present(self, window: TimeWindow) -> bool:
        """Prometheus holds some postgres_exporter series of this server in the window."""
        names = "pg_up|pg_stat_activity_count|pg_settings_max_connections|pg_database_size_bytes"
        return bool(self.read(f'count({{$sel,__name__=~"{names}"}})', window))

    def storage(self, database: str, window: TimeWindow) -> DbStorage | None:
        sizes = [
            *(
                _size(s, s.labels.get(self.datname, "?"), "database", window)
                for s in self._by("pg_database_size_bytes", self.datname, window)
            ),
            *(_size(s, "WAL", "wal", window) for s in self.read("max(pg_wal_size_bytes{$sel})", window)),
            *(
                _size(s, s.labels.get("slot_name", "?"), "slot", window)
                for s in self._by("pg_replication_slots_pg_wal_lsn_diff", "slot_name", window)
            ),
        ]
        if not sizes:
            return None
        sizes.sort(key=lambda s: (("database", "wal", "slot").index(s.what), -(s.last_bytes or 0)))
        return DbStorage(database, self.selector, "postgres_exporter", tuple(sizes), True, window)

    def connections(self, database: str, window: TimeWindow) -> DbConnections | None:
        used = self.read("sum(pg_stat_activity_count{$sel})", window)
        if not used:
            return None
        limit = self._last("max(pg_settings_max_connections{$sel})", window)
        reserved = self._last("max(pg_settings_superuser_reserved_connections{$sel})", window)
        states = self._by("pg_stat_activity_count", "state", window)
        peak_at, peak = used[0].peak
        return DbConnections(
            database,
            self.selector,
            "postgres_exporter",
            round(used[0].last),
            None if limit is None else round(limit),
            round(reserved or 0),
            by_state=tuple((s.labels.get("state", "?"), round(s.last)) for s in states if round(s.last)),
            peak=round(peak),
            peak_at=peak_at,
            window=window,
        )

    def sessions(self, database: str, application: str, window: TimeWindow) -> DbSessions | None:
        groups = self.read("sum by (application_name, usename, state) (pg_stat_activity_count{$sel})", window)
        if not groups:
            return None
        mine = [g for g in groups if not application or g.labels.get("application_name", "") == application]
        found = sorted(
            (
                SessionGroup(
                    g.labels.get("application_name", ""),
                    g.labels.get("usename", ""),
                    g.labels.get("state", ""),
                    round(g.last),
                )
                for g in mine
            ),
            key=lambda g: -g.count,
        )
        longest = self._last("max(pg_stat_activity_max_tx_duration{$sel})", window, peak=True)
        note = "Statements need SQL access (a read-only role): the exporter counts sessions only."
        total = sum(g.count for g in found)
        return DbSessions(
            database,
            self.selector,
            "postgres_exporter",
            total,
            tuple(g for g in found if g.count),
            (),
            application,
            longest,
            window,
            note,
        )

    def locks(self, database: str, window: TimeWindow) -> DbLocks | None:
        modes = self._by("pg_locks_count", "mode", window)
        if not modes:
            return None
        counts = sorted((LockCount(m.labels.get("mode", "?"), round(m.peak[1])) for m in modes), key=lambda c: -c.count)
        waiting = self._last('sum(pg_stat_activity_count{$sel,wait_event_type="Lock"})', window, peak=True)
        note = "The blocking chain (who blocks whom, with what statement) needs SQL access (a read-only role)."
        return DbLocks(
            database,
            self.selector,
            "postgres_exporter",
            (),
            tuple(c for c in counts if c.count),
            None if waiting is None else round(waiting),
            window,
            note,
        )

    def replication(self, database: str, window: TimeWindow) -> DbReplication | None:
        lag = self.read("max(pg_replication_lag_seconds{$sel})", window)
        replica = self._last("max(pg_replication_is_replica{$sel})", window)
        standbys = self._by("pg_stat_replication_pg_wal_lsn_diff", "application_name", window)
        slots = self._slots(window)
        if not (lag or standbys or slots or replica is not None):
            return None
        is_replica = bool(replica) or (replica is None and bool(lag) and not standbys)
        replays = (ReplayState(database, None, lag[0].last if lag else None),) if is_replica else ()
        note = f"Replication lag peaked at {lag[0].peak[1]:.0f} s in the window." if lag and is_replica else ""
        return DbReplication(
            database,
            self.selector,
            "postgres_exporter",
            "replica" if is_replica else "primary",
            tuple(ReplicaLag(s.labels.get("application_name", "?"), replay_behind_bytes=s.last) for s in standbys),
            replays,
            slots,
            window,
            note,
        )

    def _slots(self, window: TimeWindow) -> tuple[ReplicationSlot, ...]:
        """Each slot, most WAL retained first; a slot the exporter shows only as active or not (its default
        replication_slot collector gives no retained bytes for an inactive slot) comes last, its WAL unknown."""
        retained = {
            s.labels.get("slot_name", "?"): s.last
            for s in self._by("pg_replication_slots_pg_wal_lsn_diff", "slot_name", window)
        }
        active = {s.labels.get("slot_name", "?"): s.last for s in self.read(ACTIVE_SLOTS, window)}
        names = sorted(set(retained) | set(active), key=lambda n: (-retained.get(n, -1.0), n))
        return tuple(ReplicationSlot(n, "", "", bool(active.get(n, 0)), retained.get(n)) for n in names)

    def _by(self, metric: str, label: str, window: TimeWindow) -> list[Sampled]:
        return self.read(f"sum by ({label}) ({metric}{{$sel}})", window)

    def _last(self, template: str, window: TimeWindow, *, peak: bool = False) -> float | None:
        found = self.read(template, window)
        if not found:
            return None
        return found[0].peak[1] if peak else found[0].last


def _sampled(series: dict[str, Any]) -> Sampled:
    points = []
    for ts, value in series.get("values", []):
        number = float(value)
        if number == number:  # NaN: no sample worth showing
            points.append((datetime.fromtimestamp(float(ts), tz=UTC), number))
    return Sampled(dict(series.get("metric", {})), tuple(points))


def _size(s: Sampled, name: str, what: SizeKind, window: TimeWindow) -> SizeSeries:
    first, last = s.points[0][1], s.points[-1][1]
    hours = max((s.points[-1][0] - s.points[0][0]).total_seconds() / 3600, 1 / 60)
    return SizeSeries(name, what, last, first, s.peak[1], (last - first) / hours, _thin(s.points))


def _thin(points: Sequence[tuple[datetime, float]]) -> tuple[tuple[datetime, float], ...]:
    if len(points) <= SHOWN_POINTS:
        return tuple(points)
    last = len(points) - 1
    return tuple(points[round(i * last / (SHOWN_POINTS - 1))] for i in range(SHOWN_POINTS))
