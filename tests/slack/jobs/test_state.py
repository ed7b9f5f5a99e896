"""Dedupe and thread memory (the in-memory implementations of the shared-state Protocols); a job's wire form."""

from __future__ import annotations

import json

from bot.engine.types import Intent, Question, Step, StopReason, Totals, Trace
from bot.slack.jobs.state import (
    Job,
    MemoryDedupe,
    MemoryThreadMemory,
    job_from_payload,
    job_to_payload,
    trace_to_memory,
)
from tests import toolresults
from tests.fakes.clock import FakeClock
from tests.toolresults import at, series
from tools.analysis.changepoints import Spike


def test_dedupe_entries_live_at_least_ten_minutes() -> None:
    clock = FakeClock()
    dedupe = MemoryDedupe(ttl_s=60, clock=clock)  # asked for 1 minute: clamped to 10
    assert dedupe.ttl_s >= 600
    assert dedupe.first_seen(["event:Ev1", "ts:C1:1.0"])
    clock.now += 9 * 60
    assert not dedupe.first_seen(["event:Ev1"])
    assert not dedupe.first_seen(["event:Ev2", "ts:C1:1.0"])  # same message, another envelope
    clock.now += 11 * 60
    assert dedupe.first_seen(["event:Ev1"])


def test_thread_memory_keeps_compressed_recent_turns_per_thread() -> None:
    memory = MemoryThreadMemory(max_turns=2, max_threads=2)
    step = toolresults.step(1, "query_metrics", series())  # change: 15:05 212 ms -> 1,180 ms (x5.6)
    for n in range(3):
        trace = Trace(
            trace_id=str(n),
            question=f"question {n}",
            protocol="native",
            steps=(step,),
            answer="A" * 5_000,
            complete=True,
            stop_reason=StopReason.FINISH,
            totals=Totals(),
        )
        memory.remember("C1", "1.0", trace)
    turns = memory.recall("C1", "1.0")
    assert [t.split(" → ")[0] for t in turns] == ["Q: question 1", "Q: question 2"]
    assert all(len(t) <= 700 and "change: 15:05" in t for t in turns)
    memory.remember("C2", "1.0", trace)
    memory.remember("C3", "1.0", trace)
    assert memory.recall("C1", "1.0") == ()  # least recently used thread dropped
    assert memory.recall("C9", "9.9") == ()


def test_memory_turn_names_question_answer_and_change_points() -> None:
    trace = Trace(
        trace_id="t",
        question="why is order slow?",
        protocol="native",
        steps=(),
        answer="pool size",
        complete=True,
        stop_reason=StopReason.FINISH,
        totals=Totals(),
    )
    assert trace_to_memory(trace) == "Q: why is order slow? → A: pool size"


def test_a_job_travels_through_the_job_runner_whole() -> None:
    intent = Intent("diagnose", 1.0, "rules", "escalated", 0.7)
    question = Question(
        "why is order slow?",
        user="U1",
        channel="C1",
        thread_ts="1.0",
        source="slack",
        history=("Q: earlier",),
        intent=intent,
        escalated="needs the full diagnosis",
    )
    job = Job(question, "C1", "1.0", react_ts="1.1", user="U1", team="T1", read_thread=True)
    assert job_from_payload(json.loads(json.dumps(job_to_payload(job)))) == job


def test_memory_keeps_what_the_metrics_showed_change_points_first_and_no_empty_reading() -> None:
    spike = Spike(at("15:28"), 94.0, at("15:30"), 2_357.0, at("16:10"), 93.0)
    steps = (
        toolresults.step(1, "query_metrics", series("catalog", changes=[], spikes=[spike])),
        toolresults.step(2, "query_metrics", series("payment", changes=[])),  # steady: "change: none detected"
        toolresults.step(3, "query_metrics", series()),
        Step(4, "", "mcp_metrics", {}, "change: 15:09 1 ms -> 9 ms (x9.0)", "ok"),  # a text-only tool: not read
    )
    trace = Trace("t", "why?", "native", steps, "pool size", True, StopReason.FINISH, Totals())
    assert trace_to_memory(trace) == (
        "Q: why? → A: pool size | observed: change: 15:05 212 ms -> 1,180 ms (x5.6); "
        "spike: 15:28 94.0 ms -> peak 2,357 ms at 15:30 (x25.1), back to ~93.0 ms by 16:10"
    )
