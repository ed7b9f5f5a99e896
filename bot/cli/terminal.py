"""Plain-text rendering of steps, traces and the answering mode for the terminal (`opsbot demo`, `opsbot eval`).

No colour codes or markup: the output is read in terminals, CI logs and pasted into tickets.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from bot.engine.types import Step, Trace
from bot.safety.outbound import plain_text

if TYPE_CHECKING:  # pydantic-settings loads when a command reads settings, not for --help
    from bot.config import Settings

OBSERVATION_LINES = 8


def step_to_text(step: Step, *, observation_lines: int = OBSERVATION_LINES) -> str:
    """`[3] query_deploy_records(service="order", ...)  ok · 12 ms`, the Thought, the observation's head."""
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in step.args.items())
    tokens = f" · {step.prompt_tokens}+{step.completion_tokens} tokens" if step.prompt_tokens else ""
    call = f"{step.action}({args})" if step.action else "(unreadable reply)"
    lines = [f"[{step.index}] {call}  {step.status} · {step.elapsed_ms} ms{tokens}"]
    if step.thought:
        lines.append(f"    Thought: {step.thought.strip()}")
    observed = step.observation.strip().splitlines()
    lines.extend(f"    | {line}" for line in observed[:observation_lines])
    if len(observed) > observation_lines:
        lines.append(f"    | ... ({len(observed) - observation_lines} more lines)")
    return "\n".join(lines)


def step_printer(out: TextIO) -> Callable[[Step], None]:
    """An on_step observer that prints each step as soon as it is taken."""

    def show(step: Step) -> None:
        # the terminal is a boundary text leaves by: secrets redacted, no control character (an ESC rewrites it)
        out.write(plain_text(step_to_text(step)) + "\n\n")
        out.flush()

    return show


def trace_summary(trace: Trace) -> str:
    """The answer with its status line: complete or partial, why it stopped, steps, tokens, time."""
    t = trace.totals
    status = "complete" if trace.complete else "PARTIAL"
    who = trace.model or ("no model: deterministic playbook" if trace.protocol == "playbook" else trace.protocol)
    head = (
        f"== {status} · stop: {trace.stop_reason.value} · {t.steps} steps · {t.tokens} tokens · "
        f"{t.elapsed_ms / 1000:.1f} s · {who} · trace {trace.trace_id}"
    )
    # A note the answer already states (the playbook's "no model" line, an "unverified:" line) is printed once.
    notes = [f"note: {n}" for n in trace.notes if n not in trace.answer]
    return "\n".join([head, "", trace.answer.strip(), *(["", *notes] if notes else [])])


def mode_line(settings: Settings) -> str:
    """Who answers: the configured LLM and where it runs, or the deterministic playbook and how to change that."""
    if settings.llm.configured:
        return f"LLM: {settings.llm.model} at {settings.llm.base_url or 'api.openai.com'}"
    return (
        "No LLM configured (set OPENAI_API_KEY or OPSBOT_LLM__BASE_URL to use one): the deterministic "
        "playbook diagnoses, without a model."
    )
