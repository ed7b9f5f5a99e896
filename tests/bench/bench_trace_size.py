"""What typed tool data costs: the stored size of a trace with and without its steps' data, and the redaction pass
over a result's data next to the one over its text.

Run on demand:  .venv/bin/python -m pytest tests/bench/bench_trace_size.py -s
Prints numbers; asserts only that the work happened (no timing assertions).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta

from bot import wiring
from bot.engine.types import Question, Trace, trace_to_dict
from bot.safety.redact import redact
from tests.eval.harness import sandbox_settings
from tools.base import Toolbox, _collect_strings, call_tool, redacted_data
from tools.results import series_of

SCENARIOS = ("hikari-pool", "slow-query-migration", "crashloop-env-enum", "downstream-failure")
POINT = len(json.dumps(["2026-11-28T15:05:00Z", 212.34567890123]) + ",")  # one raw sample, had points been kept


def stored_bytes(trace: Trace) -> int:
    return len(json.dumps(trace_to_dict(trace), ensure_ascii=False).encode())


def without_data(trace: Trace) -> Trace:
    """The trace as it was stored before steps had data (the JSON is then byte for byte the old form)."""
    return replace(trace, steps=tuple(replace(s, data=None) for s in trace.steps))


def box_clock(now: datetime) -> Callable[[], datetime]:
    return lambda: now


def test_bench_stored_trace_size(make_sandbox, tmp_path) -> None:
    print()
    for name in SCENARIOS:
        box = make_sandbox(name)
        settings = sandbox_settings(box, tmp_path, toolsets=True)
        toolbox = wiring.build_toolbox(settings, clock=box_clock(box.now))
        trace = wiring.build_playbook(settings)(Question(box.scenario.question), toolbox, now=box.now)
        before, after = stored_bytes(without_data(trace)), stored_bytes(trace)
        eight = replace(trace, steps=trace.steps[:8])  # the loop's default step budget
        eight_before, eight_after = stored_bytes(without_data(eight)), stored_bytes(eight)
        kinds: dict[str, int] = {}
        for step in trace.steps:
            if step.data is not None:
                size = len(json.dumps(trace_to_dict(replace(trace, steps=(step,)))["steps"][0]["data"]))
                kinds[step.data.kind] = kinds.get(step.data.kind, 0) + size
        samples = sum(s.summary.samples for step in trace.steps if (s := series_of(step)) is not None)
        print(
            f"{name}: {len(trace.steps)} steps, stored {before:,} B without data -> {after:,} B with it "
            f"(x{after / before:.2f}); first 8 steps {eight_before:,} B -> {eight_after:,} B "
            f"(x{eight_after / eight_before:.2f}); by kind {kinds}; raw points would add ~{samples * POINT:,} B "
            f"({samples} samples)"
        )
        assert after > before


def test_bench_redaction_of_data_beside_text(sandbox, tmp_path) -> None:
    """call_tool's one pass over a log result: over its text, and over the strings of its data."""
    specs = wiring.build_tool_specs(sandbox_settings(sandbox, tmp_path), clock=box_clock(sandbox.now))
    start, at, end = ((sandbox.incident_at + timedelta(hours=h)).strftime("%Y-%m-%dT%H:%M:%SZ") for h in (-3, 0, 3))
    args = {"service": "order", "start": start, "end": end, "limit": 100, "onset": at}
    raw = call_tool(Toolbox(specs), "query_logs", args)  # no redactor: the passes below start from the raw result
    assert raw.data is not None
    rounds = 20
    started = time.perf_counter()
    for _ in range(rounds):
        redact(raw.text + " ")  # a fresh string each time: redact() remembers long clean texts it has seen
    text_ms = (time.perf_counter() - started) * 1000 / rounds
    started = time.perf_counter()
    for _ in range(rounds):
        redacted_data(raw.data, lambda text: redact(text + " ").removesuffix(" "))
    data_ms = (time.perf_counter() - started) * 1000 / rounds
    found: dict[str, None] = {}
    _collect_strings(raw.data, found)
    started = time.perf_counter()
    for _ in range(rounds):
        [redact(text + " ") for text in found]
    alone_ms = (time.perf_counter() - started) * 1000 / rounds
    print(f"\nquery_logs (limit 100, onset): its text ({len(raw.text):,} chars) redacted in {text_ms:.2f} ms,")
    print(f"its data's {len(found)} strings in one pass in {data_ms:.2f} ms (one by one: {alone_ms:.2f} ms)")
