"""The Loki stand-in the tests use: one implementation, in bot/sandbox (the sandbox serves it too)."""

from bot.sandbox.standins.loki import FakeLoki, Line, LogQLError, lines_from_jsonl

__all__ = ["FakeLoki", "Line", "LogQLError", "lines_from_jsonl"]
