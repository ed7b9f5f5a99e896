"""The questions operators ask about the bot's runs, as SQL (SQLite) and as aggregations (Elasticsearch).

Both produce the same TraceStats for the same traces: counts and sums are exact in both, and durations
use the nearest-rank percentile over the stored values (not ES's approximate `percentiles` aggregation).
"""

from __future__ import annotations

import re
import sqlite3
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.store.base import DayTokens, ToolStat, TraceStats, iso_utc, percentile_nearest_rank

# ES answers at most this many durations per stats call; diagnoses are tens to hundreds a day.
MAX_DURATIONS = 10_000

_SINCE = re.compile(r"^\s*(\d+)\s*([mhdw])\s*$")
_UNIT_S = {"m": 60, "h": 3_600, "d": 86_400, "w": 604_800}


def since_from_text(text: str, now: datetime | None = None) -> datetime | None:
    """'30m', '12h', '7d', '2w' or an ISO date/time -> the moment it names; '' -> None."""
    if not text.strip():
        return None
    match = _SINCE.match(text)
    if match:
        return (now or datetime.now(UTC)) - timedelta(seconds=int(match[1]) * _UNIT_S[match[2]])
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValueError(f"cannot read {text!r}: use 30m, 12h, 7d, 2w or an ISO date") from exc
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def sqlite_stats(conn: sqlite3.Connection, since: datetime | None, long_run_steps: int) -> TraceStats:
    """TraceStats from the SQLite schema in bot/store/sqlite.py."""
    since_ts = since.timestamp() if since else 0.0
    one = conn.execute(
        "SELECT count(*), coalesce(sum(steps > ?), 0) FROM traces WHERE started_ts >= ?", (long_run_steps, since_ts)
    ).fetchone()
    where = "WHERE started_ts >= ?"
    stop = conn.execute(f"SELECT stop_reason, count(*) FROM traces {where} GROUP BY 1 ORDER BY 2 DESC", (since_ts,))
    intents = conn.execute(f"SELECT intent, count(*) FROM traces {where} GROUP BY 1 ORDER BY 2 DESC", (since_ts,))
    tools = conn.execute(
        "SELECT c.tool, count(*), sum(c.status = 'error') FROM tool_calls c JOIN traces t USING (trace_id) "
        "WHERE t.started_ts >= ? GROUP BY 1 ORDER BY 2 DESC, 1",
        (since_ts,),
    )
    days = conn.execute(
        "SELECT date(started_ts, 'unixepoch'), count(*), sum(prompt_tokens + completion_tokens) "
        f"FROM traces {where} GROUP BY 1 ORDER BY 1",
        (since_ts,),
    )
    durations = [r[0] for r in conn.execute(f"SELECT elapsed_ms FROM traces {where} ORDER BY 1", (since_ts,))]
    votes = conn.execute(
        "SELECT coalesce(sum(vote = 1), 0), coalesce(sum(vote = -1), 0) FROM feedback WHERE at_ts >= ?", (since_ts,)
    ).fetchone()
    return TraceStats(
        runs=one[0],
        long_runs=one[1],
        long_run_steps=long_run_steps,
        stop_reasons=dict(stop.fetchall()),
        tools=tuple(ToolStat(t, n, e) for t, n, e in tools),
        tokens_by_day=tuple(DayTokens(d, n, tok) for d, n, tok in days),
        votes_up=votes[0],
        votes_down=votes[1],
        p50_duration_ms=percentile_nearest_rank(durations, 50),
        p95_duration_ms=percentile_nearest_rank(durations, 95),
        intents={k or "unknown": v for k, v in intents.fetchall()},
    )


def elastic_stats_query(since: datetime | None, long_run_steps: int) -> dict[str, Any]:
    """The search body for the traces index: one round trip for every count."""
    return {
        "size": 0,
        "track_total_hits": True,
        "query": since_query(since, "started_at"),
        "aggs": {
            "long_runs": {"filter": {"range": {"steps": {"gt": long_run_steps}}}},
            "stop_reasons": {"terms": {"field": "stop_reason", "size": 50}},
            "intents": {"terms": {"field": "intent", "size": 20, "missing": "unknown"}},
            "calls": {
                "nested": {"path": "calls"},
                "aggs": {
                    "tool": {
                        "terms": {"field": "calls.tool", "size": 200},
                        "aggs": {"errors": {"filter": {"term": {"calls.status": "error"}}}},
                    }
                },
            },
            "days": {
                "date_histogram": {"field": "started_at", "calendar_interval": "1d", "min_doc_count": 1},
                "aggs": {"tokens": {"sum": {"field": "tokens"}}},
            },
        },
    }


def since_query(since: datetime | None, field: str) -> dict[str, Any]:
    if since is None:
        return {"match_all": {}}
    return {"range": {field: {"gte": iso_utc(since)}}}


def stats_from_elastic(
    body: dict[str, Any], durations: list[int], votes: tuple[int, int], long_run_steps: int
) -> TraceStats:
    """TraceStats from the response of elastic_stats_query plus the sorted durations and (up, down) votes."""
    aggs = body["aggregations"]
    tools = [ToolStat(b["key"], b["doc_count"], b["errors"]["doc_count"]) for b in aggs["calls"]["tool"]["buckets"]]
    tools.sort(key=lambda t: (-t.calls, t.tool))
    return TraceStats(
        runs=int(body["hits"]["total"]["value"]),
        long_runs=aggs["long_runs"]["doc_count"],
        long_run_steps=long_run_steps,
        stop_reasons={b["key"]: b["doc_count"] for b in aggs["stop_reasons"]["buckets"]},
        tools=tuple(tools),
        tokens_by_day=tuple(
            DayTokens(b["key_as_string"][:10], b["doc_count"], int(b["tokens"]["value"] or 0))
            for b in aggs["days"]["buckets"]
        ),
        votes_up=votes[0],
        votes_down=votes[1],
        p50_duration_ms=percentile_nearest_rank(durations, 50),
        p95_duration_ms=percentile_nearest_rank(durations, 95),
        intents={b["key"]: b["doc_count"] for b in aggs["intents"]["buckets"]},
    )


def stats_to_text(stats: TraceStats) -> str:
    """A plain-text report for `opsbot traces stats`."""
    ratio = "no votes" if stats.feedback_ratio is None else f"{stats.feedback_ratio:.0%} helpful"
    lines = [
        f"runs: {stats.runs}   more than {stats.long_run_steps} steps: {stats.long_runs}",
        f"duration: p50 {stats.p50_duration_ms / 1000:.1f} s   p95 {stats.p95_duration_ms / 1000:.1f} s",
        f"feedback: {stats.votes_up} up, {stats.votes_down} down ({ratio})",
        "stop reasons: " + (", ".join(f"{k} {v}" for k, v in stats.stop_reasons.items()) or "none"),
        "intents: " + (", ".join(f"{k} {v}" for k, v in stats.intents.items()) or "none"),
        "tools (calls, errors, error rate):",
    ]
    lines += [f"  {t.tool:<28} {t.calls:>6} {t.errors:>6} {t.error_rate:>7.1%}" for t in stats.tools] or ["  none"]
    lines.append("tokens per day (runs, tokens, tokens/run):")
    lines += [f"  {d.day} {d.runs:>6} {d.tokens:>10,} {d.tokens_per_run:>10,.0f}" for d in stats.tokens_by_day] or [
        "  none"
    ]
    return "\n".join(lines)
