"""Trace -> Slack Block Kit payloads. Pure, and always within Slack's limits.

Slack's message limits: 50 blocks per message (100 in a modal), 3,000 chars per section text,
12,000 chars across all markdown blocks of a message, top-level text kept under 4,000 (Slack truncates at 40k),
button value 2,000, stream task details/output 256. Oversize content is trimmed with a marker that says where
the full trace is; nothing here ever produces invalid_blocks or msg_too_long.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.engine.types import Step, Trace
from bot.safety.outbound import slack_mrkdwn
from bot.slack.delivery.findings import deploy_time, finding_from_step

MAX_BLOCKS = 50
MAX_MODAL_BLOCKS = 100
MAX_SECTION_CHARS = 3_000
MAX_MARKDOWN_CHARS = 12_000
MAX_TEXT_CHARS = 4_000
MAX_TASK_CHARS = 256
# Slack reported msg_blocks_too_long at ~13.2k of blocks, so stay well below the documented 12k.
ANSWER_CHARS = 9_000
MODAL_TOTAL_CHARS = 60_000

ACTION_VOTE_UP = "opsbot_vote_up"
ACTION_VOTE_DOWN = "opsbot_vote_down"
ACTION_RERUN = "opsbot_rerun"
ACTION_SHOW_TRACE = "opsbot_show_trace"
ACTION_INVESTIGATE_ANSWER = "opsbot_investigate_answer"  # "🔎 Investigate" under a quick answer
ACTION_TRACE_PAGE = "opsbot_trace_page"  # + "_0" / "_1": Previous / Next in the trace modal

_TITLES = {
    "query_metrics": "Metrics",
    "query_deploy_records": "Deploys",
    "query_deploy_diff": "Diff",
    "query_logs": "Logs",
    "list_services": "Services",
}
_STATUS_EMOJI = {"ok": "✅", "error": "❌", "no_data": "∅", "format_error": "⚠️", "refused": "⛔"}


def trim(text: str, limit: int, marker: str = "… (trimmed)") -> str:
    """Cut text to at most `limit` chars, ending with the marker when cut."""
    return text if len(text) <= limit else text[: max(limit - len(marker), 0)] + marker


def mrkdwn_escape(text: str) -> str:
    """Untrusted text for mrkdwn fields, through the outbound boundary (bot.safety.outbound.slack_mrkdwn)."""
    return slack_mrkdwn(text)


def full_trace_hint(trace_id: str) -> str:
    """Where the untrimmed trace lives."""
    return f"full trace: `opsbot traces show {trace_id}` or the Show full trace button"


def step_title(step: Step) -> str:
    """A short, plain-language title for a step (task card title, progress line): what was looked at."""
    if not step.action:
        return "The model's reply could not be read"
    if step.action == "finish":
        return "Concluding"
    args = {k: str(v) for k, v in step.args.items() if v not in ("", None)}
    kind = _TITLES.get(step.action)
    if kind is not None:
        subject = " ".join(args[k] for k in ("service", "metric", "version", "level") if k in args)
        return trim(f"{kind}: {subject.replace('_', ' ')}".strip(" :"), 120, "…")
    short = " ".join(f"{k}={v}" for k, v in args.items() if len(v) <= 30)  # no time ranges in a title
    return trim(f"{step.action} {short}".strip(), 120, "…")


def step_to_task_chunk(step: Step, deploy_at: str = "") -> dict[str, Any]:
    """A chat-stream task_update chunk for a finished step: its title and what it FOUND (<= 256 chars each)."""
    status = "complete" if step.status in ("ok", "no_data") else "error"
    found = finding_from_step(step, deploy_at).text if step.action != "finish" else "done"
    return {
        "type": "task_update",
        "id": f"step-{step.index}",
        "title": slack_mrkdwn(step_title(step), MAX_TASK_CHARS),
        "status": status,
        "output": slack_mrkdwn(found or step.status, MAX_TASK_CHARS),
    }


def progress_blocks(question: str, steps: Sequence[Step], *, elapsed_s: float) -> list[dict[str, Any]]:
    """The one progress message edited in place when streaming is unavailable: each step with its finding."""
    deploy_at = deploy_time(steps)
    lines = [
        f"{_STATUS_EMOJI.get(s.status, '•')} {mrkdwn_escape(step_title(s))}: "
        f"{mrkdwn_escape(trim(finding_from_step(s, deploy_at).text, 160, '…'))}"
        for s in steps[-12:]
        if s.action != "finish"
    ]
    body = "\n".join(lines) or "_starting…_"
    return [
        section(f"🔎 *Diagnosing:* {mrkdwn_escape(trim(question, 300))}"),
        section(body),
        context(f"step {len(steps)} · {elapsed_s:.0f} s elapsed"),
    ]


def trace_to_modal(trace: Trace, page: int = 0) -> dict[str, Any]:
    """The "Show full trace" modal, one page of steps at a time (each page within the modal's limits)."""
    pages = modal_pages(trace.steps)
    page = min(max(page, 0), len(pages) - 1)
    blocks = [section(f"*Question*\n{mrkdwn_escape(trim(trace.question, 2_500))}"), context(meta_line(trace))]
    if page == 0:
        blocks.append(section(f"*Answer*\n{mrkdwn_escape(trim(trace.answer, 2_800))}"))
    for step in pages[page]:
        blocks += [{"type": "divider"}, section(trim(_step_detail(step), MAX_SECTION_CHARS - 10))]
    blocks.append(context(f"page {page + 1} of {len(pages)} · {mrkdwn_escape(full_trace_hint(trace.trace_id))}"))
    if len(pages) > 1:
        blocks.append(_page_controls(trace.trace_id, page, len(pages)))
    return {
        "type": "modal",
        "title": {"type": "plain_text", "text": "opsbot trace"},
        "close": {"type": "plain_text", "text": "Close"},
        "blocks": blocks[:MAX_MODAL_BLOCKS],
    }


def modal_pages(steps: Sequence[Step]) -> list[list[Step]]:
    """Steps split into modal pages of at most ~45 steps and MODAL_TOTAL_CHARS of text (always >= 1 page)."""
    pages: list[list[Step]] = [[]]
    used = 0
    for step in steps:
        size = min(len(_step_detail(step)), MAX_SECTION_CHARS)
        if pages[-1] and (len(pages[-1]) >= (MAX_MODAL_BLOCKS - 10) // 2 or used + size > MODAL_TOTAL_CHARS):
            pages.append([])
            used = 0
        pages[-1].append(step)
        used += size
    return pages


def page_from_value(value: str) -> tuple[str, int]:
    """(trace_id, page) from a page button's value."""
    trace_id, _, page = value.rpartition("|")
    return trace_id, int(page) if page.isdigit() else 0


def limit_violations(blocks: Sequence[dict[str, Any]], *, max_blocks: int = MAX_BLOCKS) -> list[str]:
    """Every way a block list breaks Slack's limits (empty when valid). Used by tests and as a guard."""
    problems = [f"{len(blocks)} blocks > {max_blocks}"] if len(blocks) > max_blocks else []
    markdown_total = sum(len(b.get("text", "")) for b in blocks if b.get("type") == "markdown")
    if markdown_total > MAX_MARKDOWN_CHARS:
        problems.append(f"markdown blocks total {markdown_total} > {MAX_MARKDOWN_CHARS}")
    for i, block in enumerate(blocks):
        text = block.get("text")
        if block.get("type") == "section" and isinstance(text, dict) and len(text["text"]) > MAX_SECTION_CHARS:
            problems.append(f"block {i}: section text {len(text['text'])} > {MAX_SECTION_CHARS}")
        if block.get("type") == "context" and len(block.get("elements", ())) > 10:
            problems.append(f"block {i}: context has more than 10 elements")
        for element in block.get("elements", ()) if block.get("type") == "actions" else ():
            if len(element.get("value", "")) > 2_000:
                problems.append(f"block {i}: button value over 2,000 chars")
    return problems


def section(text: str) -> dict[str, Any]:
    """A mrkdwn section, cut to Slack's 3,000-char limit."""
    return {"type": "section", "text": {"type": "mrkdwn", "text": trim(text, MAX_SECTION_CHARS) or " "}}


def context(*texts: str) -> dict[str, Any]:
    """A context block of up to 10 mrkdwn elements."""
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": trim(t, 2_000)} for t in texts[:10]]}


def meta_line(trace: Trace) -> str:
    t = trace.totals
    route = f"{trace.intent.route} ({trace.intent.tier})" if trace.intent else trace.protocol
    model = f" · {trace.model}" if trace.model else ""
    seconds = t.elapsed_ms / 1000
    return f"{route} · {t.steps} steps · {t.tokens:,} tokens · {seconds:.1f} s{model} · trace `{trace.trace_id}`"


def _hint(trace: Trace) -> str:
    return f"`opsbot traces show {trace.trace_id}`"


def _step_detail(step: Step, max_chars: int = MAX_SECTION_CHARS - 50) -> str:
    args = trim(", ".join(f"{k}={v!r}" for k, v in step.args.items()), 300)
    thought = trim(step.thought, max_chars // 4)
    observation = trim(step.observation, max(max_chars - len(thought) - len(args) - 150, 100))
    return (
        f"*Step {step.index}* ({step.status}, {step.elapsed_ms} ms)\n"
        f"*Thought:* {mrkdwn_escape(thought)}\n*Action:* `{step.action}({mrkdwn_escape(args)})`\n"
        f"*Observation:*\n```{mrkdwn_escape(observation)}```"
    )


def _page_controls(trace_id: str, page: int, count: int) -> dict[str, Any]:
    buttons = [("◀ Previous", page - 1), ("Next ▶", page + 1)]
    return {
        "type": "actions",
        "block_id": "opsbot_trace_pages",
        "elements": [
            {
                "type": "button",
                "text": {"type": "plain_text", "text": text},
                "action_id": f"{ACTION_TRACE_PAGE}_{n}",
                "value": f"{trace_id[:200]}|{target}",
            }
            for n, (text, target) in enumerate(buttons)
            if 0 <= target < count
        ],
    }


def controls(trace_id: str, *, investigate: bool = False) -> dict[str, Any]:
    """The final answer's buttons; `investigate` adds "🔎 Investigate" (a quick answer that may have missed one)."""
    offer = [_button("🔎 Investigate", ACTION_INVESTIGATE_ANSWER, trace_id, "primary")] if investigate else []
    elements = [  # one primary button: the offer to investigate when there is one, else Re-run
        *offer,
        _button("👍", ACTION_VOTE_UP, trace_id),
        _button("👎", ACTION_VOTE_DOWN, trace_id),
        _button("Re-run", ACTION_RERUN, trace_id, "" if investigate else "primary"),
        _button("Show full trace", ACTION_SHOW_TRACE, trace_id),
    ]
    return {"type": "actions", "block_id": "opsbot_controls", "elements": elements}


def investigate_controls(trace_id: str) -> dict[str, Any]:
    """The one button under a plain answer (chit-chat, help, a refusal) to a message that may want a diagnosis."""
    button = _button("🔎 Investigate", ACTION_INVESTIGATE_ANSWER, trace_id)
    return {"type": "actions", "block_id": "opsbot_controls", "elements": [button]}


def _button(text: str, action_id: str, trace_id: str, style: str = "") -> dict[str, Any]:
    element = {"type": "button", "text": {"type": "plain_text", "text": text}, "action_id": action_id}
    return element | {"value": trace_id[:2_000]} | ({"style": style} if style else {})
