"""The database section: the Postgres servers opsbot may read, read-only, by SQL and from postgres_exporter's series.

The toolset is off until a target is configured. A target is named by its database (or the service that owns it); the
model and the playbook ask for it by that name or by one of the services that use it.
"""

from __future__ import annotations

from pydantic import Field, SecretStr

from bot.config.section import Section


class DatabaseTarget(Section):
    """One Postgres server (a primary or a replica) and where its evidence lives."""

    # A libpq DSN or URL for a read-only role (pg_monitor, no table privileges); "" = no SQL, the exporter only.
    dsn: SecretStr = SecretStr("")
    # The services whose evidence points at this database (a pool timeout in order's logs: order's database).
    services: list[str] = Field(default_factory=list)
    # Read this server's postgres_exporter series from Prometheus (history; the views when SQL is not granted).
    exporter: bool = True
    # The value of database.exporter_label on this server's postgres_exporter series; "" = the target's name.
    exporter_value: str = ""
    # Other targets that replicate from this one: the replication view asks each for its own replay state.
    replicas: list[str] = Field(default_factory=list)


class DatabaseSettings(Section):
    """Read-only Postgres views: sessions, lock waits with the blocking chain, replication and slots, disk and WAL
    size, connections against max_connections."""

    targets: dict[str, DatabaseTarget] = Field(default_factory=dict)  # name -> target; {} = the toolset is off
    # The label that names a server on postgres_exporter's series in Prometheus; "" = prometheus.service_label.
    exporter_label: str = ""
    # The exporter's per-database label (pg_database_size_bytes, pg_stat_activity_count).
    datname_label: str = "datname"
    connect_timeout_s: float = Field(default=5.0, gt=0)
    statement_timeout_ms: int = Field(default=5_000, gt=0)  # each read is cancelled by the server after this
    lock_timeout_ms: int = Field(default=1_000, gt=0)  # a read never queues behind a lock for longer
    max_rows: int = Field(default=10, gt=0)  # statements, sessions and slots one view lists
    max_statement_chars: int = Field(default=200, ge=40)  # a statement shown is cut here (literals already masked)
