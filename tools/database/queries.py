"""The only SQL the database toolset runs: fixed, read-only statements over the statistics views (no model-written
SQL, no identifier formatted into a statement). A value from a call is compared in Python, after the rows are read.

Columns that only newer servers have (pg_locks.waitstart, 14+; pg_replication_slots.wal_status, 13+;
reserved_connections, 16+) are read through to_jsonb() or pg_settings, so an older server answers NULL instead of an
error. pg_blocking_pids() is called only for sessions that wait for a lock, as its documentation advises.
"""

from __future__ import annotations

# Client sessions with their role's connection limit; ages in seconds.
SESSIONS = """
SELECT a.pid, a.datname, a.usename, a.application_name, a.client_addr::text AS client_addr, a.state,
       a.wait_event_type, a.wait_event, a.query, r.rolconnlimit,
       EXTRACT(EPOCH FROM now() - a.xact_start)::float8 AS xact_s,
       EXTRACT(EPOCH FROM now() - COALESCE(CASE WHEN a.state = 'active' THEN a.query_start END, a.state_change))::float8
         AS state_s
FROM pg_stat_activity a LEFT JOIN pg_roles r ON r.rolname = a.usename
WHERE a.backend_type = 'client backend' AND a.pid <> pg_backend_pid()
"""

CONNECTION_LIMITS = """
SELECT current_setting('max_connections')::int AS max_connections,
       current_setting('superuser_reserved_connections')::int AS superuser_reserved,
       (SELECT setting::int FROM pg_settings WHERE name = 'reserved_connections') AS reserved
"""

# Every session that waits for a lock, and every session one of them waits for.
LOCKS = """
WITH waiting AS (
  SELECT pid, pg_blocking_pids(pid) AS blocked_by FROM pg_stat_activity WHERE wait_event_type = 'Lock'
)
SELECT a.pid, a.usename, a.application_name, a.state, a.query, COALESCE(w.blocked_by, '{}') AS blocked_by,
       EXTRACT(EPOCH FROM now() - a.xact_start)::float8 AS xact_s,
       l.waiting_for, l.wait_since,
       EXTRACT(EPOCH FROM now() - COALESCE(l.wait_since, a.state_change))::float8 AS wait_s
FROM pg_stat_activity a
LEFT JOIN waiting w ON w.pid = a.pid
LEFT JOIN LATERAL (
  SELECT pl.mode || ' on ' || pl.locktype
           || COALESCE(' ' || CASE WHEN pl.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                                   THEN pl.relation::regclass::text ELSE pl.relation::text END, '') AS waiting_for,
         (to_jsonb(pl) ->> 'waitstart')::timestamptz AS wait_since
  FROM pg_locks pl WHERE pl.pid = a.pid AND NOT pl.granted LIMIT 1
) l ON w.pid IS NOT NULL
WHERE w.pid IS NOT NULL OR a.pid IN (SELECT unnest(blocked_by) FROM waiting)
"""

IN_RECOVERY = "SELECT pg_is_in_recovery() AS in_recovery"

# On a primary: each standby, its bytes behind the primary's WAL position, its lags in seconds.
STANDBYS = """
SELECT application_name, client_addr::text AS client_addr, state,
       pg_wal_lsn_diff(pg_current_wal_lsn(), sent_lsn)::float8 AS sent_behind,
       pg_wal_lsn_diff(pg_current_wal_lsn(), flush_lsn)::float8 AS flush_behind,
       pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::float8 AS replay_behind,
       EXTRACT(EPOCH FROM replay_lag)::float8 AS replay_lag_s,
       EXTRACT(EPOCH FROM now() - (to_jsonb(r) ->> 'reply_time')::timestamptz)::float8 AS reply_age_s
FROM pg_stat_replication r ORDER BY application_name
"""

# On a replica: its own replay.
REPLAY = """
SELECT pg_is_wal_replay_paused() AS replay_paused,
       EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp())::float8 AS replay_age_s,
       pg_wal_lsn_diff(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn())::float8 AS unreplayed,
       (SELECT status FROM pg_stat_wal_receiver) AS receiver_status
"""

# Every slot and the WAL it holds back, from the server's own WAL position (a replica's: what it received).
SLOTS = """
SELECT s.slot_name, s.slot_type, s.database, s.active,
       pg_wal_lsn_diff(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_receive_lsn() ELSE pg_current_wal_lsn() END,
                       s.restart_lsn)::float8 AS retained,
       to_jsonb(s) ->> 'wal_status' AS wal_status
FROM pg_replication_slots s ORDER BY retained DESC NULLS LAST, s.slot_name
"""

DATABASE_SIZES = """
SELECT datname, pg_database_size(datname)::float8 AS size_bytes
FROM pg_database WHERE datallowconn AND NOT datistemplate ORDER BY size_bytes DESC, datname
"""

# pg_ls_waldir() needs pg_monitor (or superuser); its failure is reported, not fatal to the view.
WAL_SIZE = """
SELECT count(*)::int AS segments, COALESCE(sum(size), 0)::float8 AS size_bytes
FROM pg_ls_waldir() WHERE name ~ '^[0-9A-F]{24}$'
"""

# What the check asks about the role it connected as.
ROLE = """
SELECT current_user AS role, r.rolsuper AS superuser, current_setting('transaction_read_only') AS read_only,
       pg_has_role(current_user, 'pg_monitor', 'USAGE') AS monitor,
       (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
          AND has_table_privilege(c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE'))::int AS writable_tables,
       current_setting('server_version') AS version
FROM pg_roles r WHERE r.rolname = current_user
"""
