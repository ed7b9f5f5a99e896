"""The loop's gates as pure checks: steps, wall clock, tokens, repeated actions, format-error streaks.

Argument size is the fifth gate, enforced where every call passes anyway: tools.base.call_tool refuses
oversized arguments with an observation the model can act on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from bot.engine.types import Budget, Step, StopReason

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*(ms|s|sec|secs|m|min|mins|h|hr|hrs|d|w)$", re.IGNORECASE)
_UNIT_S = {
    "ms": 0.001,
    "s": 1,
    "sec": 1,
    "secs": 1,
    "m": 60,
    "min": 60,
    "mins": 60,
    "h": 3600,
    "hr": 3600,
    "hrs": 3600,
    "d": 86_400,
    "w": 604_800,
}
# Single identifiers ("ERROR", "p99_latency", "order") are enum-like: their case carries no meaning.
# Free text such as a log query keeps its case, since it can matter to the backend.
_ENUM_LIKE = re.compile(r"^[A-Za-z_][\w.\-]*$")
_SUCCESS = ("ok", "no_data")
# Arithmetic on numbers already observed is no investigation: a `calculate` call does not use up a step, so the
# model computes a ratio instead of guessing it. It still costs time and tokens, and repeats are still refused;
# past this many per run it counts like any call, so a model cannot loop on it for free.
FREE_ACTIONS = frozenset({"calculate"})
FREE_CALLS_PER_RUN = 3

STOP_TEXT = {
    StopReason.FINISH: "the model concluded",
    StopReason.MAX_STEPS: "the step budget was used up",
    StopReason.TIME_BUDGET: "the time budget ran out",
    StopReason.TOKEN_BUDGET: "the token budget ran out",
    StopReason.REPEATED_ACTION: "the model repeated an earlier action",
    StopReason.FORMAT_ERRORS: "the model's replies could not be read",
    StopReason.LLM_UNAVAILABLE: "the LLM was unavailable",
}


def gate_before_call(steps: Sequence[Step], budget: Budget, *, elapsed_s: float, tokens_used: int) -> StopReason | None:
    """The gate that forbids another model call, if any: steps, then time, then tokens."""
    if counted_steps(steps) >= budget.max_steps:
        return StopReason.MAX_STEPS
    if elapsed_s >= budget.time_budget_s:
        return StopReason.TIME_BUDGET
    # The next prompt holds everything the last one did, so it costs at least as much: stop before, not after.
    next_prompt = steps[-1].prompt_tokens if steps else 0
    if tokens_used + next_prompt >= budget.token_budget:
        return StopReason.TOKEN_BUDGET
    return None


def counted_steps(steps: Sequence[Step]) -> int:
    """The steps that count against max_steps: all, less the first FREE_CALLS_PER_RUN calls of a free action."""
    free = sum(1 for step in steps if step.action in FREE_ACTIONS)
    return len(steps) - min(free, FREE_CALLS_PER_RUN)


def gate_after_step(steps: Sequence[Step], budget: Budget) -> StopReason | None:
    """FORMAT_ERRORS once the last `max_format_errors` steps were all unreadable."""
    streak = 0
    for step in reversed(steps):
        if step.status != "format_error":
            break
        streak += 1
    return StopReason.FORMAT_ERRORS if streak >= budget.max_format_errors else None


def repeated_step(
    name: str, args: Mapping[str, Any], steps: Sequence[Step], defaults: Mapping[str, Any] | None = None
) -> Step | None:
    """The earlier step this call repeats, if running it again would tell the model nothing new.

    A repeat of a call that succeeded is always pointless. A call that failed (say, a timeout) may be retried
    once; the third identical call is a loop.
    """
    signature = action_signature(name, args, defaults)
    same = [s for s in steps if s.action == name and action_signature(s.action, s.args, defaults) == signature]
    succeeded = next((s for s in same if s.status in _SUCCESS), None)
    if succeeded is not None:
        return succeeded
    return same[-1] if len(same) >= 2 else None


def action_signature(name: str, args: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> str:
    """A canonical form of a tool call: key order, whitespace, enum case and duration units do not matter."""
    merged = {**(defaults or {}), **args}
    normalised = {key: normalise_value(value) for key, value in merged.items()}
    return f"{name}:{json.dumps(normalised, sort_keys=True, default=str)}"


def normalise_value(value: Any) -> Any:
    """`1h` -> `3600s`, `" ERROR "` -> `error`, `5.0` -> `5`, recursively through lists and dicts."""
    if isinstance(value, str):
        return _normalise_text(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(k): normalise_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [normalise_value(v) for v in value]
    return value


def _normalise_text(text: str) -> str:
    text = " ".join(text.split())
    duration = _DURATION.match(text)
    if duration:
        seconds = float(duration.group(1)) * _UNIT_S[duration.group(2).lower()]
        return f"{seconds:g}s"
    return text.lower() if _ENUM_LIKE.match(text) else text
