"""Disk and WAL size (DbStorage): each database's size and the WAL directory's, over a window from
postgres_exporter's series when Prometheus has them, else the current sizes by SQL, saying that history is not
available. Plain data, no client.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar, Literal

from tools.base import ToolData
from tools.database.sessions import Source
from tools.database.units import scope_text, size_text
from tools.timerange import TimeWindow

SizeKind = Literal["database", "wal", "slot"]
NO_HISTORY = (
    "History is not available: Prometheus holds no postgres_exporter size series for this database "
    "(pg_database_size_bytes, pg_wal_size_bytes); these are the current sizes."
)
NO_EXPORTER = (
    "History is not available: no postgres_exporter series are read for this database (its exporter setting is "
    "off); these are the current sizes."
)


@dataclass(frozen=True)
class SizeSeries:
    """One size: a database, the WAL directory, or the WAL a replication slot holds back."""

    name: str  # the database's name, "WAL", or the slot's name
    what: SizeKind
    last_bytes: float | None
    first_bytes: float | None = None  # at the window's start; None without history
    max_bytes: float | None = None
    growth_bytes_per_h: float | None = None  # (last - first) over the window's hours
    points: tuple[tuple[datetime, float], ...] = ()  # a few samples across the window

    @property
    def growth_bytes(self) -> float | None:
        return None if self.first_bytes is None or self.last_bytes is None else self.last_bytes - self.first_bytes


@dataclass(frozen=True)
class DbStorage(ToolData):
    kind: ClassVar[str] = "db_storage"
    database: str
    server: str
    source: Source
    sizes: tuple[SizeSeries, ...]  # databases biggest first, then the WAL, then slots
    history: bool = False  # the sizes have a window of samples behind them
    window: TimeWindow | None = None
    segments: int | None = None  # WAL segment files (SQL)
    note: str = ""

    def of(self, what: str) -> tuple[SizeSeries, ...]:
        return tuple(s for s in self.sizes if s.what == what)


def render_storage(found: DbStorage) -> str:
    """A line per size: now, and over the window its start, growth per hour and peak; then the samples of the
    fastest grower."""
    scope = scope_text("storage", found.database, found.server, found.source, found.window)
    lines = [f"{scope}:"]
    lines += [f"  {size_line(s, found.segments if s.what == 'wal' else None)}" for s in found.sizes]
    growing = [s for s in found.sizes if (s.growth_bytes_per_h or 0) > 0 and s.points]
    if growing:
        fastest = max(growing, key=lambda s: s.growth_bytes_per_h or 0.0)
        samples = ", ".join(f"{at:%m-%d %H:%M} {size_text(v)}" for at, v in fastest.points)
        lines.append(f"  samples of {_label(fastest)}: {samples}")
    if not found.sizes:
        lines.append("  no size was readable.")
    return "\n".join(lines + ([found.note] if found.note else []))


def size_line(s: SizeSeries, segments: int | None = None) -> str:
    """`database shop: 1.2 GB; 1.0 GB → 1.2 GB in the window (+12 MB/h), peak 1.2 GB` (the history part only with
    history)."""
    count = f" in {segments} segment files" if segments is not None else ""
    line = f"{_label(s)}: {size_text(s.last_bytes)}{count}"
    if s.first_bytes is not None:
        rate = s.growth_bytes_per_h or 0.0
        sign = "+" if rate >= 0 else "-"
        line += (
            f"; {size_text(s.first_bytes)} → {size_text(s.last_bytes)} in the window ({sign}{size_text(abs(rate))}/h)"
        )
        line += f", peak {size_text(s.max_bytes)}"
    return line


def _label(s: SizeSeries) -> str:
    return {"database": f"database {s.name}", "wal": "WAL", "slot": f"WAL held by slot {s.name}"}[s.what]
