"""Sizes, ages and the opening words of every database view's text, written the same way in each."""

from __future__ import annotations

from tools.timerange import TimeWindow

_SIZE_UNITS = ((1024**4, "TB"), (1024**3, "GB"), (1024**2, "MB"), (1024, "kB"))


def size_text(size_bytes: float | None) -> str:
    """`2.1 GB`, `512 kB`, `90 B` (binary units, as Postgres' pg_size_pretty prints them); `?` when unknown."""
    if size_bytes is None:
        return "?"
    for factor, unit in _SIZE_UNITS:
        if abs(size_bytes) >= factor:
            value = size_bytes / factor
            return f"{value:.1f} {unit}" if abs(value) < 100 else f"{value:.0f} {unit}"
    return f"{size_bytes:.0f} B"


def age_text(seconds: float | None) -> str:
    """`45 s`, `12 min`, `3.5 h`, `2.0 d`; `?` when unknown."""
    if seconds is None:
        return "?"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172_800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86_400:.1f} d"


def scope_text(view: str, database: str, server: str, source: str, window: TimeWindow | None) -> str:
    """`sessions on orders-db (db-primary:5432/shop), by SQL, now` or `..., from postgres_exporter, <window>`."""
    where = f"{view} on {database}" + (f" ({server})" if server else "")
    when = window.describe() if window is not None else "now"
    how = "by SQL" if source == "sql" else "from postgres_exporter in Prometheus"
    return f"{where}, {how}, {when}"
