"""From a stored trace to a regression case: replay its recorded observations against the configured model.

The model under test gets the trace's question and the same tools (names, schemas, descriptions), but every
tool answers with what the backend said when the trace was recorded: the same call gets the same observation,
another call to a recorded tool gets that tool's next unused observation, and a tool the trace never called
says so. A 👎 in Slack thus becomes a case a prompt change can be measured on, with no backend running.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bot.engine.types import Step, Trace
from tools.base import Toolbox, ToolResult, ToolSpec


def _key(name: str, args: Mapping[str, Any]) -> str:
    return name + json.dumps(dict(args), sort_keys=True, default=str)


def _recorded_steps(trace: Trace) -> list[Step]:
    return [s for s in trace.steps if s.action not in ("", "finish")]


def recorded_toolbox(trace: Trace, specs: Sequence[ToolSpec]) -> Toolbox:
    """The tools of `specs`, each answering from the trace's recorded observations instead of its backend."""
    steps = _recorded_steps(trace)
    exact = {_key(s.action, s.args): s for s in steps}
    used: set[int] = set()

    def answer(name: str) -> Callable[..., ToolResult]:
        def func(**args: Any) -> ToolResult:
            step = exact.get(_key(name, args))
            if step is None:
                step = next((s for s in steps if s.action == name and s.index not in used), None)
            if step is None:
                return ToolResult(
                    "no_data",
                    f"{name}: this call was not recorded in trace {trace.trace_id}, so "
                    "there is nothing to replay for it.",
                )
            used.add(step.index)
            status = step.status if step.status in ("ok", "no_data") else "error"
            return ToolResult(status, step.observation, step.data)

        return func

    return Toolbox([dataclasses.replace(spec, func=answer(spec.name)) for spec in specs])


def replay_summary(recorded: Trace, replayed: Trace) -> dict[str, Any]:
    """What changed between the recorded answer and the replayed one, as JSON-ready data."""
    return {
        "trace_id": recorded.trace_id,
        "question": recorded.question,
        "recorded": {
            "answer": recorded.answer,
            "complete": recorded.complete,
            "tools": [s.action for s in _recorded_steps(recorded)],
        },
        "replayed": {
            "trace_id": replayed.trace_id,
            "answer": replayed.answer,
            "complete": replayed.complete,
            "protocol": replayed.protocol,
            "tools": [s.action for s in _recorded_steps(replayed)],
        },
    }
