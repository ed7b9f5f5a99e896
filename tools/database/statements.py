"""A statement as the database views show it: its literals masked, its whitespace collapsed, its length capped.

pg_stat_activity holds the text a client sent, values and all (an e-mail address in a WHERE clause, a token in an
INSERT). The views show its shape instead, the way pg_stat_statements normalises a query: every string, number and
dollar-quoted literal becomes `?`. Secrets the masking misses are caught by the one redaction of every result in
call_tool.
"""

from __future__ import annotations

import re

# Order matters: dollar quotes and strings first (they may hold anything), then numbers outside identifiers.
_DOLLAR = re.compile(r"\$(?P<tag>[A-Za-z_]\w*)?\$.*?\$(?P=tag)?\$", re.S)
_STRING = re.compile(r"(?:[EeBbXxNn]|[Uu]&)?'(?:[^']|'')*'", re.S)
_NUMBER = re.compile(r"(?<![\w$.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\w.])")
_IN_LIST = re.compile(r"\(\s*\?(?:\s*,\s*\?)+\s*\)")  # IN (?, ?, ?) -> IN (?...): a list's length tells nothing
_SPACE = re.compile(r"\s+")
# What pg_stat_activity shows instead of a statement the role may not read, or for a backend with none.
HIDDEN = "<insufficient privilege>"


def statement_text(query: str | None, max_chars: int) -> str:
    """`UPDATE accounts SET balance = balance - ? WHERE email = ?`, cut to `max_chars` with an ellipsis."""
    if not query:
        return ""
    if query.strip() == HIDDEN:
        return "(hidden: the role lacks pg_read_all_stats; grant it pg_monitor)"
    text = _DOLLAR.sub("?", query)
    text = _STRING.sub("?", text)
    text = _NUMBER.sub("?", text)
    text = _IN_LIST.sub("(?...)", text)
    text = _SPACE.sub(" ", text).strip()
    return text if len(text) <= max_chars else text[: max_chars - 1].rstrip() + "…"
