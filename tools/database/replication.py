"""Replication (DbReplication): each replica's lag as the primary sees it (bytes and seconds), each replica's own
replay (paused, or received and not replayed), and the replication slots with the WAL each one holds back.

Built from the REPLICATION queries' rows or from postgres_exporter's series; plain data, no client.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from tools.base import ToolData
from tools.database.sessions import Source
from tools.database.units import age_text, scope_text, size_text
from tools.timerange import TimeWindow


@dataclass(frozen=True)
class ReplicaLag:
    """One standby as the primary sees it (a row of pg_stat_replication); byte counts are behind the primary's WAL."""

    name: str  # application_name (a standby's cluster_name, or `walreceiver`)
    client: str = ""
    state: str = ""  # streaming, catchup, startup, backup
    sent_behind_bytes: float | None = None
    flush_behind_bytes: float | None = None  # not yet on the standby's disk
    replay_behind_bytes: float | None = None  # not yet applied: what a query on the standby does not see
    replay_lag_s: float | None = None  # pg_stat_replication.replay_lag (None once the standby is idle and caught up)
    reply_age_s: float | None = None  # since the standby last answered

    @property
    def unreplayed_bytes(self) -> float | None:
        """On the standby's disk but not applied: replay is paused or stuck when this grows."""
        if self.replay_behind_bytes is None or self.flush_behind_bytes is None:
            return None
        return self.replay_behind_bytes - self.flush_behind_bytes


@dataclass(frozen=True)
class ReplayState:
    """A replica's own account of its replay (asked on the replica itself)."""

    target: str
    paused: bool | None  # pg_is_wal_replay_paused(); None when unknown
    last_replay_age_s: float | None = None  # since the last replayed transaction committed on the primary
    unreplayed_bytes: float | None = None  # received (pg_last_wal_receive_lsn) and not replayed
    receiver: str = ""  # pg_stat_wal_receiver.status (`streaming`); "none": no WAL receiver; "": unknown
    error: str = ""  # why the replica could not be asked

    @property
    def stuck(self) -> bool:
        """Paused, or holding received WAL it has not applied."""
        return bool(self.paused) or (self.unreplayed_bytes or 0) > 0


@dataclass(frozen=True)
class ReplicationSlot:
    name: str
    slot_type: str  # physical | logical
    database: str = ""  # logical slots only
    active: bool = False
    retained_bytes: float | None = None  # WAL kept for it: the server's WAL position less the slot's restart_lsn
    wal_status: str = ""  # reserved, extended, unreserved, lost (Postgres 13+)

    @property
    def orphaned(self) -> bool:
        """Nobody reads it, yet it holds WAL back: the WAL disk fills until it is dropped or read."""
        return not self.active and (self.retained_bytes or 0) > 0


@dataclass(frozen=True)
class DbReplication(ToolData):
    kind: ClassVar[str] = "db_replication"
    database: str
    server: str
    source: Source
    role: Literal["primary", "replica"]
    replicas: tuple[ReplicaLag, ...] = ()  # as the primary sees them
    replays: tuple[ReplayState, ...] = ()  # the target's own replay (a replica) and each configured replica's
    slots: tuple[ReplicationSlot, ...] = ()  # most WAL retained first
    window: TimeWindow | None = None
    note: str = ""

    @property
    def orphaned_slots(self) -> tuple[ReplicationSlot, ...]:
        return tuple(s for s in self.slots if s.orphaned)


def replica_from_row(row: Mapping[str, Any]) -> ReplicaLag:
    return ReplicaLag(
        row.get("application_name") or "",
        row.get("client_addr") or "",
        row.get("state") or "",
        *(_number(row.get(k)) for k in ("sent_behind", "flush_behind", "replay_behind", "replay_lag_s", "reply_age_s")),
    )


def replay_from_row(target: str, row: Mapping[str, Any]) -> ReplayState:
    paused = row.get("replay_paused")
    return ReplayState(
        target,
        None if paused is None else bool(paused),
        _number(row.get("replay_age_s")),
        _number(row.get("unreplayed")),
        row.get("receiver_status") or "none",
    )


def slot_from_row(row: Mapping[str, Any]) -> ReplicationSlot:
    return ReplicationSlot(
        row["slot_name"],
        row.get("slot_type") or "",
        row.get("database") or "",
        bool(row.get("active")),
        _number(row.get("retained")),
        row.get("wal_status") or "",
    )


def render_replication(found: DbReplication) -> str:
    """The role and counts, then a line per replica, per replica's own replay, and per slot."""
    scope = scope_text("replication", found.database, found.server, found.source, found.window)
    head = f"{scope}: {found.role}, {len(found.replicas)} replica(s) connected, {len(found.slots)} slot(s)"
    orphaned = found.orphaned_slots
    if orphaned:
        held = sum(s.retained_bytes or 0 for s in orphaned)
        head += f"; {len(orphaned)} ORPHANED slot(s) hold {size_text(held)} of WAL"
    lines = [head, *map(replica_line, found.replicas), *map(replay_line, found.replays), *map(slot_line, found.slots)]
    return "\n".join(lines + ([found.note] if found.note else []))


def replica_line(r: ReplicaLag) -> str:
    """`replica walreceiver (10.0.0.7) streaming: replay 4.2 MB behind, of which 4.2 MB received and not applied …`."""
    parts = [f"replay {size_text(r.replay_behind_bytes)} behind"]
    unreplayed = r.unreplayed_bytes
    if unreplayed:
        parts.append(f"{size_text(unreplayed)} of it received and not applied (replay paused or stuck)")
    if r.replay_lag_s is not None:
        parts.append(f"replay lag {age_text(r.replay_lag_s)}")
    if r.reply_age_s is not None:
        parts.append(f"last reply {age_text(r.reply_age_s)} ago")
    client = f" ({r.client})" if r.client else ""
    return f"replica {r.name}{client} {r.state or '?'}: " + ", ".join(parts)


def replay_line(r: ReplayState) -> str:
    """`replica orders-db-replica: REPLAY PAUSED; 4.2 MB received and not replayed; last replayed …`."""
    if r.error:
        return f"replica {r.target}: not asked: {r.error}"
    paused = {True: "REPLAY PAUSED (pg_wal_replay_pause(); resume with pg_wal_replay_resume())", False: "replaying"}
    parts = [paused[r.paused]] if r.paused is not None else []  # the exporter does not say
    if r.unreplayed_bytes:
        parts.append(f"{size_text(r.unreplayed_bytes)} received and not replayed")
    if r.last_replay_age_s is not None:
        parts.append(f"last replayed transaction committed {age_text(r.last_replay_age_s)} ago")
    if r.receiver:
        parts.append("no WAL receiver (not streaming)" if r.receiver == "none" else f"WAL receiver {r.receiver}")
    return f"replica {r.target}: " + ("; ".join(parts) or "no replay state known")


def slot_line(s: ReplicationSlot) -> str:
    """`slot orphan_cdc (logical, shop): INACTIVE, retains 48 MB of WAL: orphaned …`."""
    kind = ", ".join(p for p in (s.slot_type, s.database) if p)
    status = f", wal_status {s.wal_status}" if s.wal_status else ""
    line = f"slot {s.name}{f' ({kind})' if kind else ''}: {'active' if s.active else 'INACTIVE'}"
    held = "WAL it retains unknown" if s.retained_bytes is None else f"retains {size_text(s.retained_bytes)} of WAL"
    line += f", {held}{status}"
    if s.orphaned:
        line += ": ORPHANED: nobody reads it and the WAL it holds cannot be removed (read it, or drop it)"
    return line


def _number(value: Any) -> float | None:
    return None if value is None else float(value)
