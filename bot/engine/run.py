"""The record of one run while it happens: steps and exchanges so far, tokens, the clock, observers, the Trace.

Every step is logged as one structured line and handed to the observers (live Slack progress) as it completes.
An observer that raises is logged and skipped: a broken progress message must never kill a diagnosis.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from datetime import UTC, datetime

from bot.engine.context import Exchange
from bot.engine.types import Budget, Protocol, Question, Step, StepObserver, StopReason, Totals, Trace, new_trace_id

log = logging.getLogger(__name__)

_TOOL_RAN = ("ok", "error", "no_data")


class Run:
    """Mutable only while the run lasts; `trace()` freezes it."""

    def __init__(self, question: Question, protocol: Protocol, model: str, on_step: StepObserver | None) -> None:
        self.question = question
        self.protocol: Protocol = protocol
        self.model = model
        self.trace_id = new_trace_id()
        self.started_at = datetime.now(UTC).isoformat(timespec="seconds")
        self.steps: list[Step] = []
        self.exchanges: list[Exchange] = []
        self.notes: list[str] = []
        self.answer = ""
        self.llm_calls = 0  # every request to the model, the failed ones too (the log names the call)
        self.extra_prompt_tokens = 0  # calls that are not steps: the forced conclusion
        self.extra_completion_tokens = 0
        self._on_step = on_step
        self._t0 = time.monotonic()

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self._t0

    def time_left_s(self, budget: Budget, *, at_least_s: float = 1.0) -> float:
        """What is left of the run's time budget: the most one LLM call may take (all its attempts)."""
        return max(at_least_s, budget.time_budget_s - self.elapsed_s)

    @property
    def tokens_used(self) -> int:
        steps = sum(s.prompt_tokens + s.completion_tokens for s in self.steps)
        return steps + self.extra_prompt_tokens + self.extra_completion_tokens

    @property
    def next_index(self) -> int:
        return len(self.steps) + 1

    def add(self, steps: Sequence[Step], exchange: Exchange | None = None) -> None:
        """Record completed steps (and the exchange that replays them), log each, tell the observers."""
        if exchange is not None:
            self.exchanges.append(exchange)
        for step in steps:
            self.steps.append(step)
            log.info(
                "step trace_id=%s step=%d tool=%s status=%s ms=%d tokens=%d",
                self.trace_id,
                step.index,
                step.action or "-",
                step.status,
                step.elapsed_ms,
                step.prompt_tokens + step.completion_tokens,
            )
            self._notify(step)

    def _notify(self, step: Step) -> None:
        if self._on_step is None:
            return
        try:
            self._on_step(step)
        except Exception:
            log.exception("step observer failed (trace_id=%s step=%d); the run goes on", self.trace_id, step.index)

    def trace(self, answer: str, stop_reason: StopReason, *, complete: bool) -> Trace:
        """The finished, frozen Trace."""
        totals = Totals(
            steps=len(self.steps),
            prompt_tokens=sum(s.prompt_tokens for s in self.steps) + self.extra_prompt_tokens,
            completion_tokens=sum(s.completion_tokens for s in self.steps) + self.extra_completion_tokens,
            elapsed_ms=int(self.elapsed_s * 1000),
            tool_calls=sum(1 for s in self.steps if s.status in _TOOL_RAN and s.action != "finish"),
            tool_errors=sum(1 for s in self.steps if s.status == "error"),
            format_errors=sum(1 for s in self.steps if s.status == "format_error"),
        )
        log.info(
            "run trace_id=%s protocol=%s stop=%s complete=%s steps=%d ms=%d tokens=%d",
            self.trace_id,
            self.protocol,
            stop_reason.value,
            complete,
            totals.steps,
            totals.elapsed_ms,
            totals.tokens,
        )
        return Trace(
            trace_id=self.trace_id,
            question=self.question.text,
            protocol=self.protocol,
            steps=tuple(self.steps),
            answer=answer,
            complete=complete,
            stop_reason=stop_reason,
            totals=totals,
            started_at=self.started_at,
            model=self.model,
            notes=tuple(self.notes),
        )
