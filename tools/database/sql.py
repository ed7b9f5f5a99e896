"""Reading one Postgres server by SQL, read-only, through psycopg 3.

Each read opens a short-lived connection whose session is read-only from its first statement
(`default_transaction_read_only=on`) and bounded (`statement_timeout`, `lock_timeout`, a connect timeout), runs fixed
statements from tools/database/queries.py in autocommit (each its own read-only transaction, so one refused
statement does not abort the others), and closes. A connection per read costs a few milliseconds and leaves nothing
open on a server that may be short of connections; a backend's refusal ("sorry, too many clients already") is
itself evidence, so it comes back to the model word for word.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row

from tools.base import ToolError

Row = Mapping[str, Any]


class SqlSession:
    """One open read-only connection: fixed statements in, rows as dicts out, failures as ToolErrors."""

    def __init__(self, conn: psycopg.Connection[dict[str, Any]], where: str) -> None:
        self._conn, self._where = conn, where

    def rows(self, statement: str) -> list[Row]:
        try:
            return list(self._conn.execute(statement.encode()).fetchall())
        except psycopg.Error as exc:
            raise ToolError(f"{self._where} refused a read: {_message(exc)}") from exc

    def row(self, statement: str) -> Row:
        found = self.rows(statement)
        if not found:
            raise ToolError(f"{self._where} answered no row to a read that always has one")
        return found[0]


class PostgresReader:
    """A target's DSN and the limits every read runs under; it holds no connection between reads."""

    def __init__(
        self,
        dsn: str,
        *,
        connect_timeout_s: float = 5.0,
        statement_timeout_ms: int = 5_000,
        lock_timeout_ms: int = 1_000,
    ) -> None:
        self._dsn = dsn
        self.connect_timeout_s = connect_timeout_s
        self.options = (
            f"-c default_transaction_read_only=on -c statement_timeout={int(statement_timeout_ms)} "
            f"-c lock_timeout={int(lock_timeout_ms)} -c idle_in_transaction_session_timeout={int(statement_timeout_ms)}"
        )
        self.where = describe_dsn(dsn)

    @contextmanager
    def session(self) -> Iterator[SqlSession]:
        """A read-only connection for the reads of one view; closed when the block ends."""
        try:
            conn = psycopg.connect(
                self._dsn,
                autocommit=True,
                row_factory=dict_row,
                connect_timeout=max(2, math.ceil(self.connect_timeout_s)),  # libpq: whole seconds, at least 2
                options=self.options,
                application_name="opsbot",
            )
        except psycopg.Error as exc:
            raise ToolError(f"could not connect to {self.where}: {_message(exc)}") from exc
        try:
            yield SqlSession(conn, self.where)
        finally:
            conn.close()


def describe_dsn(dsn: str) -> str:
    """`db-primary:5432/shop as opsbot_ro`: where a DSN points, never its password."""
    try:
        parts = conninfo_to_dict(dsn)
    except psycopg.Error:
        return "a database whose DSN does not parse"
    host = str(parts.get("host") or "localhost")
    port = f":{parts['port']}" if parts.get("port") else ""
    user = f" as {parts['user']}" if parts.get("user") else ""
    return f"{host}{port}/{parts.get('dbname') or parts.get('user') or '?'}{user}"


def _message(exc: psycopg.Error) -> str:
    """The server's own message (`sorry, too many clients already`), whitespace collapsed."""
    diag = getattr(exc, "diag", None)
    primary = getattr(diag, "message_primary", None) if diag is not None else None
    return " ".join(str(primary or exc).split())[:400]
