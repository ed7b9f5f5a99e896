"""Running the calls of one step through tools.base.call_tool: one tool per step unless parallel tools are on,
repeats refused before they run (the repeated-action gate), and every call accounted for as an Outcome.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from bot.engine.guards import repeated_step
from bot.engine.protocol import Outcome
from bot.engine.types import Budget, Step, ToolCall
from tools.base import Toolbox, ToolResult, call_tool

NOT_RUN_ONE_PER_STEP = "not run: one tool per step. Call it in your next step if you still need it."


@dataclass(frozen=True)
class Executed:
    """The outcome of every requested call, which of them are steps, how long each took, whether all repeated."""

    outcomes: tuple[Outcome, ...]
    step_ids: frozenset[str]  # call ids traced as steps: the calls that ran and the refused repeats
    elapsed_ms: Mapping[str, int]  # call_id -> ms, for calls that ran
    only_repeats: bool

    @property
    def stepped(self) -> tuple[Outcome, ...]:
        return tuple(o for o in self.outcomes if o.call.call_id in self.step_ids)


def execute_calls(
    calls: Sequence[ToolCall], history: Sequence[Step], tools: Toolbox, budget: Budget, timeout_s: float | None
) -> Executed:
    """Run the calls the budget allows (the first, or all with parallel tools), refusing repeats."""
    chosen = calls if budget.parallel_tools else calls[:1]
    outcomes: dict[str, Outcome] = {}
    runnable: list[ToolCall] = []
    for call in chosen:
        earlier = repeated_step(call.name, call.args, history, tool_defaults(tools, call.name))
        if earlier is None:
            runnable.append(call)
        else:
            text = f"not run: it repeats step {earlier.index} (same tool and arguments); its result is above."
            outcomes[call.call_id] = Outcome(call, ToolResult("refused", text), ran=False)
    elapsed = _run_all(runnable, tools, budget, timeout_s, outcomes)
    step_ids = frozenset(outcomes)
    for call in calls:
        outcomes.setdefault(call.call_id, Outcome(call, ToolResult("refused", NOT_RUN_ONE_PER_STEP), ran=False))
    ordered = tuple(outcomes[c.call_id] for c in calls)
    return Executed(ordered, step_ids, elapsed, only_repeats=bool(chosen) and not runnable)


def tool_defaults(tools: Toolbox, name: str) -> dict[str, Any]:
    """A tool's default argument values, so `f(x)` and `f(x, range="1h")` count as the same call."""
    spec = tools.get(name)
    if spec is None:
        return {}
    fields = spec.args_model.model_fields
    return {key: f.get_default(call_default_factory=True) for key, f in fields.items() if not f.is_required()}


def _run_all(
    calls: Sequence[ToolCall], tools: Toolbox, budget: Budget, timeout_s: float | None, into: dict[str, Outcome]
) -> dict[str, int]:
    if len(calls) <= 1:
        results = [_timed_call(call, tools, budget, timeout_s) for call in calls]
    else:  # parallel tools: the backends are independent reads, so their latencies overlap
        with ThreadPoolExecutor(max_workers=len(calls), thread_name_prefix="step") as pool:
            results = list(pool.map(lambda c: _timed_call(c, tools, budget, timeout_s), calls))
    elapsed = {}
    for call, (result, ms) in zip(calls, results, strict=True):
        into[call.call_id] = Outcome(call, result, ran=True)
        elapsed[call.call_id] = ms
    return elapsed


def _timed_call(call: ToolCall, tools: Toolbox, budget: Budget, timeout_s: float | None) -> tuple[ToolResult, int]:
    started = time.monotonic()
    result = call_tool(tools, call.name, call.args, max_args_chars=budget.max_args_chars, timeout_s=timeout_s)
    return result, int((time.monotonic() - started) * 1000)
