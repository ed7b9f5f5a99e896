"""Cost of the text layer on every step: parsing a reply, redacting an observation, grounding an answer.

Run on demand:  .venv/bin/python -m pytest tests/bench/bench_text.py -s
It prints one line per measurement; it asserts only that the work was done, never a timing.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from bot.engine.text.parser import ParsedAction, parse_reply
from bot.safety.grounding import unverified_claims
from bot.safety.redact import redact

REPEATS = 200
TOOLS = ("query_metrics", "query_logs", "query_deploy_records", "query_deploy_diff", "calculate")

CLEAN_REPLY = 'Thought: p99 jumped at 15:05.\nAction: query_logs\nAction Input: {"service": "order", "level": "ERROR"}'
MESSY_REPLY = (
    "Sure! Here is my next step.\n\n**思考：** the latency jumped, check the logs\n**Action 2:** `Query_Logs`\n"
    "**Action Input:**\n```json\n{service: 'order', level: 'ERROR', limit: 50, // errors only\n```\n"
    "Observation: (made up) 42 errors\nThought: so\nAction: query_metrics\nAction Input: {}"
)
LOG_LINE = (
    "2026-11-28T15:05:01.123Z ERROR order-7f9c4d-x2 com.zaxxer.hikari.pool.HikariPool HikariPool-1 - Connection is "
    "not available, request timed out after 30000ms. trace_id=4bf92f3577b34da6a3ce929d0e0e4736 user=app\n"
)
OBSERVATION = LOG_LINE * 60 + "jdbc url postgres://order:Sup3r@db:5432/orders password=hunter2\n"
ANSWER = (
    "Root cause: order v2.8.1 (deployed 15:02) raised hikari.maximumPoolSize from 50 to 200. p99 went from 212 ms "
    "to 1,180 ms (x5.6) at 15:05; HikariPool-1 timed out after 30000ms. The DB answered in 42 ms."
)
EVIDENCE = [
    "change: 15:05 212 ms -> 1,180 ms (x5.6)\nseries (mean per 2h, ms): 13:00 205, 15:00 990",
    "order/v2.8.1 2026-11-28T15:02:00Z hikari.maximumPoolSize 50 -> 200",
    OBSERVATION,
]


def _time_us(work: Callable[[], object]) -> tuple[float, float]:
    samples = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        work()
        samples.append((time.perf_counter() - start) * 1e6)
    return statistics.median(samples), max(samples)


def test_bench_text_layer() -> None:
    assert isinstance(parse_reply(MESSY_REPLY, TOOLS), ParsedAction)
    assert "hunter2" not in redact(OBSERVATION)
    assert unverified_claims(ANSWER, EVIDENCE) == ["42 ms"]
    rows = [
        ("parse clean reply", len(CLEAN_REPLY), _time_us(lambda: parse_reply(CLEAN_REPLY, TOOLS))),
        ("parse messy reply", len(MESSY_REPLY), _time_us(lambda: parse_reply(MESSY_REPLY, TOOLS))),
        ("redact observation", len(OBSERVATION), _time_us(lambda: redact(OBSERVATION))),
        ("ground answer", len(ANSWER), _time_us(lambda: unverified_claims(ANSWER, EVIDENCE))),
    ]
    print()
    for name, chars, (median_us, max_us) in rows:
        print(f"{name:<20} {chars:>7,} chars  median {median_us:8.1f} µs  max {max_us:8.1f} µs")
