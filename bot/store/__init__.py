"""Trace persistence: the TraceStore seam, SQLite (default) and Elasticsearch stores, and the analytics."""

from bot.store.base import DayTokens, ToolStat, TraceStats, TraceStore
from bot.store.sqlite import SqliteTraceStore

__all__ = ["DayTokens", "SqliteTraceStore", "ToolStat", "TraceStats", "TraceStore"]
