"""A known set of traces with hand-computed stats: both stores must answer exactly these numbers."""

from __future__ import annotations

from bot.engine.types import Intent, Step, StopReason, Totals, Trace

DIAGNOSE = Intent("diagnose", 0.9, "rules", "why question")
LOOKUP = Intent("lookup", 0.8, "rules", "what is")


def step(index: int, action: str, status: str = "ok", observation: str = "", tokens: tuple[int, int] = (0, 0)) -> Step:
    return Step(
        index,
        f"thinking {index}",
        action,
        {},
        observation or f"{action} said something",
        status,  # type: ignore[arg-type]
        100,
        tokens[0],
        tokens[1],
    )


def make_trace(
    trace_id: str,
    started_at: str,
    steps: list[Step],
    *,
    stop: StopReason = StopReason.FINISH,
    elapsed_ms: int = 1_000,
    tokens: tuple[int, int] = (0, 0),
    intent: Intent | None = DIAGNOSE,
    question: str = "why is order slow?",
    answer: str = "pool exhausted",
    protocol: str = "native",
) -> Trace:
    totals = Totals(steps=len(steps), prompt_tokens=tokens[0], completion_tokens=tokens[1], elapsed_ms=elapsed_ms)
    return Trace(
        trace_id,
        question,
        protocol,  # type: ignore[arg-type]
        tuple(steps),
        answer,
        stop is StopReason.FINISH,
        stop,
        totals,
        started_at=started_at,
        model="scripted-model",
        intent=intent,
    )


def known_traces() -> list[Trace]:
    """Five runs over two UTC days (see the expected numbers below)."""
    t2_steps = [step(i, "query_metrics") for i in range(1, 6)]
    t2_steps += [step(6, "query_logs", "error"), step(7, "query_deploy_records"), step(8, "", "format_error")]
    return [
        make_trace(
            "t1",
            "2026-11-27T15:05:00Z",
            [
                step(1, "query_metrics", observation="p99 rose 212 ms -> 1,180 ms"),
                step(2, "query_logs", "error", observation="HikariPool-1 connection timeout"),
                step(3, "finish", observation=""),
            ],
            elapsed_ms=10_000,
            tokens=(1_000, 200),
        ),
        make_trace(
            "t2",
            "2026-11-28T09:00:00+00:00",
            t2_steps,
            stop=StopReason.MAX_STEPS,
            elapsed_ms=90_000,
            tokens=(5_000, 800),
            question="why are checkout 5xx up?",
            answer="partial: no conclusion",
        ),
        make_trace(
            "t3",
            "2026-11-28T10:00:00Z",
            [
                step(1, "query_deploy_records"),
                step(2, "query_deploy_diff", observation="maximumPoolSize 50 -> 200"),
                step(3, "finish", observation=""),
            ],
            elapsed_ms=2_000,
            protocol="playbook",
        ),
        make_trace(
            "t4",
            "2026-11-28T11:00:00Z",
            [step(1, "finish", observation="")],
            elapsed_ms=1_500,
            tokens=(300, 50),
            intent=LOOKUP,
            question="what is the p99 of order?",
            protocol="single",
        ),
        make_trace(
            "t5",
            "2026-11-28T12:00:00Z",
            [step(1, "query_metrics")],
            stop=StopReason.LLM_UNAVAILABLE,
            elapsed_ms=30_000,
            answer="LLM unavailable; partial",
        ),
    ]


VOTES = [("t1", "alice", 1), ("t1", "bob", 1), ("t1", "bob", -1), ("t2", "carol", -1)]  # bob changes his mind

EXPECTED_TOOLS = [
    ("query_metrics", 7, 0),
    ("query_deploy_records", 2, 0),
    ("query_logs", 2, 2),
    ("query_deploy_diff", 1, 0),
]
EXPECTED_STOP = {"finish": 3, "max_steps": 1, "llm_unavailable": 1}
EXPECTED_DAYS = [("2026-11-27", 1, 1_200), ("2026-11-28", 4, 6_150)]
EXPECTED_P50_MS, EXPECTED_P95_MS = 10_000, 90_000  # nearest rank over 1.5, 2, 10, 30, 90 s
