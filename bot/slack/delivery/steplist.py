"""The trace in a final message that is not a stream: a compact list of the steps and what each found. Pure.

A streamed answer keeps its task cards above the answer. An answer that goes as one message (streaming off, a
stream that failed or could not be opened, a queued job's notice edited into its answer, a takeover) would show only
the cause and the evidence; this block puts the steps back, between the answer and its footer, within Slack's
limits (one section, at most MAX_SECTION_CHARS).
"""

from __future__ import annotations

from typing import Any

from bot.engine.types import Step, Trace
from bot.slack.delivery.findings import deploy_time, finding_from_step
from bot.slack.delivery.render import MAX_SECTION_CHARS, mrkdwn_escape, section, step_title, trim

STEPS_LISTED = 12
LINE_CHARS = 200
_MARK = {"ok": "✅", "no_data": "∅", "error": "❌", "format_error": "⚠️", "refused": "⛔"}


def steps_block(trace: Trace) -> dict[str, Any] | None:
    """One section listing the trace's steps with their findings; None when the trace took no step."""
    steps = [s for s in trace.steps if s.action != "finish"]
    if not steps:
        return None
    deploy_at = deploy_time(trace.steps)
    lines = [_line(s, deploy_at) for s in steps[:STEPS_LISTED]]
    if len(steps) > STEPS_LISTED:
        lines.append(f"… and {len(steps) - STEPS_LISTED} more: Show full trace")
    header = f"*Steps* ({len(steps)})"
    return section(trim("\n".join([header, *lines]), MAX_SECTION_CHARS - 10, "…"))


def with_steps(blocks: list[dict[str, Any]], tail: int, trace: Trace) -> list[dict[str, Any]]:
    """`blocks` with the step list inserted before its last `tail` blocks (the footer and the buttons)."""
    block = steps_block(trace)
    if block is None:
        return blocks
    cut = len(blocks) - tail
    return [*blocks[:cut], block, *blocks[cut:]]


def _line(step: Step, deploy_at: str) -> str:
    found = finding_from_step(step, deploy_at).text
    title = step_title(step)
    return f"{_MARK.get(step.status, '•')} `{step.index}` {mrkdwn_escape(trim(f'{title}: {found}', LINE_CHARS, '…'))}"
